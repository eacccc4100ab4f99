"""CLI start-up: wall time of `brain --help`, `remember`, full-text and hybrid `recall`, each a
fresh process (a cold shell) on a vault using the real model (its ONNX export cached); and a
cold `brain serve`: time to answer `initialize`, then `tools/list`, then a first `recall`.

Run from the project root: `python -m bench.startup [--runs N] [--serve-only] [--code DIR]`
(`--code`: run the brain found in DIR instead, e.g. an export of another commit, to compare).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# In process, as before the daemon (whose own figures are in bench/daemon.py): no command here
# may start one.
ENV = {**os.environ, "BRAIN_DAEMON": "off"}


SERVE_NOTES = 300
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
RECALL = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "recall", "arguments": {"query": "the garden"}},
}


def serve_once(vault: str, env: dict[str, str], cwd: str) -> tuple[float, float, float]:
    """ms from starting `brain serve` to the replies to initialize, tools/list, a recall."""
    start = time.perf_counter()
    argv = [sys.executable, "-m", "brain", "serve", "--vault", vault]
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=cwd)
    assert proc.stdin is not None and proc.stdout is not None
    marks: list[float] = []
    for message, answered in (
        (INITIALIZE, True),
        (INITIALIZED, False),
        (TOOLS_LIST, True),
        (RECALL, True),
    ):
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()
        if answered:
            reply = json.loads(proc.stdout.readline())
            assert "result" in reply, reply
            marks.append((time.perf_counter() - start) * 1000)
    proc.stdin.close()
    proc.wait()
    return marks[0], marks[1], marks[2]


def bench_serve(runs: int, env: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        vault = str(Path(tmp) / "vault")
        subprocess.run(
            [sys.executable, "-m", "brain", "init", vault],
            check=True,
            capture_output=True,
            env=env,
            cwd=tmp,
        )
        seed = (
            "import sys\nfrom pathlib import Path\nfrom brain._brain import open_vault\n"
            "b = open_vault(Path(sys.argv[1]))\nwith b.bulk():\n"
            f"    for n in range({SERVE_NOTES}):\n"
            "        b.remember(f'Note {n}: the garden plan, the launch, the budget {n}.')\n"
            "b.recall('warm up')\nb.close()\n"
        )
        # From the temporary folder, so that `--code` is the brain imported, not this checkout.
        subprocess.run([sys.executable, "-c", seed, vault], check=True, env=env, cwd=tmp)
        print(
            f"\n`brain serve`, cold process, {SERVE_NOTES} notes "
            f"(load average {os.getloadavg()[0]:.1f})"
        )
        print(f"{'case':<40} {'initialize':>11} {'tools/list':>11} {'1st recall':>11}  (p50 ms)")
        stop = [sys.executable, "-m", "brain", "daemon", "stop", "--vault", vault]
        daemon_env = {**env, "BRAIN_DAEMON": "auto"}
        cases = {
            "daemon off, caches on disk": env,
            "daemon off, .brain/ removed (fresh clone)": env,
            "daemon not running (serve starts it)": daemon_env,
        }
        for case, case_env in cases.items():
            marks = []
            for _ in range(runs):
                if ".brain/ removed" in case:
                    shutil.rmtree(Path(vault) / ".brain", ignore_errors=True)
                marks.append(serve_once(vault, case_env, tmp))
                if case_env is daemon_env:
                    subprocess.run(stop, env=daemon_env, cwd=tmp, capture_output=True)
            p50 = [statistics.median(m[i] for m in marks) for i in range(3)]
            print(f"{case:<40} {p50[0]:11.0f} {p50[1]:11.0f} {p50[2]:11.0f}")


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=ENV)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--serve-only", action="store_true", help="only the `brain serve` rows")
    parser.add_argument("--code", help="run the brain package found in this folder instead")
    args = parser.parse_args()
    if args.code:
        ENV["PYTHONPATH"] = str(Path(args.code).absolute())
    print(f"load average {os.getloadavg()[0]:.1f}")
    if not args.serve_only:
        bench_cli(args.runs)
    bench_serve(args.runs, ENV)


def bench_cli(runs: int) -> None:
    brain = [sys.executable, "-m", "brain"]
    with tempfile.TemporaryDirectory() as tmp:
        vault = str(Path(tmp) / "vault")
        subprocess.run([*brain, "init", vault], check=True, capture_output=True, env=ENV)
        # The first hybrid recall embeds what was remembered; time the ones after it.
        subprocess.run(
            [*brain, "recall", "warm up", "--vault", vault],
            check=True,
            capture_output=True,
            env=ENV,
        )
        cases = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "brain --help": [*brain, "--help"],
            "brain remember": [*brain, "remember", "a memory about start-up", "--vault", vault],
            "brain recall --mode text": [
                *brain,
                "recall",
                "start-up",
                "--mode",
                "text",
                "--vault",
                vault,
            ],
            "brain recall (hybrid)": [*brain, "recall", "how fast does it start", "--vault", vault],
        }
        print(f"{'command':<24} {'p50 ms':>8} {'min ms':>8}")
        for name, argv in cases.items():
            times = [timed(argv) for _ in range(runs)]
            print(f"{name:<24} {statistics.median(times):8.0f} {min(times):8.0f}")


if __name__ == "__main__":
    main()

"""CLI start-up: wall time of `brain --help`, `remember`, full-text and hybrid `recall`, each a
fresh process (a cold shell) on a vault using the real model (its ONNX export cached).

Run from the project root: `python -m bench.startup [--runs N]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# In process, as before the daemon (whose own figures are in bench/daemon.py): no command here
# may start one.
ENV = {**os.environ, "BRAIN_DAEMON": "off"}


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=ENV)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
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
            times = [timed(argv) for _ in range(args.runs)]
            print(f"{name:<24} {statistics.median(times):8.0f} {min(times):8.0f}")


if __name__ == "__main__":
    main()

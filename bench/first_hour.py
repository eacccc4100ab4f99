"""The first hour, timed as a new user meets it: a fresh clone, an empty HOME, nothing cached.

    python -m bench.first_hour [--ref main] [--repo .] [--keep]

For the commit `--ref` of the repository `--repo`: clone it into a temporary folder, then with
HOME pointing at an empty folder (so pip's cache and brain's model cache start empty) and pip
with no settings file (no local wheel folder: only the registry, as on a user's machine) time
`scripts/setup` (the light install), measure `.venv`, and time `brain init`, the first
`brain remember`, the first `brain recall`, and a warm `brain recall`; then, in a second fresh
clone and HOME, `scripts/demo` whole, to its first answer. Also lists what
`pip install --dry-run --isolated --ignore-installed --report` resolves for the default install
and which heavy packages (torch, transformers, nvidia-*, triton, pyarrow) are among them.
A commit from before the light install (one whose scripts/setup installs torch) is timed the
same way: that is "today" in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("torch", "transformers", "sentence-transformers", "pyarrow", "triton", "nvidia-")


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    took = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return took


def _fresh(
    repo: Path, ref: str, work: Path, name: str, machine_pip: bool
) -> tuple[Path, dict[str, str]]:
    clone, home = work / name, work / f"{name}-home"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", ref], check=True)
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BRAIN_", "XDG_", "PIP_"))}
    env.update(HOME=str(home), BRAIN_VAULT=str(home / "brain"), PIP_NO_CACHE_DIR="1")
    if machine_pip:  # this machine's pip settings: its local wheel folder (CPU torch) included
        env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})
    else:  # a user's pip: no settings file, no local wheels, no cache; only the registry
        env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_CACHE_DIR="1")
        if "PIP_CERT" in os.environ:
            env["PIP_CERT"] = os.environ["PIP_CERT"]
    return clone, env


def _size_mb(folder: Path) -> float:
    total = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    return total / 1e6


def first_hour(repo: Path, ref: str, work: Path, machine_pip: bool) -> dict[str, object]:
    clone, env = _fresh(repo, ref, work, "steps", machine_pip)
    figures: dict[str, object] = {"ref": ref}
    figures["install_s"] = _run(["scripts/setup"], clone, env)
    figures["venv_mb"] = _size_mb(clone / ".venv")
    brain = str(clone / ".venv" / "bin" / "brain")
    figures["init_s"] = _run([brain, "init"], clone, env)
    figures["first_remember_s"] = _run(
        [brain, "remember", "We moved the launch to March"], clone, env
    )
    figures["first_recall_s"] = _run([brain, "recall", "when is the launch"], clone, env)
    figures["warm_recall_s"] = _run([brain, "recall", "when is the launch"], clone, env)
    subprocess.run([brain, "daemon", "stop"], cwd=clone, env=env, capture_output=True, check=False)
    clone, env = _fresh(repo, ref, work, "demo", machine_pip)
    figures["demo_s"] = _run(["scripts/demo"], clone, env)
    subprocess.run(
        [str(clone / ".venv" / "bin" / "brain"), "daemon", "stop"],
        cwd=clone,
        env=env,
        capture_output=True,
        check=False,
    )
    return figures


def resolved(repo: Path, work: Path) -> dict[str, object]:
    """What a user's `pip install .` resolves: names and versions, and the heavy ones."""
    report = work / "report.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--isolated",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(report),
            str(repo),
        ],
        check=True,
        capture_output=True,
    )
    installs = json.loads(report.read_text())["install"]
    names = sorted(item["metadata"]["name"].lower() for item in installs)
    heavy = [n for n in names if n.startswith(HEAVY)]
    return {"packages": len(names), "heavy": heavy, "names": names}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--ref", default="HEAD")
    parser.add_argument("--keep", action="store_true", help="keep the clones (their paths shown)")
    parser.add_argument("--skip-resolve", action="store_true")
    parser.add_argument(
        "--machine-pip",
        action="store_true",
        help="keep this machine's pip settings (its local CPU torch wheel): for an old --ref",
    )
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="brain-first-hour-"))
    try:
        with open("/proc/loadavg") as handle:
            load = handle.read().split()[:3]
        figures = first_hour(args.repo, args.ref, work, args.machine_pip)
        figures["load_before"] = load
        with open("/proc/loadavg") as handle:
            figures["load_after"] = handle.read().split()[:3]
        if not args.skip_resolve:
            figures["resolved"] = resolved(work / "steps", work)
        print(json.dumps(figures, indent=2))
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

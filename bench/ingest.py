"""Ingest rate with the default models, checkouts side by side: rounds alternate the code.

    python -m bench.ingest FILE [--code DIR ...] [--rounds 3] [--samples 2]

Each round ingests the first `--samples` conversations of a LoCoMo-format file (Maharana et
al., ACL 2024; CC BY-NC 4.0) once with each checkout, in a child process whose PYTHONPATH is
that checkout, so each runs its own `brain` with its own defaults (MiniLM, and SPLADE where the
code has it). As bench/locomo.py: a fresh vault per conversation, every turn one `remember`
inside one `bulk()` block, then `flush()`; nothing cached between runs but the exported models.
Prints each run's memories/s, its CPU seconds (every thread: on a shared machine the CPU a
memory costs is steadier than the wall clock) and the load average, then each round's ratio
of the later checkouts' rate to the first's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()


def child(file: Path, samples: int) -> dict[str, Any]:
    """Ingest in this process with whatever `brain` is on the path."""
    import brain
    from bench.locomo_data import load
    from brain import open_vault
    from brain._clock import FixedClock
    from brain._indexes.embedder import load_embedder
    from brain._settings import model_cache_dir
    from brain._vault.template import init_vault

    embedder = load_embedder("minilm", model_cache_dir(os.environ, Path.home()))
    embedder.embed(["load the model before the clock starts"])  # type: ignore[union-attr]
    wall = cpu = 0.0
    count = 0
    sparse = None
    for sample in load(file)[:samples]:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "vault"
            clock = FixedClock(sample.turns[0].created)
            init_vault(root, clock.now())
            vault = open_vault(root, clock=clock, embedder=embedder)
            try:
                vault.remember("warm the sparse encoder, if there is one")  # not timed
                vault._context.flush()
                started, used = time.perf_counter(), time.process_time()
                with vault.bulk():
                    for i, turn in enumerate(sample.turns):
                        clock.set(turn.created + timedelta(milliseconds=i))
                        vault.remember(turn.memory_text, tags=[turn.dia_id])
                vault._context.flush()
                wall += time.perf_counter() - started
                cpu += time.process_time() - used
                count += len(sample.turns)
                sparse = getattr(
                    vault._context.caches, "sparse_encoder", None
                )  # None before SPLADE
            finally:
                vault.close()
    return {
        "code": str(Path(brain.__file__).resolve().parents[1]),
        "memories": count,
        "per_s": round(count / wall, 1),
        "cpu_s": round(cpu, 2),
        "cpu_ms_per_memory": round(1000 * cpu / count, 2),
        "sparse": getattr(sparse, "name", "none"),
    }


def run(code: Path, file: Path, samples: int) -> dict[str, Any]:
    """One child process on `code`; its figures and the load average around it."""
    before = os.getloadavg()[0]
    # The checkout's own child where it has one: its modules' names may differ from ours.
    script = code / "bench" / "ingest.py"
    script = script if script.exists() else HERE
    done = subprocess.run(
        [sys.executable, str(script), str(file), "--child", "--samples", str(samples)],
        cwd=code,
        env={**os.environ, "PYTHONPATH": str(code)},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{code}: exit {done.returncode}\n{done.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    figures["load"] = [round(before, 1), round(os.getloadavg()[0], 1)]
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="a LoCoMo-format JSON file")
    parser.add_argument("--code", type=Path, action="append", help="a checkout (repeatable)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=2)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.file.resolve(), args.samples)))
        return 0
    codes = [c.resolve() for c in (args.code or [HERE.parents[1]])]
    rounds = []
    for number in range(1, args.rounds + 1):
        # Alternate which checkout goes first, so a load that rises or falls hits both alike.
        order = codes if number % 2 else codes[::-1]
        figures = {str(c): run(c, args.file.resolve(), args.samples) for c in order}
        row = [figures[str(c)] for c in codes]
        for f in row:
            print(f"round {number}: {json.dumps(f)}", flush=True)
        ratios = [round(f["per_s"] / row[0]["per_s"], 2) for f in row[1:]]
        print(f"round {number}: rate against {codes[0]}: {ratios}", flush=True)
        rounds.append({"runs": row, "ratios": ratios})
    print(json.dumps({"rounds": rounds}, indent=2))
    return 0


if __name__ == "__main__":
    if __package__ in (None, ""):  # run as a file from another checkout: its bench, its brain
        sys.path[0] = str(Path.cwd())
    sys.exit(main())

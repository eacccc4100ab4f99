"""Soak one vault: writer and reader processes, hand edits, `brain watch` and `brain sleep` at once.

python -m bench.soak [--seconds 120] [--writers 3] [--readers 2] [--sleep-every 20] [--seed 13]

Every process is real and the daemon is off, so they meet only through the files, the caches
and the writer lock. Writers acknowledge a write only once `remember` (or `ingest`) returned;
readers recall, and every few recalls open the vault afresh (concurrent opens); one process
drops plain Markdown files in by hand for the watcher to take in; `brain sleep` runs
periodically. It stops by itself after `--seconds`, then checks: every note parses, every
acknowledged write is on disk and found by text recall, every dropped file is indexed, the
full text holds exactly the catalog's objects, and `brain doctor` is content.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
WORDS = "garden boiler taxes bicycle recipes travel books music kettle ferry".split()


def _env() -> dict[str, str]:
    return {**os.environ, "BRAIN_DAEMON": "off", "PYTHONPATH": str(ROOT)}


def _role(args: argparse.Namespace) -> None:
    """One worker process: writes, reads or drops files until the deadline; counts in a file."""
    from brain._brain import open_vault
    from brain._errors import BrainError

    root, deadline = Path(args.vault), args.deadline
    rng = random.Random(f"{args.seed}-{args.tag}")
    counts: Counter[str] = Counter()
    errors: list[str] = []
    acks = (root.parent / f"acks-{args.tag}.txt").open("a")
    brain = open_vault(root) if args.role != "drop" else None
    n = 0
    while time.time() < deadline:
        n += 1
        token = f"{args.tag}z{n}"
        try:
            if args.role == "writer" and brain is not None:
                if n % 10 == 0:
                    chat = root.parent / f"chat-{token}.json"
                    turns = [
                        {"role": "user", "content": f"what about {token}"},
                        {"role": "assistant", "content": f"{token} is fine"},
                    ]
                    chat.write_text(
                        json.dumps(
                            {
                                "recall_id": token,
                                "platform": "claude.ai",
                                "created_at": "2026-01-01T10:00:00Z",
                                "transcript": turns,
                            }
                        )
                    )
                    brain.ingest(chat)
                    counts["ingest"] += 1
                else:
                    topic = rng.choice(WORDS)
                    brain.remember(f"{token} about the {topic} plan", title=f"Soak {token}")
                    counts["remember"] += 1
                acks.write(token + "\n")
                acks.flush()
            elif args.role == "reader" and brain is not None:
                if n % 5 == 0:  # a fresh process's open, beside everyone else's
                    brain.close()
                    brain = open_vault(root)
                    counts["open"] += 1
                brain.recall(rng.choice(WORDS), mode=rng.choice(["text", "hybrid"]))
                counts["recall"] += 1
            elif args.role == "drop":
                inbox = root / "main" / "Knowledge" / "Inbox"
                inbox.mkdir(parents=True, exist_ok=True)
                (inbox / f"Dropped {token}.md").write_text(f"{token} written by hand\n")
                acks.write(token + "\n")
                acks.flush()
                counts["drop"] += 1
                time.sleep(0.5)
        except BrainError as exc:
            errors.append(f"{args.role}: {exc}")
    if brain is not None:
        brain.close()
    out = {"counts": dict(counts), "errors": errors}
    (root.parent / f"result-{args.tag}.json").write_text(json.dumps(out))


def _check(root: Path) -> dict[str, Any]:
    """The final integrity check, in this process, after every worker has stopped."""
    from brain._brain import open_vault
    from brain._errors import BrokenNote

    acked = set()
    for path in root.parent.glob("acks-*.txt"):
        acked.update(path.read_text().split())
    brain = open_vault(root)
    brain._context.catch_up()
    brain._context.catch_up_every = 3600.0  # nothing changes now: one walk, not one per recall
    try:
        on_disk: dict[str, str] = {}
        torn = []
        for rel, _st in brain._context.store.walk():
            try:
                note = brain._context.store.read(rel)
            except BrokenNote:
                torn.append(rel)
                continue
            for token in re.findall(r"\b[a-z]+\d+z\d+\b", note.body):
                on_disk.setdefault(token, note.id)
        lost = sorted(acked - set(on_disk))
        unfound = []
        for token, note_id in on_disk.items():
            hits = brain.recall(token, mode="text", k=10)
            if note_id not in {h.id.split("#")[0] for h in hits}:
                unfound.append(token)
        brain._context.flush(vectors=False)
        report = brain.doctor()
        caches = brain._context.caches
        return {
            "acknowledged": len(acked),
            "tokens_on_disk": len(on_disk),
            "torn_notes": torn,
            "lost_acknowledged": lost,
            "not_found_by_text_recall": unfound[:20],
            "not_found_count": len(unfound),
            "catalog_objects": caches.catalog.count(),
            "fulltext_objects": len(caches.fulltext),
            "doctor_ok": report.ok,
            "doctor": {k: v for k, v in report.to_json().items() if v and k != "ok"},
        }
    finally:
        brain.close()


def soak(
    seconds: float, writers: int, readers: int, sleep_every: float, seed: int
) -> dict[str, Any]:
    from brain.testing import NO_AUTOSTART, new_vault

    top = Path(tempfile.mkdtemp(prefix="brain-soak-"))
    root = top / "vault"
    new_vault(root, datetime.now(UTC), daemon=NO_AUTOSTART)
    load_before = os.getloadavg()
    deadline = time.time() + seconds
    me = [sys.executable, "-m", "bench.soak", "--vault", str(root), "--deadline", str(deadline)]
    roles = [("writer", writers), ("reader", readers), ("drop", 1)]
    workers = [
        subprocess.Popen(
            [*me, "--role", role, "--tag", f"{role[0]}{i}", "--seed", str(seed)],
            env=_env(),
            cwd=ROOT,
        )
        for role, count in roles
        for i in range(count)
    ]
    brain = [sys.executable, "-m", "brain"]
    watcher = subprocess.Popen(
        [*brain, "watch", "--vault", str(root)],
        env=_env(),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    sleeps = sleep_errors = 0
    sleep_messages = []
    while time.time() < deadline:
        time.sleep(min(sleep_every, max(0.0, deadline - time.time())))
        if time.time() >= deadline:
            break
        done = subprocess.run(
            [*brain, "sleep", "--vault", str(root)],
            env=_env(),
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        sleeps += 1
        if done.returncode != 0:
            sleep_errors += 1
            sleep_messages.append(done.stderr.strip()[-300:])
    for worker in workers:
        worker.wait(timeout=300)
    time.sleep(2.0)  # the watcher's last dropped files: its delay is 0.5 s
    watcher.send_signal(signal.SIGINT)
    _out, watch_err = watcher.communicate(timeout=120)
    counts: Counter[str] = Counter()
    errors: list[str] = []
    for path in top.glob("result-*.json"):
        result = json.loads(path.read_text())
        counts.update(result["counts"])
        errors += result["errors"]
    crashed = [w.args[-1] for w in workers if w.returncode != 0]
    watch_errors = [line for line in watch_err.splitlines() if "error" in line.lower()]
    integrity = _check(root)
    shutil.rmtree(top)
    return {
        "seconds": seconds,
        "writers": writers,
        "readers": readers,
        "seed": seed,
        "operations": dict(counts),
        "sleep_passes": sleeps,
        "errors": {
            "workers": errors[:20],
            "worker_error_count": len(errors),
            "crashed_workers": crashed,
            "sleep": sleep_errors,
            "sleep_messages": sleep_messages[:5],
            "watcher": watch_errors[:10],
        },
        "integrity": integrity,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--writers", type=int, default=3)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--sleep-every", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=13)
    # a worker's own arguments (the soak starts its workers through this same module)
    parser.add_argument("--role", choices=["writer", "reader", "drop"], help=argparse.SUPPRESS)
    parser.add_argument("--vault", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--tag", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        _role(args)
        return
    report = soak(args.seconds, args.writers, args.readers, args.sleep_every, args.seed)
    print(json.dumps(report, indent=2))
    whole = report["integrity"]
    bad = (
        whole["torn_notes"]
        or whole["lost_acknowledged"]
        or whole["not_found_count"]
        or whole["catalog_objects"] != whole["fulltext_objects"]
    )
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

"""A year of daily use, compressed: 365 days of writes and a nightly `brain sleep` process.

python -m bench.year --days 365 --cold-from 120 --out /tmp/year

The writes of each day go through the Python API with a FixedClock at that day (`remember`
has no `--now`); every night a real `brain sleep --now <day+1>T03:00:00Z --json` process runs
on the vault (hashing embedder, BRAIN_DAEMON=off). Each day: two titled notes (some titles
repeat, so they append), a diary entry under LLM/Diary, a thread day each week, and now and
then a correct, forget, relate and set. The cold tier is switched on from day --cold-from.
At the end of each month a line is printed: the month's sleep times, note files, logs,
index.json, Graph.md, vault and .brain sizes, and whether a note of the first month is still
recalled. At the end: doctor, doctor --forgotten for each forgotten note, expand --history of
the corrected notes and recall before and after `brain reindex`. Prints JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from brain._brain import open_vault
from brain._clock import FixedClock
from brain.testing import new_vault

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TOPICS = "garden boiler taxes bicycle recipes travel books music piano kayak".split()
THINGS = "budget plan schedule parts notes idea friend shop repair lesson".split()


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One real `brain` process on the vault."""
    env = {**os.environ, "BRAIN_DAEMON": "off", "BRAIN_VAULT": str(root)}
    env["HOME"] = str(root.parent / "home")
    return subprocess.run(
        [sys.executable, "-m", "brain", *args], env=env, capture_output=True, text=True
    )


def day_writes(root: Path, day: int, rng: random.Random, state: dict[str, Any]) -> None:
    """The writes of one simulated day, through the Python API at that day's clock."""
    clock = FixedClock(T0 + timedelta(days=day, hours=9))
    with open_vault(root, clock=clock) as memory:
        for n in range(2):
            topic = rng.choice(TOPICS)
            thing = rng.choice(THINGS)
            title = f"{topic} {thing} {day % 40 if rng.random() < 0.3 else day}-{n}"
            note = memory.remember(
                f"Day {day}: the {topic} {thing} needs {rng.randint(1, 99)} more minutes; "
                f"marker{day}x{n}.",
                title=title,
                tags=[topic],
            )
            state["titled"].append(note.id)
            state["marker"].setdefault(day, (note.id, f"marker{day}x{n}"))
            clock.set(clock.now() + timedelta(minutes=7))
        memory.remember(f"Diary {day}: talked about {rng.choice(TOPICS)}.", node="LLM/Diary")
        if day % 7 == 3:
            memory.remember(
                f"Week {day // 7} of the kayak build: {rng.choice(THINGS)} done.",
                title="Kayak build",
                kind="thread",
            )
        live = [i for i in state["titled"] if i not in state["gone"]]
        if day % 5 == 4 and live:
            target = rng.choice(live[-30:])
            fixed = memory.correct(target, f"Correction on day {day}: it was {rng.randint(1, 9)}.")
            state["gone"].add(target)
            state["titled"].append(fixed.id)
            state["corrected"].append(fixed.id)
        if day % 4 == 1 and len(live) > 2:
            src, dst = rng.sample(live[-20:], 2)
            memory.relate(src, "extends", dst)
        if day % 13 == 6 and live:
            victim = rng.choice(live[-10:])
            memory.forget(victim)
            state["gone"].add(victim)
            state["forgotten"].append(victim)
        if day % 10 == 8 and live:
            memory.set_field(rng.choice(live[-10:]), "defining", "decision")


def sizes(root: Path) -> dict[str, Any]:
    """File counts and bytes of what grows."""
    files = [p for p in root.rglob("*") if p.is_file()]
    brain_dir = root / ".brain"
    git_dir = root / ".git"
    shown = [p for p in files if brain_dir not in p.parents and git_dir not in p.parents]
    index_json = sum(p.stat().st_size for p in root.rglob("index.json"))
    graph = sum(p.stat().st_size for p in root.rglob("Graph.md"))
    return {
        "md_files": sum(1 for p in shown if p.suffix == ".md"),
        "cold_files": sum(1 for p in shown if p.suffix == ".zst"),
        "logs": sum(1 for p in shown if "Logs" in p.parts),
        "index_json_bytes": index_json,
        "graph_bytes": graph,
        "vault_bytes": sum(p.stat().st_size for p in shown),
        "brain_bytes": sum(p.stat().st_size for p in files if brain_dir in p.parents),
        "git_bytes": sum(p.stat().st_size for p in files if git_dir in p.parents),
    }


def recalled(root: Path, query: str, note_id: str) -> dict[str, Any]:
    """Whether `brain recall` finds the note, and how it is flagged."""
    done = cli(root, "recall", query, "--json")
    if done.returncode:
        return {"error": done.stderr.strip()}
    hits = json.loads(done.stdout)
    hits = hits.get("hits", hits) if isinstance(hits, dict) else hits
    for rank, hit in enumerate(hits):
        if hit["id"] == note_id:
            return {"rank": rank, "status": hit.get("status"), "path": hit.get("path")}
    return {"rank": None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--cold-from", type=int, default=120)
    parser.add_argument("--out", type=Path, default=Path("/tmp/year"))
    args = parser.parse_args()
    root = args.out / "v"
    new_vault(root, T0)
    rng = random.Random(7)
    state: dict[str, Any] = {
        "titled": [],
        "gone": set(),
        "forgotten": [],
        "corrected": [],
        "marker": {},
    }
    month: list[float] = []
    for day in range(args.days):
        if day == args.cold_from:
            settings = root / "brain.yaml"
            settings.write_text(settings.read_text().replace("cold: false", "cold: true"))
        day_writes(root, day, rng, state)
        night = (T0 + timedelta(days=day + 1, hours=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
        started = time.perf_counter()
        done = cli(root, "sleep", "--now", night, "--json")
        month.append(time.perf_counter() - started)
        if done.returncode:
            print(json.dumps({"day": day, "sleep_error": done.stderr.strip()}), flush=True)
        if day % 30 == 29 or day == args.days - 1:
            first = next(
                (v for v in state["marker"].values() if v[0] not in state["gone"]), ("", "")
            )
            line = {
                "day": day + 1,
                "sleep_avg_s": round(sum(month) / len(month), 2),
                "sleep_max_s": round(max(month), 2),
                **sizes(root),
                "first_month_note": recalled(root, first[1], first[0]),
            }
            print(json.dumps(line), flush=True)
            month = []
    (args.out / "state.json").write_text(
        json.dumps({k: sorted(v) if isinstance(v, set) else v for k, v in state.items()})
    )


if __name__ == "__main__":
    main()

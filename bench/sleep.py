"""Time `brain sleep` on a generated vault: a pass that ages and cools every note, then idle ones.

python -m bench.sleep --notes 3000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from brain._brain import open_vault
from brain._clock import FixedClock
from brain._model import iso, new_id
from brain._vault.template import init_vault

T0 = datetime(2026, 12, 2, tzinfo=UTC)
TOPICS = "garden boiler taxes bicycle recipes travel books music".split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--notes", type=int, default=3000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp()) / "vault"
    init_vault(root, T0)
    settings = root / "brain.yaml"
    settings.write_text(settings.read_text().replace("cold: false", "cold: true"))
    inbox = root / "main/Knowledge/Inbox"
    for n in range(args.notes):
        topic = TOPICS[n % len(TOPICS)]
        (inbox / f"{topic} note {n}.md").write_text(
            f"---\nid: {new_id(T0)}\ntitle: {topic} note {n}\nkind: titled\nstatus: active\n"
            f"created: {iso(T0)}\ntouched: {iso(T0)}\n---\nMemory {n} about {topic}: details on "
            f"the {topic} plan, budget and next steps for week {n % 52}.\n"
        )
    clock = FixedClock(T0 + timedelta(days=100))
    brain = open_vault(root, clock=clock)
    brain._context.catch_up()
    brain.forget(brain.list(limit=1)[0].id)

    def timed(label: str) -> None:
        start = time.perf_counter()
        report = brain.sleep()
        took = time.perf_counter() - start
        print(f"{label}: {took:.2f} s (aged {len(report.aged)}, moved {len(report.moved)})")

    timed("first pass: archive and cool every note, compact")
    timed("idle pass")
    brain.remember("one more line", title=f"{TOPICS[0]} note 0", node="Knowledge/Inbox")
    timed("pass after one edit (full-text rewrite)")
    status = brain.tier_status()
    print(
        f"cold: {status.cold_notes} notes, {status.cold_plain_bytes} → {status.cold_bytes} bytes "
        f"({status.ratio:.2f}×)"
    )
    brain.close()


if __name__ == "__main__":
    main()

"""How long the forgetting check and a purge take on a vault of N notes under git.

    .venv/bin/python bench/forgetting.py [N]

Figures in docs/lab/lifecycle.md ("Forgetting: the check and --purge").
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from brain._brain import open_vault
from brain._git import purge
from brain._git.repo import enable
from brain._upkeep import traces
from brain.testing import fixed_clock, new_vault


def main(count: int) -> None:
    with tempfile.TemporaryDirectory() as temp:
        root = Path(temp) / "vault"
        clock = fixed_clock()
        new_vault(root, clock.now())
        brain = open_vault(root, clock=clock, embedder=None, sparse=None)
        ids = [
            brain.remember(
                f"Note {n}: the orchard row {n} wants pruning before the frost "
                f"and a new stake for tree {n * 7}.",
                title=f"Row {n}",
            ).id
            for n in range(count)
        ]
        brain.close()
        enable(root)
        brain = open_vault(root, clock=clock, embedder=None, sparse=None)
        for note_id in ids[:20]:  # 20 more commits on top of the first
            brain.forget(note_id)
        target = ids[-1]
        brain.forget(target)
        started = time.perf_counter()
        report = traces.check(root, target)
        checked = time.perf_counter() - started
        plan = purge.plan(root, [target], [f"Row {count - 1}"])
        started = time.perf_counter()
        purge.rewrite(root, plan)
        purged = time.perf_counter() - started
        brain.close()
        size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        counted = subprocess.run(
            ["git", "-C", str(root), "rev-list", "--count", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        commits = counted.stdout.strip()
        print(
            f"{count} notes, {commits} commits, {size / 1e6:.1f} MB under the vault: check "
            f"{checked:.2f} s ({report.files} files, {report.objects} git objects, "
            f"{len(report.traces)} traces); purge rewrite {purged:.2f} s"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)

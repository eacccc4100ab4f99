"""What a catch-up costs on a big vault: the full walk against the look at folders.

    python -m bench.catchup --vault DIR [--rounds 5]

On a kept vault (bench/scale.py --keep), with its catalog but without opening a Brain (so no
rebuild runs first): the full walk of every file against the catalog (`catchup.compare`), the
check by folders with nothing changed (`catchup.by_folders`: one stat per folder), and the same
check after one new file in the biggest folder (that folder is listed, no file stat'ed). The
new file is removed after; the catalog gains the folders' record and the inodes of files it
knew without one (as a walk by the current code leaves it).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.metrics import percentile
from brain._indexes import catchup
from brain._indexes.catalog import Catalog
from brain._vault.paths import CACHE_DIR
from brain._vault.store import Folders, NoteStore


def timed(work: Callable[[], Any], rounds: int) -> tuple[list[float], Any]:
    """Milliseconds of each round, and what the last one returned."""
    out, result = [], None
    for _ in range(rounds):
        start = time.perf_counter()
        result = work()
        out.append((time.perf_counter() - start) * 1000)
    return out, result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--vault", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    store = NoteStore(args.vault)
    catalog = Catalog(args.vault / CACHE_DIR / "catalog.sqlite")
    folders: Folders = []

    def walk() -> catchup.Comparison:
        folders.clear()
        return catchup.compare(store, catalog, folders=folders)

    walks, found = timed(walk, max(2, args.rounds // 2))
    catchup.record_walk(catalog, folders, len(found.on_disk), datetime.now(UTC), found)
    quiet, check = timed(lambda: catchup.by_folders(store, catalog), args.rounds)
    assert check is not None and not check.todo and not check.gone, check
    biggest = Counter(rel.rpartition("/")[0] for rel, _st, _row in found.on_disk).most_common(1)
    folder, size = biggest[0]
    new = args.vault / folder / "bench-catchup-new.md"
    new.write_text("# New\n\nWritten by bench/catchup.py.\n")
    try:
        one, seen = timed(lambda: catchup.by_folders(store, catalog), 1)
        assert seen is not None and seen.todo == (f"{folder}/{new.name}",), seen
    finally:
        new.unlink()
        catalog.put_folders([], whole=False)
    report = {
        "files": len(found.on_disk),
        "folders": len(folders),
        "full_walk_ms": {"p50": round(percentile(walks, 50), 1), "max": round(max(walks), 1)},
        "folders_nothing_changed_ms": {
            "p50": round(percentile(quiet, 50), 2),
            "max": round(max(quiet), 2),
        },
        "folders_one_new_file_ms": round(one[0], 1),
        "biggest_folder_files": size,
        "load": round(os.getloadavg()[0], 2),
    }
    catalog.close()
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""One writer per vault: two processes writing at once lose nothing and tear nothing."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

from brain._brain import open_vault
from brain._indexes.catalog import Catalog
from brain._vault import notefile

WRITER = """
import sys
from pathlib import Path
from brain._brain import open_vault
brain = open_vault(Path(sys.argv[1]))
for n in range(int(sys.argv[3])):
    brain.remember(f"memory {n} from writer {sys.argv[2]}", title=f"w{sys.argv[2]} n{n}")
brain.close()
"""


def test_two_processes_remember_500_each_and_all_1000_are_whole(vault: Path) -> None:
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(vault), name, "500"])
        for name in ("a", "b")
    ]
    assert [p.wait(timeout=600) for p in procs] == [0, 0]
    inbox = sorted((vault / "main/Knowledge/Inbox").glob("*.md"))
    assert len(inbox) == 1000
    titles = set()
    for path in inbox:
        note = notefile.parse(path.read_text(), path.name)  # raises if torn
        assert note.body.startswith("memory ")
        titles.add(note.title)
    assert len(titles) == 1000
    brain = open_vault(vault)
    assert brain._context.caches.catalog.count("node='Knowledge/Inbox'") == 1000
    assert len(brain.recall("memory writer", k=100)) == 100
    assert brain.doctor().ok
    brain.close()


def test_a_new_catalog_opens_while_another_process_is_still_creating_it(tmp_path: Path) -> None:
    # SQLite answers "locked" at once, without waiting, when the switch to WAL meets another
    # connection's write: two processes opening a new vault met so in CI. The other writer
    # here is a connection mid-transaction, let go a moment later.
    path = tmp_path / "catalog.sqlite"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE creating (x)")
    release = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    release.start()
    catalog = Catalog(path)
    release.join()
    assert catalog.db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    catalog.close()
    other.close()

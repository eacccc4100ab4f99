"""One writer per vault: two processes writing at once lose nothing and tear nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from brain.brain import open_vault
from brain.vault import notefile

WRITER = """
import sys
from pathlib import Path
from brain.brain import open_vault
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
    assert brain.caches.catalog.count("node='Knowledge/Inbox'") == 1000
    assert len(brain.recall("memory writer", k=100)) == 100
    assert brain.doctor().ok
    brain.close()

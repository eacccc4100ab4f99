"""Markdown files that Obsidian's community plugins write into the vault: Excalidraw drawings
and scripts, Kanban boards, Dataview queries, pasted base64 images, callouts
(docs/lab/probe-plugins.md). Each file is written by hand in its plugin's own format."""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._errors import InvalidInput

KNOWLEDGE = "main/Knowledge"
# Base64 as the plugins write it (Excalidraw's compressed JSON, a pasted image's data URI).
BLOB = base64.b64encode(random.Random(7).randbytes(30_000)).decode()


def _drawing(texts: list[str], front: str = "") -> str:
    """A drawing as the Excalidraw plugin saves one: its header, the text elements, and the
    drawing as compressed JSON in 256-character lines, inside an Obsidian comment."""
    elements = "\n\n".join(f"{text} ^el{n}x9Qa" for n, text in enumerate(texts))
    drawing = "\n\n".join(BLOB[i : i + 256] for i in range(0, len(BLOB), 256))
    return (
        f"---\n\nexcalidraw-plugin: parsed\ntags: [excalidraw]\n{front}\n---\n"
        "==⚠  Switch to EXCALIDRAW VIEW in the MORE OPTIONS menu of this document. ⚠==\n\n\n"
        f"# Excalidraw Data\n\n## Text Elements\n{elements}\n\n%%\n## Drawing\n"
        f"```compressed-json\n{drawing}\n```\n%%"
    )


@pytest.mark.parametrize(
    "name, front",
    [
        ("Drawing 2026-12-07 10.15.22.excalidraw.md", ""),  # the plugin's own name
        ("Kite pipeline.md", ""),  # renamed in Obsidian, or saved with the plain .md setting
        ("Kite pipeline.md", "id: 01JE2Z3K4M5N6P7Q8R9S0T1V2W\ntitle: Kite pipeline\n"),  # adopted
    ],
)
@pytest.mark.parametrize("how", ["catch-up", "reindex"])
def test_an_excalidraw_drawing_is_never_written_nor_recalled(
    brain: Brain, vault: Path, name: str, front: str, how: str
) -> None:
    drawing = vault / KNOWLEDGE / name
    text = _drawing(["Kite deploy pipeline", "staging to prod"], front)
    drawing.write_text(text)
    brain.remember("The Kite deploy pipeline promotes staging to prod.", title="Kite")
    if how == "reindex":
        brain.reindex(embed=False)
    assert [n.title for n in brain.list() if n.path == f"{KNOWLEDGE}/{name}"] == []
    assert drawing.read_text() == text  # no id, no title written into the plugin's file
    hits = brain.recall("Kite deploy pipeline staging prod")
    assert [h.title for h in hits] == ["Kite"]
    assert not any(BLOB[:40] in h.snippet for h in brain.recall(BLOB[:300]))
    assert brain.doctor().ok


def test_a_drawing_an_earlier_brain_read_as_a_note_leaves_the_caches(
    brain: Brain, vault: Path
) -> None:
    """A vault indexed before: its drawings were notes (adopted, with an id). Their files are
    still there, so a catch-up took them for notes yet, and doctor said they were gone."""
    rel = f"{KNOWLEDGE}/Drawing 2026-12-07.excalidraw.md"
    drawing = vault / rel
    drawing.write_text(_drawing(["Kite"], "id: 01JE2Z3K4M5N6P7Q8R9S0T1V2W\ntitle: Drawing\n"))
    context = brain._context
    with context.lock.hold():  # the catalog as an earlier brain left it
        context.caches.put_note(context.store.read(rel), drawing.read_bytes(), drawing.stat())
    assert "Drawing" not in [n.title for n in brain.list()]
    assert brain.doctor().ok


def test_the_excalidraw_scripts_folder_is_not_read(vault: Path, clock: FixedClock) -> None:
    """Excalidraw's scripts are `.md` files of JavaScript that the plugin runs as they stand:
    front-matter written into one is a syntax error."""
    settings = vault / ".obsidian/plugins/obsidian-excalidraw-plugin/data.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"folder": "Excalidraw", "scriptFolderPath": "main/Scripts"}))
    script = vault / "main/Scripts/Box selected.md"
    script.parent.mkdir()
    source = "/*\nBoxes the selected elements.\n*/\nconst els = ea.getViewSelectedElements();\n"
    script.write_text(source)
    brain = open_vault(vault, clock=clock)
    try:
        assert "Box selected" not in [n.title for n in brain.list()]
        brain.reindex(embed=False)
        assert brain.doctor().ok
    finally:
        brain.close()
    assert script.read_text() == source


KANBAN = """---

kanban-plugin: basic

---

## Backlog

- [ ] Migrate Kite to the new build runner @{2026-12-10}


## Done

**Complete**
- [x] Ship Falcon 2.3


%% kanban:settings
```
{"kanban-plugin":"basic","lane-width":300,"show-checkboxes":true}
```
%%
"""

DASHBOARD = f"""# Projects

owner:: Priya

```dataview
TABLE owner, due FROM #project WHERE lanewidth SORT due ASC
```

The whiteboard after the Falcon retro: we cut the release scope.

![whiteboard](data:image/png;base64,{BLOB})
"""


def test_plugin_data_and_pasted_images_are_not_recall_text(brain: Brain, vault: Path) -> None:
    """A Kanban board's settings, a Dataview query and a pasted image's base64 were indexed:
    snippets showed the base64, index.json's entities were base64 fragments. The person's
    own text (cards, fields, sentences) is read; the files are left as they are."""
    (vault / KNOWLEDGE / "Falcon board.md").write_text(KANBAN)
    (vault / KNOWLEDGE / "Projects.md").write_text(DASHBOARD)
    for name in ("Lyon trip", "Hawk alerts", "Goals 2027"):  # a node of 5 gets its index.json
        (vault / KNOWLEDGE / f"{name}.md").write_text(f"{name}: planned with Priya.\n")
    queries = ("Kite build runner", "whiteboard retro release scope")
    board, dashboard = (brain.recall(query)[0] for query in queries)
    assert (board.title, dashboard.title) == ("Falcon board", "Projects")
    assert dashboard.snippet.startswith("The whiteboard after the Falcon retro")
    stored = {h.id: brain._context.caches.fulltext.stored(h.id) or {} for h in (board, dashboard)}
    texts = [fields["body"] for fields in stored.values()]
    assert "Migrate Kite to the new build runner" in texts[0]
    assert "owner:: Priya" in texts[1] and "whiteboard" in texts[1]
    for text in texts:
        assert "lane-width" not in text and "lanewidth" not in text and BLOB[:40] not in text
    entities = json.loads((vault / KNOWLEDGE / "index.json").read_text())["key_entities"]
    assert not [e for e in entities if len(e) > 30]
    assert "kanban-plugin: basic" in (vault / KNOWLEDGE / "Falcon board.md").read_text()
    assert BLOB in (vault / KNOWLEDGE / "Projects.md").read_text()  # the file keeps every byte


def test_remember_does_not_add_a_paragraph_to_a_kanban_board(brain: Brain, vault: Path) -> None:
    """`remember --title "Falcon board"` appended its text after the board's settings, where
    the Kanban plugin shows nothing and drops it at its next save: a memory lost."""
    board = vault / KNOWLEDGE / "Falcon board.md"
    board.write_text(KANBAN)
    brain.list()  # adopted: the board is a note with brain's fields added
    before = board.read_bytes()
    with pytest.raises(InvalidInput, match="is a Kanban board") as refused:
        brain.remember("Falcon slipped a week.", title="Falcon board", node="Knowledge")
    assert "another title" in refused.value.hint
    assert board.read_bytes() == before


def test_a_callout_that_answers_is_the_snippet(brain: Brain, vault: Path) -> None:
    """Obsidian users write what matters in callouts (`> [!warning] …`); the snippet left
    every quoted line out, and showed another line of the note."""
    (vault / KNOWLEDGE / "Postgres upgrade.md").write_text(
        "# Postgres upgrade\n\n> [!warning] Downtime\n> The upgrade needs a 20 minute write "
        "freeze on Sunday.\n\nThe plan follows the runbook.\n"
    )
    hit = brain.recall("how long is the write freeze")[0]
    assert hit.title == "Postgres upgrade"
    assert hit.snippet.startswith("The upgrade needs a 20 minute write freeze on Sunday.")


def test_sleep_draws_no_graph_in_a_folder_without_notes(brain: Brain, vault: Path) -> None:
    """Every top-level folder is a partition: Obsidian's attachments and Excalidraw folders got
    an `Insights/Graph.md` from each sleep."""
    (vault / "Attachments").mkdir()
    (vault / "Attachments/Pasted image 20261207.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (vault / "Excalidraw").mkdir()
    (vault / "Excalidraw/Drawing 2026-12-07.excalidraw.md").write_text(_drawing(["Hawk"]))
    brain.remember("Hawk watches Kite.", title="Hawk")
    brain.sleep()
    assert not (vault / "Attachments/Insights").exists()
    assert not (vault / "Excalidraw/Insights").exists()
    assert (vault / "main/Insights/Graph.md").exists()


def test_sleep_adds_no_log_or_graph_to_a_daily_notes_folder_made_by_hand(
    brain: Brain, vault: Path
) -> None:
    """Obsidian's daily notes at the top (`Daily/`) are a partition of the person's own: sleep
    wrote `Daily/Insights/Logs/<day>.md` and a graph among them."""
    (vault / "Daily").mkdir()
    (vault / "Daily/2026-12-02.md").write_text("Met Priya at the climbing gym.\n")
    brain.remember("Hawk watches Kite.", title="Hawk")
    brain.sleep()
    assert sorted(p.name for p in (vault / "Daily").iterdir()) == ["2026-12-02.md"]
    assert list((vault / "main/Insights/Logs").glob("*.md")) != []
    assert brain.at("Daily").recall("climbing gym")[0].path == "Daily/2026-12-02.md"

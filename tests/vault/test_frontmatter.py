"""Other tools read the vault cleanly: every kind of note brain writes parses, with a real
third-party parser (python-frontmatter), to the fields brain reads; tags are tags Obsidian
accepts; relations are also [[wikilinks]] Obsidian shows in its graph and backlinks."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import frontmatter
import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._errors import InvalidInput
from brain._model import iso
from brain._obsidian import LINKS_FIELD
from brain._sessions import Gate
from tests.ingest.test_documents import GUIDE, attach
from tests.ingest.test_transcripts import MARKDOWN_CHAT
from tests.notes.test_lifecycle import set_yaml

WIKILINK = re.compile(r"^\[\[([^\[\]|#^]+)(?:\|([^\[\]|]+))?\]\]$")


def _plain(value: Any) -> Any:
    """YAML timestamps as brain writes them: other parsers make them datetimes, brain keeps
    the text; the moment is the same."""
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def every_kind(vault: Path, clock: FixedClock, tmp_path: Path) -> Brain:
    """A vault holding every kind of note brain writes."""
    set_yaml(vault, "cold: false", "cold: true")
    brain = open_vault(vault, clock=clock)
    spec = brain.remember(
        "The Widget Pro weighs 2 kg.", title="Widget Pro specs", tags=["product", "#hardware", "v2"]
    )
    brain.remember("I live in Porto.", title="Biography", node="Master")
    brain.remember("Shipped the beta.", node="LLM/Diary")
    brain.remember("Vendor call went well.", kind="thread", title="Launch")
    lab = brain.remember("The lab uses the Widget Pro.", title="Lab kit")
    brain.relate(lab.id, "references", spec.id)
    brain.relate(lab.id, "supports", spec.id, 0.5)
    brain.correct(spec.id, "The Widget Pro weighs 2.5 kg.")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.md").write_text(GUIDE)
    attach(brain, folder)
    brain.sync()
    chat = tmp_path / "ci.md"
    chat.write_text(MARKDOWN_CHAT)
    brain.ingest(chat)
    old = brain.remember("An old plan for the shed.", title="Shed plan")
    brain.tier_move(old.id, "cold")
    brain.tier_move(old.id, "hot")  # a cold note restored
    gate = Gate(brain._context, {"via": "mcp", "session": "s1"})
    gate.session()
    gate.addendum("Talked about the widget.")
    clock.set(clock.now() + timedelta(days=30))
    brain.sleep()  # dormant notes, today's log, Graph.md
    return brain


def test_every_note_parses_to_the_fields_brain_reads(
    vault: Path, clock: FixedClock, tmp_path: Path
) -> None:
    brain = every_kind(vault, clock, tmp_path)
    kinds: set[str] = set()
    for path in sorted(vault.glob("main/**/*.md")):
        rel = path.relative_to(vault).as_posix()
        note = brain._context.store.read(rel)
        post = frontmatter.load(path)
        assert _plain(post.metadata) == dict(note.meta), rel
        assert post.content == note.body.strip(), rel
        kinds.add(str(note.meta.get("kind", "")))
        if note.meta.get("status") == "superseded":
            kinds.add("superseded")
        if note.meta.get("sections"):
            kinds.add("sections")
    assert {
        "titled",
        "singleton",
        "dated",
        "thread",
        "recall",
        "document",
        "log",
        "superseded",
        "sections",
    } <= kinds
    brain.close()


def test_tags_are_plain_strings_obsidian_accepts(
    vault: Path, clock: FixedClock, tmp_path: Path
) -> None:
    brain = every_kind(vault, clock, tmp_path)
    seen: set[str] = set()
    for path in vault.glob("main/**/*.md"):
        tags = frontmatter.load(path).metadata.get("tags") or []
        assert isinstance(tags, list), path
        for tag in tags:
            assert isinstance(tag, str) and tag, (path, tag)
            assert not tag.startswith("#") and not re.search(r"\s", tag) and not tag.isdigit()
            seen.add(tag)
    assert {"product", "hardware", "v2", "archived"} & seen >= {"product", "hardware", "v2"}
    for bad in ("two words", "2024", "tab\there", "#", "project//alpha", "/alpha", "x" * 101):
        with pytest.raises(InvalidInput, match="tag"):
            brain.remember("x", tags=[bad])
    # A tag is a word, not a file name: Obsidian's nested tags, and words a file may not be.
    nested = brain.remember("Kickoff on Monday", tags=["project/alpha", "con", "aux"])
    assert frontmatter.load(vault / nested.path).metadata["tags"] == ["project/alpha", "con", "aux"]
    brain.close()


def test_relations_are_wikilinks_obsidian_resolves(
    vault: Path, clock: FixedClock, tmp_path: Path
) -> None:
    brain = every_kind(vault, clock, tmp_path)
    linked = 0
    for path in vault.glob("main/**/*.md"):
        meta = frontmatter.load(path).metadata
        relations = meta.get("relations") or []
        links = meta.get(LINKS_FIELD) or []
        assert bool(links) == bool(relations), path
        targets = set()
        for link in links:
            found = WIKILINK.match(link)
            assert found, link
            target = vault / (found.group(1) + ".md")
            assert target.is_file(), link  # resolves from the vault's top, as Obsidian does
            targets.add(frontmatter.load(target).metadata["id"])
        assert targets == {r["target"].split("#")[0] for r in relations}, path
        linked += bool(links)
    assert linked >= 2  # Lab kit, and the correction's `corrects` edge
    brain.close()


def test_brain_reads_relations_from_relations_not_the_links(vault: Path, clock: FixedClock) -> None:
    brain = open_vault(vault, clock=clock)
    a = brain.remember("Alpha.", title="Alpha")
    b = brain.remember("Beta.", title="Beta")
    note = brain.relate(b.id, "extends", a.id)
    path = vault / note.path
    text = path.read_text()
    assert f"{LINKS_FIELD}: ['[[main/Knowledge/Inbox/Alpha|Alpha]]']" in text
    # A hand edit of the derived field changes nothing brain knows; the next write redoes it.
    path.write_text(text.replace("Inbox/Alpha|Alpha", "Inbox/Nowhere|Nowhere"))
    brain._context.catch_up()
    assert [(e.type, e.target) for e in brain.links(b.id).outgoing] == [("extends", a.id)]
    brain.unrelate(b.id, "extends", a.id)
    after = frontmatter.load(path).metadata
    assert "relations" not in after and LINKS_FIELD not in after
    brain.close()


def test_sleep_relinks_a_target_that_moved(vault: Path, clock: FixedClock) -> None:
    brain = open_vault(vault, clock=clock)
    a = brain.remember("Alpha.", title="Alpha")
    b = brain.relate(brain.remember("Beta.", title="Beta").id, "extends", a.id)
    moved = vault / "main/Knowledge/Alpha.md"
    (vault / a.path).rename(moved)  # moved by hand (or by a split, a partition rename)
    brain.sleep()
    links = frontmatter.load(vault / b.path).metadata[LINKS_FIELD]
    assert links == ["[[main/Knowledge/Alpha|Alpha]]"]
    report = brain.sleep()
    assert "0 notes relinked" in dict(report.steps)["graph"]  # nothing left to do
    brain.close()


@pytest.mark.parametrize("visibility", ["private", "local-only"])
def test_a_hidden_target_is_never_named_in_another_notes_file(
    vault: Path, clock: FixedClock, visibility: str
) -> None:
    brain = open_vault(vault, clock=clock)
    secret = brain.remember("The code is 4711.", title="Bank pin")
    brain.set_field(secret.id, "visibility", visibility)
    note = brain.relate(brain.remember("Errands.", title="Errands").id, "references", secret.id)
    text = (vault / note.path).read_text()
    assert secret.id in text  # the relation itself, by id, is kept
    assert "Bank pin" not in text and LINKS_FIELD not in text
    brain.close()

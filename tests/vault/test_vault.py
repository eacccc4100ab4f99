"""The vault on disk: init, finding it, notes that round-trip, note kinds, atomic writes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._errors import BrokenNote, InvalidInput, VaultMissing
from brain._model import is_id, normalise_title
from brain._settings import find_vault
from brain._vault import notefile
from brain._vault.template import init_vault
from brain.testing import T0, tree_digest


def test_init_copies_the_template_tree_with_purposes_and_ids(vault: Path) -> None:
    settings = yaml.safe_load((vault / "brain.yaml").read_text())
    assert is_id(settings["vault_id"]) and settings["format"] == 1
    assert settings["lifecycle"] == {"dormant_days": 21, "archive_days": 45}
    assert ".brain/" in (vault / ".gitignore").read_text()
    assert (vault / "README.md").is_file()
    for folder in (
        "LLM/Diary",
        "Memory/Sessions",
        "Memory/Threads",
        "Knowledge/Domains",
        "Knowledge/Master",
        "Insights/Logs",
    ):
        assert (vault / "main" / folder).is_dir(), folder
    ids = set()
    for name in (
        "Master/Biography",
        "Master/Goals",
        "Master/Preferences",
        "LLM/Responsibilities",
        "LLM/Protocols",
    ):
        note = notefile.parse((vault / "main" / f"{name}.md").read_text(), name)
        assert note.kind == "singleton"
        assert "Purpose:" in note.body
        assert is_id(note.id)
        ids.add(note.id)
    assert len(ids) == 5


def test_init_twice_changes_nothing_and_refuses_foreign_folders(
    vault: Path, tmp_path: Path
) -> None:
    before = tree_digest(vault)
    assert init_vault(vault, T0) is False
    assert tree_digest(vault) == before
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "cat.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(InvalidInput, match="not empty and is not a vault") as refused:
        init_vault(foreign, T0)
    assert [p.name for p in foreign.iterdir()] == ["cat.jpg"]
    assert f"`brain connect {foreign}`" in str(refused.value)  # how its notes can come in


def test_finding_the_vault_in_order(tmp_path: Path) -> None:
    home = tmp_path / "home"
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    (project / "brain.yaml").write_text("vault_id: x\n")
    env = {"BRAIN_VAULT": str(tmp_path / "env")}
    assert find_vault(tmp_path / "flag", env, project / "sub", home)[0] == tmp_path / "flag"
    assert find_vault(None, env, project / "sub", home)[0] == tmp_path / "env"
    assert find_vault(None, {}, project / "sub", home)[0] == project
    assert find_vault(None, {}, tmp_path, home)[0] == home / "brain"


def test_a_missing_vault_says_run_init(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(VaultMissing, match=r"no vault at .*run `brain init`"):
        open_vault(tmp_path / "empty")


def test_a_vault_moved_away_says_how_to_name_its_new_place_before_making_a_new_one(
    vault: Path, tmp_path: Path
) -> None:
    vault.rename(tmp_path / "Notes")  # mv ~/brain ~/Notes: a cron line or a host still says ~/brain
    with pytest.raises(VaultMissing) as said:
        open_vault(vault)
    assert said.value.message == f"no vault at {vault}: there is no such folder"
    assert said.value.hint is not None and said.value.hint.startswith(
        "a vault moved or renamed is named by its new path: --vault PATH or BRAIN_VAULT"
    )
    assert not vault.exists()  # nothing made in its old place


HAND_EDITED = """---
title: Widget Pro specs   # a comment the person wrote
zeta: keep me
id: 01JE2Z3K4M5N6P7Q8R9S0T1V2W
kind: titled
custom:
  nested: [1, 2]
created: 2026-11-30T09:00:00Z
---
Body with  odd   spacing
and no trailing newline"""


def test_parse_render_round_trips_exactly() -> None:
    note = notefile.parse(HAND_EDITED, "main/x.md")
    assert notefile.render(note) == HAND_EDITED
    assert list(note.meta)[:3] == ["title", "zeta", "id"]
    assert note.created == "2026-11-30T09:00:00Z"


def test_core_resave_keeps_unknown_keys_order_and_body(brain: Brain, vault: Path) -> None:
    path = vault / "main/Knowledge/Inbox/Widget Pro specs.md"
    path.write_text(HAND_EDITED)
    brain.remember("It weighs 2 kg.", title="widget PRO specs!", node="Knowledge/Inbox")
    text = path.read_text()
    note = notefile.parse(text, "x")
    assert list(note.meta)[:3] == ["title", "zeta", "id"]
    assert note.meta["zeta"] == "keep me" and note.meta["custom"] == {"nested": [1, 2]}
    assert note.body.startswith("Body with  odd   spacing\nand no trailing newline")
    assert note.body.rstrip().endswith("It weighs 2 kg.")


def test_normalised_titles() -> None:
    assert normalise_title("  Ｗidget   PRO—specs! ") == normalise_title("widget pro specs")


def test_titled_notes_dedupe_by_title_within_their_folder(brain: Brain) -> None:
    a = brain.remember("first", title="Launch plan")
    b = brain.remember("second", title="launch  PLAN.")
    c = brain.remember("elsewhere", title="Launch plan", node="Knowledge/Domains/Work")
    assert a.id == b.id != c.id
    assert "first" in b.body and "second" in b.body


def test_untitled_memories_never_merge(brain: Brain) -> None:
    # The same first words (the same derived title), other text: two memories.
    a = brain.remember("Caroline: hey Mel, how are you doing today? Fine, thanks")
    b = brain.remember("Caroline: hey Mel, how are you doing today? Tired, sadly")
    assert a.title == b.title and a.id != b.id and a.path != b.path


def test_singleton_upserts_in_place_keeping_its_purpose(brain: Brain) -> None:
    first = brain.remember("I live in Lyon.", title="Biography", node="Master")
    second = brain.remember("I live in Porto now.", title="Biography", node="Master")
    assert first.id == second.id and second.kind == "singleton"
    assert "Purpose:" in second.body and "Porto" in second.body and "Lyon" not in second.body


def test_dated_notes_append_timestamped_blocks(brain: Brain, clock: FixedClock) -> None:
    a = brain.remember("Wrote the plan.", node="LLM/Diary")
    clock.set(T0 + timedelta(hours=2))
    b = brain.remember("Reviewed it.", node="LLM/Diary")
    assert a.id == b.id and b.path == "main/LLM/Diary/2026-12-02.md" and b.kind == "dated"
    assert b.body.index("## 10:31:00Z") < b.body.index("## 12:31:00Z")
    clock.set(T0 + timedelta(days=1))
    c = brain.remember("Next day.", node="LLM/Diary")
    assert c.path.endswith("2026-12-03.md") and c.id != a.id


def test_threads_have_an_index_and_a_child_per_active_day(brain: Brain, clock: FixedClock) -> None:
    index = brain.remember("Moving the launch.", kind="thread", title="Launch")
    assert index.path == "main/Memory/Threads/Launch/index.md"
    assert "## Context" in index.body and "## Resolution" in index.body
    clock.set(T0 + timedelta(days=1))
    day = brain.remember("Vendor agreed.", kind="thread", title="Launch")
    again = brain.remember("Signed.", kind="thread", title="Launch")
    assert day.path == "main/Memory/Threads/Launch/2026-12-03.md" == again.path
    assert day.parent == index.id
    assert "Vendor agreed." not in brain._context.get(index.id).body


def test_touched_moves_on_write_and_expand_never_from_mtime(
    brain: Brain, clock: FixedClock, vault: Path
) -> None:
    note = brain.remember("Touch me.", title="Touchy")
    assert note.touched == "2026-12-02T10:31:00Z"
    clock.set(T0 + timedelta(days=3))
    path = vault / note.path
    path.touch()  # a newer mtime alone is not a touch
    assert brain._context.get(note.id).touched == "2026-12-02T10:31:00Z"
    assert brain.expand(note.id).touched == "2026-12-05T10:31:00Z"
    clock.set(T0 + timedelta(days=4))
    assert brain.remember("More.", title="Touchy").touched == "2026-12-06T10:31:00Z"


def test_writes_are_atomic_and_leave_no_temp_files(brain: Brain, vault: Path) -> None:
    for n in range(5):
        brain.remember(f"note {n}", title=f"N{n}")
    leftovers = list(vault.rglob("*.tmp"))
    assert leftovers == []


def test_broken_front_matter_is_reported_by_path_and_the_rest_works(
    brain: Brain, vault: Path
) -> None:
    good = brain.remember("The sky is green on Tuesdays.", title="Sky")
    bad = vault / "main/Knowledge/Inbox/Broken.md"
    bad.write_text("---\ntitle: [unclosed\n---\nbody\n")
    before = bad.read_bytes()
    with pytest.raises(BrokenNote, match=r"Broken\.md"):
        notefile.parse(bad.read_text(), "main/Knowledge/Inbox/Broken.md")
    hits = brain.recall("green sky tuesdays")
    assert [h.id for h in hits] == [good.id]
    report = brain.doctor()
    assert [p for p, _ in report.broken] == ["main/Knowledge/Inbox/Broken.md"]
    assert bad.read_bytes() == before


def test_reserved_and_escaping_names_are_refused(brain: Brain, vault: Path) -> None:
    before = tree_digest(vault)
    for node in ("../outside", "a/../../b", "a\\b", "x\x00y", "CON", "/etc", "cold"):
        with pytest.raises(InvalidInput):
            brain.remember("text", node=node)
    for title in ("..", "a\x00b", "/", "\\"):
        with pytest.raises(InvalidInput):
            brain.remember("text", title=title)
    # the error names the node as given and the part of it refused
    with pytest.raises(InvalidInput, match=r"^node 'a/\.\./\.\./b': its part '\.\.' may not"):
        brain.remember("text", node="a/../../b")
    assert tree_digest(vault) == before
    # a title with separators is kept as written, and its file stays inside the vault
    note = brain.remember("text", title="../../etc/passwd")
    assert note.title == "../../etc/passwd"
    assert (vault / note.path).resolve().is_relative_to(vault.resolve())
    assert note.path == "main/Knowledge/Inbox/etc passwd.md"
    # a title that is a device name on Windows keeps its title; its file is named apart
    for title, path in (("Nul", "Nul (note).md"), ("aux.txt", "aux (note).txt.md")):
        named = brain.remember("text", title=title)
        assert named.title == title and named.path == f"main/Knowledge/Inbox/{path}"
        assert brain.remember("more text", title=title).id == named.id  # found again by title


def test_a_hand_dropped_markdown_file_is_adopted(brain: Brain, vault: Path) -> None:
    path = vault / "main/Knowledge/Inbox/Groceries.md"
    path.write_text("Buy quinces and saffron.\n")
    hits = brain.recall("quinces saffron")
    assert hits and hits[0].title == "Groceries"
    note = notefile.parse(path.read_text(), "x")
    assert is_id(note.id) and note.body == "Buy quinces and saffron.\n"


def test_local_only_notes_live_in_their_git_ignored_folder(brain: Brain, vault: Path) -> None:
    folder = vault / "local-only/main/Knowledge/Inbox"
    folder.mkdir(parents=True)
    (folder / "Secret.md").write_text(
        "---\nid: 01JE2Z3K4M5N6P7Q8R9S0T1V2W\ntitle: Secret\nvisibility: local-only\n---\nplum\n"
    )
    hit = brain.recall("plum")[0]
    assert hit.path == "local-only/main/Knowledge/Inbox/Secret.md"
    assert hit.node == "Knowledge/Inbox"
    assert "local-only/" in (vault / ".gitignore").read_text()


def test_adopting_a_hand_written_note_keeps_its_fields(brain: Brain, vault: Path) -> None:
    path = vault / "main/Knowledge/Inbox/Recipes.md"
    path.write_text(
        "---\ntitle: Grandma's recipes\ntags: [food]\nvisibility: private\n---\nFlan.\n"
    )
    brain._context.catch_up()
    note = notefile.parse(path.read_text(), "x")
    assert is_id(note.id) and note.title == "Grandma's recipes"
    assert note.tags == ("food",) and note.visibility == "private"
    assert note.body == "Flan.\n"

"""Hand-made files that used to break the vault: a YAML alias bomb, oversized front-matter, a
copied note, symbolic links out of the vault (issue 13, defects 6, 7 and 8)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain import _safeyaml as safeyaml
from brain._brain import Brain, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._errors import BrokenNote, InvalidInput
from brain._model import is_id
from brain._notes import corrections
from brain._vault import notefile

INBOX = "main/Knowledge/Inbox"
_register()  # the commands, as `brain` registers them


def _bomb(depth: int) -> str:
    """Front-matter whose `tags` expand to 9**depth values through nested aliases."""
    lines = [
        "---",
        "title: Bomb",
        'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
    ]
    for n in range(1, depth):
        lines.append(f"a{n}: &a{n} [" + ",".join([f"*a{n - 1}"] * 9) + "]")
    lines.append("tags: [" + ",".join([f"*a{depth - 1}"] * 9) + "]")
    return "\n".join([*lines, "---", "Nothing here.", ""])


def test_the_alias_bomb_is_reported_broken_by_name_and_left_alone(
    brain: Brain, vault: Path
) -> None:
    good = brain.remember("Zebras are striped.", title="Zebra")
    bomb = _bomb(8)  # 9**9 ≈ 387 million strings once expanded: 24 s and 2 GB before the fix
    assert len(bomb.encode()) < 600
    path = vault / INBOX / "Bomb.md"
    path.write_text(bomb)
    with pytest.raises(BrokenNote, match=r"Bomb\.md.*alias"):
        notefile.parse(bomb, f"{INBOX}/Bomb.md")
    assert [h.id for h in brain.recall("striped zebras")] == [good.id]
    report = brain.doctor()
    assert [p for p, _ in report.broken] == [f"{INBOX}/Bomb.md"] and not report.ok
    assert "alias" in report.broken[0][1]
    assert [r.title for r in brain.list()] == [r.title for r in brain.list() if r.title != "Bomb"]
    assert path.read_text() == bomb


def test_a_shallow_alias_is_refused_too(vault: Path, clock: FixedClock) -> None:
    (vault / INBOX / "Alias.md").write_text(_bomb(2))
    brain = open_vault(vault, clock=clock)
    try:
        brain._context.catch_up()
        broken = dict(brain.doctor().broken)
        assert "alias" in broken[f"{INBOX}/Alias.md"]
        assert "Bomb" not in [r.title for r in brain.list()]
    finally:
        brain.close()


def test_oversized_front_matter_and_fields_are_refused_by_name() -> None:
    big_field = "---\ntitle: " + "x" * (safeyaml.MAX_FIELD_CHARS + 1) + "\n---\nbody\n"
    with pytest.raises(BrokenNote, match=r"big\.md: front-matter field 'title' is \d+ char"):
        notefile.parse(big_field, "big.md")
    many = "".join(f"f{n}: {'y' * 1000}\n" for n in range(notefile.MAX_FRONT_BYTES // 1000 + 1))
    with pytest.raises(BrokenNote, match=r"huge\.md: front-matter is \d+ bytes; the limit"):
        notefile.parse("---\n" + many + "---\nbody\n", "huge.md")
    ok = notefile.parse("---\ntitle: fine\ntags: [a, b]\n---\nbody\n", "ok.md")
    assert ok.meta == {"title": "fine", "tags": ["a", "b"]}


def test_a_number_python_will_not_build_is_a_broken_note_not_a_crash() -> None:
    with pytest.raises(BrokenNote, match=r"^x\.md: front-matter holds a value too large"):
        notefile.parse("---\nweight: " + "9" * 5000 + "\n---\nBody.\n", "x.md")


@pytest.mark.parametrize("empty", ["id: ''", "id: null", "id:"])
def test_a_note_with_an_empty_id_is_given_one(brain: Brain, vault: Path, empty: str) -> None:
    path = vault / INBOX / "Empty id.md"
    path.write_text(f"---\ntitle: Empty id\n{empty}\n---\nA body of mine.\n")
    brain._context.catch_up()
    note = notefile.parse(path.read_text(), "x")
    assert is_id(note.id) and brain._context.get(note.id).body == "A body of mine.\n"
    assert list(note.meta)[:2] == ["title", "id"]  # where the person left it


def test_doctor_names_the_bomb_on_the_command_line(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAIN_VAULT", str(vault))
    (vault / INBOX / "Bomb.md").write_text(_bomb(8))
    result = CliRunner().invoke(app, ["doctor"])
    assert result.exit_code == 1 and "Bomb.md" in result.stdout and "alias" in result.stdout


# defect 7: a copied note -------------------------------------------------------------------
def _copy(brain: Brain, vault: Path) -> tuple[str, Path, Path]:
    zebra = brain.remember("Zebras are striped, black on white.", title="Zebra")
    original = vault / zebra.path
    copy = original.with_name("A draft.md")  # sorts before the original
    shutil.copy(original, copy)
    text = copy.read_text().replace("Zebras are striped, black on white.", "A draft of mine.")
    copy.write_text(text)
    return zebra.id, original, copy


def test_a_copied_note_never_steals_the_id_on_reindex(brain: Brain, vault: Path) -> None:
    zebra, original, copy = _copy(brain, vault)
    report = brain.doctor()
    assert report.copies and "A draft.md" in report.copies[0] and not report.ok
    brain.reindex(embed=False)
    assert brain._context.get(zebra).path == original.relative_to(vault).as_posix()
    found = [h.id for h in brain.recall("striped black white", mode="text")]
    renewed = notefile.parse(copy.read_text(), "copy")
    assert renewed.id and renewed.id != zebra and renewed.meta["copy_of"] == zebra
    # The copy, renewed in the same node within the minute, may follow as the original's
    # neighbour (recall/neighbours.py); it never comes first.
    assert found[0] == zebra and found[1:] in ([], [renewed.id])
    assert "A draft of mine." in brain._context.get(renewed.id).body
    after = brain.doctor()
    assert after.ok and not after.broken and "A draft.md" in after.renewed[0]


def test_a_copied_note_found_by_catch_up_gets_its_own_id(brain: Brain, vault: Path) -> None:
    zebra, _original, copy = _copy(brain, vault)
    brain._context.catch_up()
    assert brain._context.get(zebra).path.endswith("/Zebra.md")
    renewed = notefile.parse(copy.read_text(), "copy")
    assert renewed.id != zebra and brain._context.get(renewed.id).path.endswith("/A draft.md")


def test_a_fresh_reindex_keeps_the_id_with_the_earlier_created(
    brain: Brain, vault: Path, clock: FixedClock
) -> None:
    zebra, _original, copy = _copy(brain, vault)
    # The copy claims a later `created`; with no catalog to ask, that decides.
    copy.write_text(
        copy.read_text().replace("created: 2026-12-02T10:31:00Z", "created: 2026-12-03T09:00:00Z")
    )
    brain.close()
    shutil.rmtree(vault / ".brain")
    again = open_vault(vault, clock=clock)
    try:
        assert again._context.get(zebra).path.endswith("/Zebra.md")
        assert notefile.parse(copy.read_text(), "copy").id != zebra
    finally:
        again.close()


# defect 8: links out of the vault ------------------------------------------------------------
@pytest.mark.parametrize("folder", ["local-only", "main/Knowledge"])
def test_a_link_out_of_the_vault_is_skipped_and_reported(
    brain: Brain, vault: Path, tmp_path: Path, folder: str
) -> None:
    kept = brain.remember("Otters hold hands while sleeping.", node="Memory/Facts", title="Otters")
    local = brain.remember("A local-only note", title="Local")
    brain.remember("Ferns grow in shade.", node="Knowledge/Inbox", title="Ferns")  # cached there
    brain.set_field(local.id, "visibility", "local-only")
    outside = tmp_path / "outside"
    (outside / "main" / "Inbox").mkdir(parents=True)
    (outside / "main" / "Inbox" / "Leak.md").write_text("---\ntitle: Leak\n---\nsecret ferret\n")
    (outside / "Inbox").mkdir()
    (outside / "Inbox" / "Leak.md").write_text("---\ntitle: Leak\n---\nsecret ferret\n")
    target = vault / folder
    shutil.rmtree(target)
    target.symlink_to(outside, target_is_directory=True)
    before = sorted(p.relative_to(outside).as_posix() for p in outside.rglob("*"))

    again = open_vault(vault)
    try:
        assert again.recall("otters sleeping hands", mode="text")[0].id == kept.id
        assert again.recall("secret ferret", mode="text") == []
        report = again.doctor()
        assert report.links == (
            f"{folder}: a symbolic link leading outside the vault; skipped, never followed",
        )
        assert not report.broken
        assert again.reindex(embed=False) >= 1
        assert again.recall("otters sleeping hands", mode="text")[0].id == kept.id
        assert "Leak" not in [r.title for r in again.list()]
    finally:
        again.close()
    assert sorted(p.relative_to(outside).as_posix() for p in outside.rglob("*")) == before


def test_doctor_json_lists_links(
    vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAIN_VAULT", str(vault))
    (tmp_path / "elsewhere").mkdir()
    (vault / "main/Knowledge/Linked").symlink_to(tmp_path / "elsewhere")
    result = CliRunner().invoke(app, ["doctor", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["links"] == [
        "main/Knowledge/Linked: a symbolic link leading outside the vault; skipped, never followed"
    ]


def test_a_note_replaced_by_a_folder_is_named_by_doctor_and_left_alone(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain = open_vault(vault)
    note = brain.remember("the kelp forest sways")
    brain.close()
    path = vault / note.path
    path.unlink()
    path.mkdir()  # an editor or a script made a folder of the note's name
    (path / "sketch.png").write_bytes(b"not a note")
    (path / "kept.md").write_text("---\ntitle: Kept\n---\nA note inside it.\n")
    monkeypatch.setenv("BRAIN_VAULT", str(vault))
    said = CliRunner().invoke(app, ["doctor"])
    assert said.exit_code == 1
    assert f"{note.path}: a folder where a note file of that name belongs" in said.stdout
    assert "git log" in said.stdout
    assert "All well" not in said.stdout
    found = json.loads(CliRunner().invoke(app, ["doctor", "--json"]).stdout)
    assert [line.partition(":")[0] for line in found["not_files"]] == [note.path]
    assert (path / "sketch.png").read_bytes() == b"not a note"  # nothing moved or removed
    assert "Kept" in CliRunner().invoke(app, ["list"]).stdout  # the note inside is read


def test_an_alias_in_brain_yaml_is_refused_by_name(vault: Path) -> None:
    with (vault / "brain.yaml").open("a") as settings:
        settings.write("extra: &x [1, 2]\nmore: *x\n")
    with pytest.raises(InvalidInput, match=r"brain\.yaml: brain\.yaml uses a YAML alias"):
        open_vault(vault)


def test_a_field_holding_yaml_is_read_with_the_same_limits() -> None:
    # `prior_status_line` (corrections.py) is YAML inside a note's field: an alias there is refused.
    assert corrections._status_of("status: dormant\n") == "dormant"
    assert corrections._status_of("status: dormant\nx: &a [1]\ny: *a\n") == "active"


def test_a_path_is_inside_only_when_it_resolves_below_the_vault(tmp_path: Path) -> None:
    """`inside` compares resolved paths as text: a sibling whose name extends the vault's
    (`vault-other`) is outside, and so is anything reached through `..` or a link."""
    from brain._errors import InvalidInput
    from brain._vault.paths import inside

    root = tmp_path / "vault"
    (root / "main" / "Knowledge").mkdir(parents=True)
    (tmp_path / "vault-other").mkdir()
    (root / "main" / "away").symlink_to(tmp_path / "vault-other")
    assert inside(root, "main/Knowledge/a.md") == root.resolve() / "main/Knowledge/a.md"
    assert inside(root, "") == root.resolve()
    for escape in ("../vault-other/a.md", "main/away/a.md", "main/../../x.md", "/etc/passwd"):
        with pytest.raises(InvalidInput, match="leads outside the vault"):
            inside(root, escape)


def test_inside_resolves_as_realpath_does_for_every_kind_of_path(tmp_path: Path) -> None:
    """`inside` looks only at the relative part's components; where it gives a path, it is
    exactly the path `os.path.realpath` gives, through links, `..`, `.` and missing parts."""
    import itertools
    import os

    from brain._errors import InvalidInput
    from brain._vault.paths import inside

    root = tmp_path / "vault"
    (root / "main" / "Knowledge" / "Deep").mkdir(parents=True)
    (root / "main" / "Knowledge" / "a.md").write_text("x")
    (tmp_path / "out").mkdir()
    (root / "main" / "near").symlink_to(root / "main" / "Knowledge")  # a link that stays in
    (root / "main" / "far").symlink_to(tmp_path / "out")  # a link that leaves
    (root / "main" / "loop").symlink_to(root / "main" / "loop")
    (root / "main" / "dangling").symlink_to(root / "main" / "nowhere")
    parts = [
        "main",
        "Knowledge",
        "Deep",
        "near",
        "far",
        "loop",
        "dangling",
        "..",
        ".",
        "",
        "missing",
        "a.md",
    ]
    real_root = os.path.realpath(root)
    checked = 0
    for n in (1, 2, 3, 4):
        for combo in itertools.product(parts, repeat=n):
            rel = "/".join(combo)
            want = os.path.realpath(os.path.join(real_root, rel))  # noqa: PTH118 (as inside)
            inside_want = want == real_root or want.startswith(real_root + os.sep)
            try:
                got = str(inside(root, rel))
            except InvalidInput:
                assert not inside_want, rel
                continue
            assert inside_want and got == want, rel
            checked += 1
    assert checked > 5000

"""Connected folders as documents and chunks: provenance, sync by hash, deletion, exclusions,
pending connectors, safety (links, binaries, caps, encodings, .brainignore) and bad input."""

from __future__ import annotations

import codecs
import json
import os
import shutil
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from brain._brain import Brain
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._errors import InvalidInput, NotFound
from brain._model import iso
from brain._sources import connectors as conn
from brain._sources import documents
from brain.testing import tree_digest

_register()

GUIDE = """# Garden guide

Tomatoes want deep watering twice a week in summer, more in a heat wave.

## Soil

Loamy soil with plenty of compost suits tomatoes and peppers alike.

| plant | water |
|---|---|
| tomato | daily |
| basil | weekly |

```python
print("irrigation schedule")
```

## Pests

- aphids on the beans
- slugs after rain
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "guide.md").write_text(GUIDE)
    (root / "sub" / "letter.txt").write_text("Dear Ana,\n\nThe quince jam recipe is below.\n")
    return root


def attach(
    brain: Brain, folder: Path, name: str = "notes", partition: str | None = None, **kw: int
) -> conn.Declared:
    """What `connect` does after the person typed the code shown at the terminal."""
    decl = conn.Declared(name, str(folder), partition=partition or brain.partition, **kw)
    ident = conn.identity(folder)
    assert ident is not None
    with brain._context.lock.hold():
        documents.confirm(brain._context, decl, ident)
    return decl


def doc_of(brain: Brain, rel: str, name: str = "notes") -> documents.ObjectRow:
    return documents.documents_of(brain._context, name)[rel]


def test_a_file_becomes_one_document_with_typed_chunks(brain: Brain, folder: Path) -> None:
    attach(brain, folder)
    [report] = brain.sync()
    assert sorted(report.added) == ["guide.md", "sub/letter.txt"]
    row = doc_of(brain, "guide.md")
    assert row.path == "main/Knowledge/Sources/notes/guide.md" and row.kind == "document"
    note = brain._context.get(row.id)
    assert note.body == GUIDE and note.title == "Garden guide"
    source = note.source
    assert source["via"] == "connector" and source["connector"] == "notes"
    assert source["uri"] == (folder / "guide.md").resolve().as_uri()
    assert source["hash"] == documents.content_hash(GUIDE.encode())
    chunks = list(brain._context.caches.catalog.select("parent=? ORDER BY id", [row.id]))
    assert chunks and all(c.kind == "chunk" and c.source == source for c in chunks)
    kinds = {}
    for c in chunks:
        _, section = brain._context.section(c.id)
        kinds[section.block_type] = section
        assert c.heading_path == section.heading_path
    assert set(kinds) >= {"paragraph", "table", "code", "list"}
    rows = (("plant", "water"), ("tomato", "daily"), ("basil", "weekly"))
    assert kinds["table"].table_data == rows
    assert kinds["list"].heading_path == ("Garden guide", "Pests")
    text = doc_of(brain, "sub/letter.txt")
    assert brain._context.get(text.id).title == "letter.txt"
    assert (brain.root / "main/Knowledge/Sources/notes/sub/letter.txt.md").is_file()


def test_recall_shows_the_document_title_and_heading_path(brain: Brain, folder: Path) -> None:
    attach(brain, folder)
    brain.sync()
    hit = brain.recall("loamy compost peppers")[0]
    row = doc_of(brain, "guide.md")
    assert hit.id.startswith(row.id + "#") and hit.parent == row.id
    assert hit.title == "Garden guide" and hit.heading_path == ("Garden guide", "Soil")
    assert "Loamy soil" in hit.snippet


def test_reindex_rebuilds_the_same_chunks_from_the_files(brain: Brain, folder: Path) -> None:
    attach(brain, folder)
    brain.sync()

    def chunks() -> list[tuple[str, tuple[str, ...], str]]:
        rows = brain._context.caches.catalog.select("kind='chunk' ORDER BY id")
        return [(r.id, r.heading_path, r.text_hash) for r in rows]

    before = chunks()
    shutil.rmtree(brain.root / ".brain" / "fulltext")
    (brain.root / ".brain" / "catalog.sqlite").unlink()
    brain.close()
    from brain._brain import open_vault

    again = open_vault(brain.root, clock=brain.clock)
    try:
        again.reindex()
        brain._context.caches = again._context.caches
        assert chunks() == before and len(before) >= 5
    finally:
        again.close()


def test_sync_rereads_only_changed_files_and_forgets_deleted_ones(
    brain: Brain, folder: Path
) -> None:
    attach(brain, folder)
    brain.sync()
    first = doc_of(brain, "guide.md")
    (folder / "sub" / "letter.txt").write_text("Dear Ana,\n\nThe fig jam recipe is below.\n")
    [report] = brain.sync()
    assert report.updated == ["sub/letter.txt"] and report.unchanged == 1 and not report.added
    assert doc_of(brain, "guide.md").touched == first.touched  # not rewritten
    assert "fig jam" in brain.recall("fig jam")[0].snippet
    assert not [h for h in brain.recall("quince") if h.kind == "chunk"]
    letter = doc_of(brain, "sub/letter.txt")
    (folder / "sub" / "letter.txt").unlink()
    [report] = brain.sync()
    assert report.removed == ["sub/letter.txt"]
    assert not (brain.root / letter.path).exists()
    assert brain._context.caches.catalog.count("note_id=?", [letter.id]) == 0
    assert not brain.recall("fig jam")


def test_a_document_whose_file_changed_is_dated_updated_by_the_sync_that_read_it(
    brain: Brain, folder: Path, clock: FixedClock
) -> None:
    attach(brain, folder)
    brain.sync()
    clock.set(clock.now() + timedelta(days=40))
    (folder / "sub" / "letter.txt").write_text("Dear Ana,\n\nThe fig jam recipe is below.\n")
    brain.sync()
    letter, guide = doc_of(brain, "sub/letter.txt"), doc_of(brain, "guide.md")
    assert letter.updated == iso(clock.now()) and letter.created < letter.updated
    assert guide.updated == guide.created  # unchanged: not said again
    assert brain.recall("fig jam")[0].updated == iso(clock.now())


def test_forgetting_a_document_keeps_it_out_until_the_file_changes(
    brain: Brain, folder: Path
) -> None:
    attach(brain, folder)
    brain.sync()
    row = doc_of(brain, "guide.md")
    removed = brain.forget(row.id)
    assert row.id in removed and any("#" in r for r in removed)
    [report] = brain.sync()
    assert report.excluded == ["guide.md"] and "guide.md" not in documents.documents_of(
        brain._context, "notes"
    )
    assert any(p == "guide.md" and "forgotten" in r for p, r in report.skipped)
    assert [s.excluded for s in brain.connectors()] == [1]
    [report] = brain.sync()
    assert not report.added
    (folder / "guide.md").write_text(GUIDE + "\nA new paragraph on mulch.\n")
    [report] = brain.sync()
    assert report.added == ["guide.md"]


def test_disconnect_with_forget_removes_what_it_brought(brain: Brain, folder: Path) -> None:
    attach(brain, folder)
    brain.sync()
    paths = [r.path for r in documents.documents_of(brain._context, "notes").values()]
    assert brain.disconnect("notes", forget=True) == 2
    assert not any((brain.root / p).exists() for p in paths)
    assert brain._context.caches.catalog.count("kind IN ('document', 'chunk')") == 0
    assert "notes" not in conn.declared(brain.root)
    assert brain.sync() == []


def test_disconnect_keeps_documents_and_stops_syncing(brain: Brain, folder: Path) -> None:
    attach(brain, folder)
    brain.sync()
    assert brain.disconnect("notes") == 0
    (folder / "guide.md").unlink()
    assert brain.sync() == []
    assert "guide.md" in documents.documents_of(brain._context, "notes")
    with pytest.raises(NotFound, match="no connector named 'notes'") as gone:
        brain.disconnect("notes")
    assert "no folder is connected; `brain connect FOLDER` connects one" in str(gone.value)


def test_a_connector_from_brain_yaml_alone_is_pending(brain: Brain, folder: Path) -> None:
    text = (brain.root / "brain.yaml").read_text()
    (brain.root / "brain.yaml").write_text(
        text.replace("connectors: {}", f"connectors:\n  notes:\n    path: {folder}\n")
    )
    [report] = brain.sync()
    assert report.state == "pending" and not report.added
    assert brain._context.caches.catalog.count("kind='document'") == 0
    [status] = brain.connectors()
    assert status.state == "pending" and "not confirmed" in status.reason
    from brain._doctor import diagnostics

    assert diagnostics(brain._context)["pending_connectors"] == 1


def test_moving_or_linking_the_folder_makes_it_pending(brain: Brain, folder: Path) -> None:
    attach(brain, folder)
    assert brain.connectors()[0].state == "connected"
    folder.rename(folder.with_name("elsewhere"))
    folder.mkdir()  # a new folder at the same place: another inode
    (folder / "guide.md").write_text(GUIDE)
    assert brain.connectors()[0].state == "pending"
    shutil.rmtree(folder)
    folder.symlink_to(folder.with_name("elsewhere"))  # the original, behind a link
    [status] = brain.connectors()
    assert status.state == "pending" and "moved" in status.reason
    assert brain.sync()[0].state == "pending"
    folder.unlink()
    assert brain.connectors()[0].state == "missing"


def test_confirming_keeps_the_comments_of_brain_yaml(brain: Brain, folder: Path) -> None:
    before = (brain.root / "brain.yaml").read_text()
    attach(brain, folder)
    attach(brain, folder.parent, name="all")
    after = (brain.root / "brain.yaml").read_text()
    assert "# experimental compressed tier for archived notes" in after
    assert "# folders declared here are read only after `brain connect` confirms them" in after
    kept = [line for line in before.splitlines() if not line.startswith("connectors:")]
    assert all(line in after.splitlines() for line in kept)
    data = yaml.safe_load(after)
    assert data["connectors"]["notes"]["path"] == str(folder)
    assert data["connectors"]["all"]["path"] == str(folder.parent)
    brain.disconnect("all")
    brain.disconnect("notes")
    assert (brain.root / "brain.yaml").read_text() == before


def test_links_binaries_caps_encodings_and_brainignore(
    brain: Brain, folder: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "private.md").write_text("the secret passphrase is swordfish\n")
    (folder / "link.md").symlink_to(outside / "private.md")
    (folder / "linked").symlink_to(outside)
    (folder / "blob.md").write_bytes(b"# x\x00\x01\x02 binary")
    (folder / "big.md").write_text("word " * 100)
    (folder / "latin.txt").write_bytes("caf\xe9 au lait".encode("latin-1"))
    # Windows Notepad's "Unicode": UTF-16 with its byte-order mark, read as text (not "binary").
    (folder / "notepad.txt").write_bytes("Crème brûlée for Sunday\r\n".encode("utf-16"))
    (folder / "wide.txt").write_bytes("Kayak rental at the lake\n".encode("utf-32"))
    (folder / "torn.txt").write_bytes(codecs.BOM_UTF16_LE + "torn".encode("utf-16-le")[:-1])
    (folder / "drafts").mkdir()
    (folder / "drafts" / "wip.md").write_text("half an idea\n")
    (folder / "scratch.tmp.md").write_text("scratch\n")
    (folder / ".brainignore").write_text("# not these\ndrafts/\n*.tmp.md\n")
    decl = attach(brain, folder, max_file_bytes=400)
    found = conn.scan(folder, decl.max_file_bytes, brain.root)
    summary = conn.describe("notes", found)
    assert "a link (never followed)" in summary and "larger than the 400-byte cap" in summary
    assert "ignored by .brainignore" in summary
    [report] = brain.sync()
    reasons = dict(report.skipped)
    assert reasons["link.md"] == reasons["linked"] == "a link (never followed)"
    assert reasons["blob.md"].startswith("binary")
    assert reasons["big.md"] == "larger than the 400-byte cap"
    assert reasons["latin.txt"].startswith("not UTF-8 text (bad byte at offset 3)")
    assert reasons["torn.txt"].startswith("not UTF-16 text")
    assert reasons["drafts"] == reasons["scratch.tmp.md"] == "ignored by .brainignore"
    assert sorted(report.added) == ["guide.md", "notepad.txt", "sub/letter.txt", "wide.txt"]
    assert not brain.recall("swordfish passphrase")
    [hit] = brain.recall("crème brûlée", k=1)
    assert "Crème brûlée for Sunday" in hit.snippet and "\r" not in hit.snippet
    assert "Kayak rental" in brain.recall("kayak rental", k=1)[0].snippet
    written = [p.name for p in (brain.root / "main/Knowledge/Sources/notes").rglob("*.md")]
    assert sorted(written) == ["guide.md", "letter.txt.md", "notepad.txt.md", "wide.txt.md"]


def test_unreadable_and_vanishing_files_mid_sync(brain: Brain, folder: Path) -> None:
    decl = attach(brain, folder)
    brain.sync()
    (folder / "guide.md").write_text(GUIDE + "\nMore.\n")
    (folder / "new.md").write_text("# New\n\nA file that will vanish.\n")
    found = conn.scan(folder, decl.max_file_bytes, brain.root)
    # Between listing and reading: one file is replaced by a folder, one vanishes.
    (folder / "guide.md").unlink()
    (folder / "guide.md").mkdir()
    (folder / "new.md").unlink()
    with brain._context.lock.hold():
        report = documents.sync_connector(brain._context, decl, found)
    reasons = dict(report.skipped)
    assert reasons["guide.md"].startswith("cannot be read")
    assert reasons["new.md"] == "vanished during sync"
    assert "guide.md" in documents.documents_of(brain._context, "notes")  # kept: it may come back
    assert "new.md" not in documents.documents_of(brain._context, "notes")  # nothing half-written
    assert not report.added and not report.updated


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_a_file_without_read_permission(brain: Brain, folder: Path) -> None:
    attach(brain, folder)
    (folder / "guide.md").chmod(0)
    try:
        [report] = brain.sync()
    finally:
        (folder / "guide.md").chmod(0o644)
    assert dict(report.skipped)["guide.md"].startswith("cannot be read")
    assert report.added == ["sub/letter.txt"]


def test_a_hand_edit_of_a_document_rechunks_its_body(brain: Brain, folder: Path) -> None:
    attach(brain, folder)
    brain.sync()
    row = doc_of(brain, "guide.md")
    path = brain.root / row.path
    path.write_text(path.read_text().replace("Loamy soil", "Sandy soil"))
    hit = brain.recall("sandy soil compost")[0]
    assert hit.parent == row.id and "Sandy soil" in hit.snippet
    assert hit.heading_path == ("Garden guide", "Soil")


def test_bad_input_for_connect(brain: Brain, folder: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    empty = tmp_path / "empty"
    empty.mkdir()
    inside = brain.root / "main" / "Knowledge"
    before = tree_digest(brain.root)
    cases = [
        (tmp_path / "nope", "no such folder"),
        (folder / "guide.md", "not a folder"),
        (inside, "inside the vault"),
        (brain.root, "inside the vault"),
        (empty, "nothing to read"),
    ]
    for path, message in cases:
        result = runner.invoke(app, ["connect", str(path), "--vault", str(brain.root)])
        assert result.exit_code == 2, result.output
        assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
        assert tree_digest(brain.root) == before
    with pytest.raises(InvalidInput, match="connector name"):
        brain.connect(folder, name="../x")
    attach(brain, folder)
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.md").write_text("a\n")
    before = tree_digest(brain.root)
    with pytest.raises(InvalidInput, match="already reads"):
        brain.connect(other, name="notes")
    with pytest.raises(InvalidInput, match="already connected as 'notes'"):
        brain.connect(folder, name="notes2")  # the same folder under a second name
    assert tree_digest(brain.root) == before


def test_a_folder_inside_or_holding_a_connected_one_is_refused(
    brain: Brain, tmp_path: Path
) -> None:
    """Connected twice over, the shared files would be two documents each, recalled twice."""
    pi = tmp_path / "pi"
    (pi / "notes" / "sub").mkdir(parents=True)
    (pi / "notes" / "sub" / "Soil.md").write_text("# Soil\n\nLoam with compost.\n")
    (pi / "todo.md").write_text("Turn the compost.\n")
    (tmp_path / "link").symlink_to(pi / "notes" / "sub")
    attach(brain, pi / "notes")
    before = tree_digest(brain.root)
    cases = [
        (pi, f"holds {pi / 'notes'}, already connected as 'notes'"),
        (pi / "notes" / "sub", f"lies inside {pi / 'notes'}, already connected as 'notes'"),
        (tmp_path / "link", "lies inside"),  # the real folder counts, not the link's name
    ]
    for path, message in cases:
        result = CliRunner().invoke(
            app, ["connect", str(path), "--name", "all", "--vault", str(brain.root)]
        )
        assert result.exit_code == 2, result.output
        assert message in result.stderr and "brain disconnect notes" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert tree_digest(brain.root) == before
    assert list(conn.declared(brain.root)) == ["notes"]
    brain.disconnect("notes")  # what the message says to do: then the parent may be read
    attach(brain, pi, name="all")
    brain.sync(["all"])
    assert set(documents.documents_of(brain._context, "all")) == {"notes/sub/Soil.md", "todo.md"}
    with pytest.raises(InvalidInput, match=r"lies inside .*already connected as 'all'"):
        brain.connect(pi / "notes")  # and the other way round


def test_a_folder_holding_the_vault_is_read_without_it(brain: Brain, tmp_path: Path) -> None:
    """The vault's notes are in the vault already: a parent folder skips it, not refused."""
    assert brain.root.parent == tmp_path
    (tmp_path / "plan.md").write_text("# Plan\n\nSow the beans in April.\n")
    attach(brain, tmp_path, name="home")
    [report] = brain.sync(["home"])
    assert ("vault", "the vault itself") in report.skipped
    assert set(documents.documents_of(brain._context, "home")) == {"plan.md"}


def test_cli_sync_and_connectors_json(brain: Brain, folder: Path) -> None:
    attach(brain, folder)
    runner = CliRunner()
    vault = ["--vault", str(brain.root)]
    result = runner.invoke(app, ["sync", "--json", *vault])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)["connectors"][0]
    assert sorted(data["added"]) == ["guide.md", "sub/letter.txt"]
    result = runner.invoke(app, ["connectors", "--json", *vault])
    [status] = json.loads(result.stdout)["connectors"]
    assert status["state"] == "connected" and status["documents"] == 2
    result = runner.invoke(app, ["sync", "nope", *vault])
    assert result.exit_code == 2 and "no connector named 'nope'" in result.stderr
    assert "(connectors: notes; `brain connectors` shows their state)" in result.stderr
    result = runner.invoke(app, ["disconnect", "notes", "--forget", *vault])
    assert result.exit_code == 0 and "forgot 2 document(s)" in result.stdout


def _shed(folder: Path) -> Path:
    other = folder.parent / "other"
    other.mkdir()
    (other / "plan.md").write_text("# Plan\n\nRepaint the shed.\n")
    return other


def test_a_renamed_partition_keeps_its_connectors(brain: Brain, folder: Path) -> None:
    attach(brain, folder)  # its documents go to partition 'main'
    brain.partition_create("work")
    attach(brain, _shed(folder), "other", partition="work")
    brain.sync()
    brain.partition_rename("main", "personal")
    assert conn.declared(brain.root)["notes"].partition == "personal"
    assert conn.declared(brain.root)["other"].partition == "work"  # not its: left as it was
    (folder / "new.md").write_text("# New\n\nThe quince tree needs pruning.\n")
    reports = {r.connector: r for r in brain.sync()}
    assert reports["notes"].state == "connected" and reports["notes"].added == ["new.md"]
    assert doc_of(brain, "new.md").path.startswith("personal/Knowledge/Sources/notes/")


def test_a_connector_whose_partition_is_gone_or_archived_is_not_read(
    brain: Brain, folder: Path
) -> None:
    attach(brain, folder)
    brain.partition_create("work")
    attach(brain, _shed(folder), "other", partition="work")
    brain.partition_archive("work")
    reports = {r.connector: r for r in brain.sync()}
    assert reports["other"].state == "archived" and "'work' is archived" in reports["other"].reason
    assert reports["notes"].state == "connected" and "guide.md" in reports["notes"].added
    brain.partition_restore("work")
    settings = brain.root / "brain.yaml"  # edited by hand to a partition that is not there
    settings.write_text(settings.read_text().replace("partition: work", "partition: wrok"))
    [report] = brain.sync(["other"])
    assert report.state == "missing"
    assert "partition 'wrok' is not in the vault (connectors.other.partition" in report.reason
    assert not (brain.root / "wrok").exists()  # not made again in passing


def test_an_empty_file_is_nothing_to_remember_yet(brain: Brain, folder: Path) -> None:
    (folder / "empty.md").touch()
    (folder / "blank.txt").write_text("\ufeff \n\n\t\n")
    decl = attach(brain, folder)
    found = conn.scan(folder, decl.max_file_bytes, brain.root)
    # The preview counts neither (a file of white space is read to see it holds no text).
    assert {"empty.md", "blank.txt"}.isdisjoint(f.rel for f in found.files)
    [report] = brain.sync()
    reasons = dict(report.skipped)
    assert reasons["empty.md"] == reasons["blank.txt"] == conn.EMPTY
    assert sorted(documents.documents_of(brain._context, "notes")) == ["guide.md", "sub/letter.txt"]
    assert all(h.title != "empty" for h in brain.recall("Lisbon trip"))
    # An editor saving in place empties the file for a moment: its document stays as it was.
    (folder / "guide.md").write_text("")
    [report] = brain.sync()
    assert dict(report.skipped)["guide.md"] == conn.EMPTY and not report.removed
    assert "Tomatoes want deep watering" in brain.recall("deep watering tomatoes")[0].snippet
    (folder / "guide.md").write_text("# Garden guide\n\nRaised beds this year.\n")
    [report] = brain.sync()
    assert report.updated == ["guide.md"]
    assert "Raised beds" in brain.recall("raised beds", k=1)[0].snippet

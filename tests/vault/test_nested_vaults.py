"""Folders that are not partitions: another vault moved into this one, and the top-level
folders Obsidian fills with its own files (attachments, drawings, daily notes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from brain._brain import open_vault
from brain._clock import FixedClock
from brain._indexes import catchup
from brain.testing import NO_AUTOSTART, new_vault


def _inner_vault(tmp_path: Path, clock: FixedClock) -> Path:
    """A vault of its own with five notes about otters, and the index.json its brain wrote."""
    inner = new_vault(tmp_path / "Projects vault", clock.now(), daemon=NO_AUTOSTART)
    brain = open_vault(inner, clock=clock)
    try:
        for n in range(5):
            brain.remember(
                f"Otters hold hands while they sleep ({n})", title=f"Otters {n}", node="Otters"
            )
    finally:
        brain.close()
    assert (inner / "main/Otters/index.json").is_file()
    return inner


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_vault_moved_into_a_folder_of_another_is_neither_read_nor_written_by_it(
    vault: Path, tmp_path: Path, clock: FixedClock
) -> None:
    moved = vault / "main/Knowledge/Projects"
    _inner_vault(tmp_path, clock).rename(moved)  # mv, as a person tidies folders
    before = _files(moved)
    brain = open_vault(vault, clock=clock)
    try:
        brain.remember("Beavers build dams across streams", title="Beavers")
        inside = "main/Knowledge/Projects/"
        assert not [h for h in brain.recall("otters hold hands") if h.path.startswith(inside)]
        assert not [row for row in brain.list() if row.path.startswith(inside)]
        assert not [rel for rel, _st in brain._context.store.walk() if rel.startswith(inside)]
        brain.reindex(embed=False)  # settles every index.json of the partition
        report = brain.doctor()
        assert [line.split(":")[0] for line in report.nested] == ["main/Knowledge/Projects"]
        assert not report.unknown
    finally:
        brain.close()
    assert _files(moved) == before  # its index.json and notes as its own brain left them


def test_a_vault_moved_to_the_top_of_another_is_no_partition(
    vault: Path, tmp_path: Path, clock: FixedClock
) -> None:
    _inner_vault(tmp_path, clock).rename(vault / "Old vault")
    brain = open_vault(vault, clock=clock)
    try:
        assert [p.name for p in brain.partitions()] == ["main"]
        assert not [rel for rel, _st in brain._context.store.walk() if "Otters" in rel]
        assert [line.split(":")[0] for line in brain.doctor().nested] == ["Old vault"]
    finally:
        brain.close()


def test_a_vault_moved_in_is_left_out_by_the_folder_check_and_the_watchers_paths(
    vault: Path, tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catchup, "QUICK_ABOVE", 0)  # the check by folders from the first file
    brain = open_vault(vault, clock=clock)
    try:
        brain.remember("Beavers build dams across streams", title="Beavers")
        brain._context.catch_up(force=True)  # walked: its folders are recorded
        brain._context.catch_up()
        _inner_vault(tmp_path, clock).rename(vault / "main/Knowledge/Projects")
        brain._context.catch_up()
        assert brain._context.last_catch_up["how"] == "folders"
        hand = "main/Knowledge/Projects/main/Otters/By hand.md"
        (vault / hand).write_text("Otters keep a favourite stone.\n")
        brain._context.catch_up_paths([hand])  # as the daemon's watcher names a changed file
        titles = [row.title for row in brain.list()]
        assert "Beavers" in titles and not [t for t in titles if t.startswith("Otters")]
    finally:
        brain.close()


def _settings(vault: Path, rel: str, value: object) -> None:
    (vault / rel).parent.mkdir(parents=True, exist_ok=True)
    (vault / rel).write_text(json.dumps(value))


def test_the_attachments_and_drawings_folders_obsidian_names_are_no_partitions(
    vault: Path, clock: FixedClock
) -> None:
    _settings(vault, ".obsidian/app.json", {"attachmentFolderPath": "Attachments"})
    _settings(
        vault, ".obsidian/plugins/obsidian-excalidraw-plugin/data.json", {"folder": "Excalidraw/"}
    )
    (vault / "Attachments").mkdir()
    (vault / "Attachments/Pasted image 20261207.png").write_bytes(b"\x89PNG\r\n")
    (vault / "Excalidraw").mkdir()
    (vault / "Excalidraw/Drawing 2026-12-07.excalidraw.md").write_text(
        "---\nexcalidraw-plugin: parsed\n---\n"
    )
    (vault / "Daily").mkdir()  # named by no setting: a partition as before
    brain = open_vault(vault, clock=clock)
    try:
        assert [p.name for p in brain.partitions()] == ["Daily", "main"]
        brain.sleep()
        assert sorted(p.name for p in (vault / "Attachments").iterdir()) == [
            "Pasted image 20261207.png"
        ]  # no Insights/ log or graph written into the editor's folder
        assert brain.doctor().ok
    finally:
        brain.close()


def test_a_partition_brain_made_stays_one_whatever_obsidian_puts_there(
    vault: Path, clock: FixedClock
) -> None:
    _settings(vault, ".obsidian/app.json", {"attachmentFolderPath": "main"})
    _settings(vault, ".obsidian/plugins/obsidian-excalidraw-plugin/data.json", {"folder": "./"})
    brain = open_vault(vault, clock=clock)
    try:
        made = brain.remember("The attic key is under the blue pot", title="Attic key")
        assert [p.name for p in brain.partitions()] == ["main"]
        assert [h.id for h in brain.recall("attic key")][:1] == [made.id]
    finally:
        brain.close()


def test_doctor_says_how_to_recall_daily_notes_kept_in_a_top_level_folder(
    vault: Path, clock: FixedClock
) -> None:
    _settings(vault, ".obsidian/daily-notes.json", {"folder": "Daily", "format": "YYYY-MM-DD"})
    _settings(
        vault,
        ".obsidian/plugins/periodic-notes/data.json",
        {
            "daily": {"enabled": True, "folder": "Daily"},
            "weekly": {"enabled": False, "folder": "W"},
        },
    )
    (vault / "Daily").mkdir()
    (vault / "Daily/2026-12-07.md").write_text("Met Priya about the Falcon launch.\n")
    brain = open_vault(vault, clock=clock)
    try:
        report = brain.doctor()
    finally:
        brain.close()
    assert report.ok  # a choice the person may keep: said, not a problem
    assert [line.split(":")[0] for line in report.daily] == ["Daily"]  # once, both settings
    assert (
        "(.obsidian/daily-notes.json, .obsidian/plugins/periodic-notes/data.json)"
        in (report.daily[0])
    )
    assert "set the folder to main/Daily in Obsidian" in report.daily[0]
    assert "`--partition Daily`" in report.daily[0]
    assert report.to_json()["daily"] == list(report.daily)

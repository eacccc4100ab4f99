"""`brain sleep`: idempotent, dry-run safe, a daily log, compaction, splits, and concurrency."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from brain._brain import Brain, open_vault
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._errors import InvalidInput
from brain._model import Note, iso, new_id
from brain._upkeep.sleep import sleep_lock
from brain.testing import T0, tree_digest

_register()
DAY = timedelta(days=1)
TODAY = f"{T0:%Y-%m-%d}"
ROOT = Path(__file__).resolve().parents[2]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def cache_bytes(vault: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted((vault / ".brain").rglob("*")) if p.is_file())


def test_a_second_pass_at_the_same_time_does_nothing(brain: Brain, clock: FixedClock) -> None:
    for n in range(5):
        brain.remember(f"thing {n}", title=f"Thing {n}")
    clock.set(T0 + 30 * DAY)
    brain.remember("new today", title="Fresh")
    first = brain.sleep()
    assert first.changed and len(first.aged) == 5 and first.logs
    digest = tree_digest(brain.root)
    second = brain.sleep()
    assert not second.changed
    assert second.aged == [] and second.moved == [] and second.logs == []
    assert tree_digest(brain.root) == digest


def test_dry_run_changes_nothing_and_says_what_it_would_do(brain: Brain, clock: FixedClock) -> None:
    note = brain.remember("will age", title="Ager")
    clock.set(T0 + 30 * DAY)
    digest = tree_digest(brain.root)
    report = brain.sleep(dry_run=True)
    assert [(a.id, a.after) for a in report.aged] == [(note.id, "dormant")]
    assert report.logs and not report.compacted
    assert tree_digest(brain.root) == digest
    assert brain._context.get(note.id).status == "active"


def test_the_daily_log_is_one_snapshot_regenerated_in_place(
    brain: Brain, clock: FixedClock
) -> None:
    old = brain.remember("old thing", title="Old thing")
    doomed = brain.remember("zorblaxquint is a secret word", title="Doomed zorblaxquint")
    clock.set(T0 + 21 * DAY)
    day = f"{clock.now():%Y-%m-%d}"
    created = brain.remember("a new idea", title="New idea")
    with brain._context.lock.hold():  # a correction, as the corrections use case writes one
        fixed = Note(
            meta={
                "id": new_id(clock.now()),
                "title": "Old thing",
                "kind": "titled",
                "status": "active",
                "created": iso(clock.now()),
                "touched": iso(clock.now()),
                "supersedes": old.id,
            },
            body="corrected thing\n",
            path="main/Knowledge/Inbox/Old thing (corrected).md",
        )
        brain._context.save(fixed)
        brain._context.save(brain._context.get(old.id).with_meta(status="superseded"))
    brain.forget(doomed.id)
    brain.sleep()
    log_file = brain.root / f"main/Insights/Logs/{day}.md"
    text = log_file.read_text()
    assert "## Created (2)" in text and "New idea" in text and created.id in text
    assert f"## Corrected (1)\n\n- Old thing: `{old.id}` → `{fixed.id}`" in text
    assert "## Forgotten (1)\n\n- 1 note(s); neither ids nor titles are kept" in text
    assert "zorblaxquint" not in text and doomed.id not in text, "forgotten: counted alone"
    assert "## Aged" not in text
    log_id = brain._context.store.read(f"main/Insights/Logs/{day}.md").id
    # Later that day more happens: the same file is rewritten, not appended to.
    clock.set(T0 + 21 * DAY + timedelta(hours=2))
    brain.remember("another idea", title="Another idea")
    brain.sleep()
    again = brain._context.store.read(f"main/Insights/Logs/{day}.md")
    assert again.id == log_id and again.kind == "log"
    assert again.body.count("## Created") == 1 and "## Created (3)" in again.body
    assert again.body.count("# Log") == 1
    assert len(list((brain.root / "main/Insights/Logs").glob("*.md"))) == 1


def test_the_log_lists_aging_and_hides_private_titles(brain: Brain, clock: FixedClock) -> None:
    public = brain.remember("ordinary", title="Ordinary plan")
    hidden = brain.root / "main/Knowledge/Inbox/Hidden.md"
    hidden.write_text(
        f"---\nid: {new_id(T0)}\ntitle: Hidden diagnosis\nkind: titled\nvisibility: private\n"
        f"created: {iso(T0)}\ntouched: {iso(T0)}\n---\nprivate text\n"
    )
    clock.set(T0 + 21 * DAY)
    brain.sleep()
    text = (brain.root / f"main/Insights/Logs/{clock.now():%Y-%m-%d}.md").read_text()
    assert f"## Aged (2)\n\n- Ordinary plan: `{public.id}`: active → dormant" in text
    assert "- 1 private or local-only note(s)" in text
    assert "Hidden diagnosis" not in text


def test_an_idle_day_writes_no_log(brain: Brain, clock: FixedClock) -> None:
    brain.sleep()  # the first day's log: the template's notes were created then
    clock.set(T0 + 3 * DAY)
    report = brain.sleep()
    assert report.logs == []
    assert [p.name for p in (brain.root / "main/Insights/Logs").glob("*.md")] == [f"{TODAY}.md"]


def test_after_sleep_no_byte_of_a_forgotten_note_remains_under_brain(
    brain: Brain, clock: FixedClock
) -> None:
    for n in range(20):
        brain.remember(f"ordinary memory {n}", title=f"Ordinary {n}")
    phrase = b"xylophquartz"
    doomed = brain.remember("the xylophquartz ledger lives in the attic", title="xylophquartz")
    brain.sleep()
    brain.forget(doomed.id)
    assert phrase in cache_bytes(brain.root), "sanity: deletion alone leaves the text behind"
    brain.sleep()
    for path in (brain.root / ".brain").rglob("*"):
        if path.is_file():
            assert phrase not in path.read_bytes(), path
    assert not any(phrase in p.read_bytes() for p in brain.root.rglob("*") if p.is_file())
    hits = brain.recall("ordinary memory", k=50)
    assert len([h for h in hits if h.kind == "titled"]) == 20
    assert brain.doctor().ok


def crowd(brain: Brain, node: str) -> dict[str, list[str]]:
    groups = {"pasta": [], "bread": [], "soup": []}
    for n in range(60):
        topic = list(groups)[n % 3]
        note = brain.remember(
            f"A {topic} recipe, number {n}: mix, rest and cook the {topic} well.",
            title=f"Recipe {n} {topic}",
            node=node,
        )
        groups[topic].append(note.id)
    return groups


def test_a_crowded_node_gets_a_split_suggestion(brain: Brain, clock: FixedClock) -> None:
    groups = crowd(brain, "Knowledge/Domains/Cooking")
    report = brain.sleep()
    [suggestion] = report.splits
    assert suggestion.node == "Knowledge/Domains/Cooking" and suggestion.memories == 60
    assert {c.name: sorted(c.ids) for c in suggestion.clusters} == {
        "Bread": sorted(groups["bread"]),
        "Pasta": sorted(groups["pasta"]),
        "Soup": sorted(groups["soup"]),
    }
    log = (brain.root / f"main/Insights/Logs/{TODAY}.md").read_text()
    assert "## Split suggestions (1)" in log and "Bread (20)" in log


def test_split_apply_moves_files_and_nothing_else(brain: Brain, cli: CliRunner) -> None:
    groups = crowd(brain, "Knowledge/Domains/Cooking")
    before = {
        oid: (
            brain._context.row(oid).path,
            brain._context.store.read_bytes(brain._context.row(oid).path),
        )
        for ids in groups.values()
        for oid in ids
    }
    other = {p: p.read_bytes() for p in brain.root.rglob("*.md") if "Cooking" not in str(p)}
    result = cli.invoke(app, ["split", "Knowledge/Domains/Cooking", "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["applied"] is False
    assert all(brain._context.store.exists(path) for path, _ in before.values())
    _suggestion, moves = brain.split("Knowledge/Domains/Cooking", apply=True)
    assert len(moves) == 60
    for topic, ids in groups.items():
        for oid in ids:
            row = brain._context.row(oid)
            old_path, old_bytes = before[oid]
            assert row.node == f"Knowledge/Domains/Cooking/{topic.title()}"
            assert brain._context.store.read_bytes(row.path) == old_bytes
            assert not brain._context.store.exists(old_path)
    assert {p: p.read_bytes() for p in other} == other
    assert brain.recall("bread recipe", node="Knowledge/Domains/Cooking/Bread")
    assert brain.doctor().ok
    with pytest.raises(InvalidInput, match="holds 0 memories"):
        brain.split("Knowledge/Domains/Cooking")


def test_split_refuses_a_sub_node_name_taken_by_a_file_before_moving_anything(
    brain: Brain, cli: CliRunner
) -> None:
    crowd(brain, "Knowledge/Domains/Cooking")
    (brain.root / "main/Knowledge/Domains/Cooking/Soup").write_text("a person's file\n")
    digest = tree_digest(brain.root)
    result = cli.invoke(app, ["split", "Knowledge/Domains/Cooking", "--apply"])
    assert result.exit_code == 2, result.output
    assert "main/Knowledge/Domains/Cooking/Soup is taken by a file" in result.output
    assert tree_digest(brain.root) == digest


def test_split_refuses_small_nodes_and_bad_names(brain: Brain, cli: CliRunner) -> None:
    brain.remember("one", title="One")
    digest = tree_digest(brain.root)
    for args, words in [
        (["split", "Knowledge/Inbox", "--apply"], "a split is suggested from 50"),
        (["split", "../outside", "--apply"], "may not start with '.'"),
        (["split", "main/Knowledge/Inbox"], "without 'main/': 'Knowledge/Inbox'"),  # a path
        (["split", "Knowlege"], "node 'Knowlege' holds no memories in partition 'main'"),
    ]:
        result = cli.invoke(app, args)
        assert result.exit_code == 2 and words in result.output, result.output
    assert tree_digest(brain.root) == digest


def test_cli_sleep_table_json_quiet_and_bad_now(vault: Path, cli: CliRunner) -> None:
    brain = open_vault(vault, clock=FixedClock(T0))
    brain.remember("gets old", title="Old")
    brain.close()
    later = iso(T0 + 30 * DAY)
    result = cli.invoke(app, ["sleep", "--dry-run", "--now", later])
    assert result.exit_code == 0
    assert "lifecycle" in result.output and "1 to dormant" in result.output
    assert "dry run" in result.output
    result = cli.invoke(app, ["sleep", "--now", later, "--json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["now"] == later and [a["to"] for a in data["aged"]] == ["dormant"]
    result = cli.invoke(app, ["sleep", "--now", later, "--quiet"])
    assert result.exit_code == 0 and result.output == ""
    digest = tree_digest(vault)
    for bad in ("yesterday", "2026-13-45T00:00:00Z", "", "0001-01-01T00:00:00Z"):
        result = cli.invoke(app, ["sleep", "--now", bad])
        assert result.exit_code == 2 and "--now" in result.output, bad
    assert tree_digest(vault) == digest


def test_a_second_sleep_waits_for_the_first(brain: Brain, vault: Path) -> None:
    with sleep_lock(brain._context):
        proc = subprocess.Popen(
            [sys.executable, "-m", "brain", "sleep", "--vault", str(vault)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env(),
            text=True,
        )
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "waiting for it to finish" in line
        assert proc.poll() is None, "it waits while the other sleep runs"
    out, _err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "compaction" in out


WRITER = """
import sys
from pathlib import Path
from brain._brain import open_vault
brain = open_vault(Path(sys.argv[1]))
for n in range(int(sys.argv[2])):
    brain.remember(f"memory {n} from the writer", title=f"written {n}")
brain.close()
"""


def test_sleep_beside_a_writer_process_loses_no_note(brain: Brain, vault: Path) -> None:
    for n in range(30):
        brain.remember(f"to be forgotten {n}", title=f"gone {n}")
    ids = [r.id for r in brain.list(node="Knowledge/Inbox")]
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(vault), "150"], env=env())
    sleeps = 0
    while writer.poll() is None or sleeps == 0:
        if ids:
            brain.forget(ids.pop())  # deletions give every sleep something to compact
        result = subprocess.run(
            [sys.executable, "-m", "brain", "sleep", "--quiet", "--vault", str(vault)],
            env=env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
        sleeps += 1
    assert writer.wait(timeout=600) == 0
    brain.sleep()
    titles = {r.title for r in brain.list(node="Knowledge/Inbox", limit=1000)}
    assert {f"written {n}" for n in range(150)} <= titles
    assert len(brain.recall("memory from the writer", k=100)) == 100
    assert brain.doctor().ok


def test_sleep_regenerates_the_graph_and_settles_index_files(brain: Brain, vault: Path) -> None:
    notes = [
        brain.remember(f"Pruning roses in spring, lesson {n}", node="Knowledge/Garden")
        for n in range(6)
    ]
    brain.relate(notes[0].id, "supports", notes[1].id)
    index = vault / "main/Knowledge/index.json"
    assert index.is_file()
    index.unlink()  # lost by hand, or a merge that dropped it
    graph = vault / "main/Insights/Graph.md"
    assert "supports" not in graph.read_text()
    report = brain.sleep()
    steps = dict(report.steps)
    assert "index.json" in steps and "graph" in steps
    assert index.is_file() and json.loads(index.read_text())["total_memory_count"] == 6
    assert "supports" in graph.read_text()
    again = brain.sleep()
    assert dict(again.steps)["index.json"] == "0 written, 0 removed"


def test_upkeep_output_is_recalled_only_where_asked_for(brain: Brain, clock: FixedClock) -> None:
    # The daily log and Graph.md list the titles of the notes they tell of: recall found them
    # beside the notes for the notes' own words.
    kayak = brain.remember("The kayak club meets on Thursdays", title="Kayak club")
    other = brain.remember("Bring the red paddle", title="Paddle")
    brain.relate(kayak.id, "references", other.id)
    brain.write_graph()
    clock.set(clock.now() + timedelta(hours=1))
    brain.sleep()
    day = f"{clock.now():%Y-%m-%d}"
    assert "Kayak club" in (brain.root / f"main/Insights/Logs/{day}.md").read_text()
    assert "Kayak club" in (brain.root / "main/Insights/Graph.md").read_text()
    for mode in ("hybrid", "text"):
        hits = brain.recall("kayak club", k=10, mode=mode)
        assert kayak.id in [h.id for h in hits] and all(h.kind != "log" for h in hits)
    asked = brain.recall("kayak club", k=10, node="Insights")
    assert {h.title for h in asked} == {day, "Graph"}
    scoped = brain.recall("kayak club", k=10, scope="Insights/Logs")
    assert [h.title for h in scoped] == [day]


@pytest.mark.parametrize("lost", ["deleted .brain/", "sleep later, then earlier"])
def test_a_log_written_again_never_unsays_what_the_journal_no_longer_holds(
    vault: Path, clock: FixedClock, lost: str
) -> None:
    brain = open_vault(vault, clock=clock)
    aged = brain.remember("will age", title="Ager")
    hidden = brain.remember("private will age", title="Hidden ager")
    brain.set_field(hidden.id, "visibility", "private")
    old = brain.remember("first words", title="Fixed")
    clock.set(T0 + 30 * DAY)
    fixed = brain.correct(old.id, "second words")
    brain.forget(brain.remember("gone soon", title="Doomed").id)
    brain.sleep()
    log_file = vault / f"main/Insights/Logs/{clock.now():%Y-%m-%d}.md"
    said = log_file.read_text()
    assert f"- Ager: `{aged.id}`: active → dormant" in said and "## Aged (2)" in said
    assert f"- Fixed: `{old.id}` → `{fixed.id}`" in said and "## Forgotten (1)" in said
    if lost == "deleted .brain/":  # the journal is a cache: `brain reindex` from nothing
        brain.close()
        shutil.rmtree(vault / ".brain")
        brain = open_vault(vault, clock=clock)
    else:  # a pass a week on trims the journal; then one back on the logged day
        when = clock.now()
        clock.set(when + 9 * DAY)
        brain.sleep()
        clock.set(when)
    brain.remember("a later thought", title="Later")
    brain.sleep()
    again = log_file.read_text()
    for line in said.splitlines():
        if line.startswith(("- ", "## ")) and not line.startswith("## Created"):
            assert line in again, f"the log no longer says {line!r}"
    assert "Later" in again
    brain.forget(aged.id)  # struck from the log, and kept out of it by the next pass
    brain.sleep()
    assert aged.id not in log_file.read_text() and "Ager" not in log_file.read_text()
    brain.close()


def test_a_nightly_pass_after_midnight_logs_what_the_day_before_it_did(
    brain: Brain, clock: FixedClock
) -> None:
    evening = T0.replace(hour=0) + 21 * DAY + timedelta(hours=20)
    clock.set(evening)
    old = brain.remember("the old plan", title="Old plan")
    doomed = brain.remember("quorvantel is gone", title="Doomed")
    written = brain.remember("an evening idea", title="Evening idea")
    fixed = brain.correct(old.id, "the plan, corrected")
    brain.forget(doomed.id)
    clock.set(evening + timedelta(hours=7))  # 03:00 the next day, as a nightly cron runs it
    report = brain.sleep()
    day = f"{evening:%Y-%m-%d}"
    assert f"main/Insights/Logs/{day}.md" in report.logs
    text = (brain.root / f"main/Insights/Logs/{day}.md").read_text()
    assert "Evening idea" in text and written.id in text
    assert f"## Corrected (1)\n\n- Old plan: `{old.id}` → `{fixed.id}`" in text
    assert "## Forgotten (1)" in text and "quorvantel" not in text and doomed.id not in text
    assert not brain.sleep().logs, "the day before is written again only when it changes"


def test_writing_the_day_before_again_keeps_its_split_suggestions(
    brain: Brain, clock: FixedClock
) -> None:
    crowd(brain, "Knowledge/Domains/Cooking")
    brain.sleep()
    clock.set(T0 + timedelta(hours=2))
    late = brain.remember("a late thought", title="Late")  # after the day's pass
    clock.set(T0 + DAY)
    assert f"main/Insights/Logs/{TODAY}.md" in brain.sleep().logs
    log = (brain.root / f"main/Insights/Logs/{TODAY}.md").read_text()
    assert late.id in log
    assert "## Split suggestions (1)" in log and "Bread (20)" in log

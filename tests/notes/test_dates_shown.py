"""The dates brain shows are the person's days, and a memory said again says when
(docs/lab/probe-timezones.md, session 9)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from brain._brain import Brain
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._mcp_tools import hit_json

_register()

AUCKLAND = ZoneInfo("Pacific/Auckland")


def test_a_note_written_on_the_eighth_in_auckland_lists_and_recalls_as_the_eighth_there(
    brain: Brain, clock: FixedClock, cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock.set(datetime(2026, 12, 8, 8, 0, tzinfo=AUCKLAND))  # 19:00 on the 7th in UTC
    note = brain.remember("Morning swim at the harbour baths", title="Swim")
    assert note.created == "2026-12-07T19:00:00Z"
    monkeypatch.setenv("TZ", "Pacific/Auckland")
    listed = cli.invoke(app, ["list", "--node", "Knowledge/Inbox"])
    recalled = cli.invoke(app, ["recall", "harbour swim"])
    assert f"{note.id}  2026-12-08  titled" in listed.output, listed.output
    assert f"2026-12-08 · {note.path}" in recalled.output, recalled.output
    # The same note read in UTC is of the 7th; --json keeps the stored UTC time.
    monkeypatch.setenv("TZ", "UTC")
    assert f"{note.id}  2026-12-07  titled" in cli.invoke(app, ["list"]).output
    monkeypatch.setenv("TZ", "Pacific/Auckland")
    as_json = cli.invoke(app, ["list", "--json"]).output
    assert '"created": "2026-12-07T19:00:00Z"' in as_json


def test_a_fact_said_again_after_it_changed_reads_as_the_current_one(
    brain: Brain, clock: FixedClock, cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock.set(datetime(2026, 1, 1, 12, tzinfo=UTC))
    berlin = brain.remember("Anna lives in Berlin")
    clock.set(datetime(2026, 1, 20, 12, tzinfo=UTC))
    lisbon = brain.remember("Anna moved to Lisbon, she lives in Lisbon now")
    clock.set(datetime(2026, 2, 9, 12, tzinfo=UTC))
    again = brain.remembered("Anna lives in Berlin.")
    assert (again.outcome, again.note.id) == ("unchanged", berlin.id)
    clock.set(datetime(2026, 2, 10, 12, tzinfo=UTC))
    brain.expand(berlin.id)  # a read touches the note but says nothing new
    hits = {h.id: h for h in brain.recall("where does Anna live", k=5)}
    assert hits[berlin.id].created == "2026-01-01T12:00:00Z"
    assert hits[berlin.id].updated == "2026-02-09T12:00:00Z"
    assert hits[lisbon.id].to_json()["updated"] == "2026-01-20T12:00:00Z"
    assert hit_json(hits[berlin.id])["updated"] == "2026-02-09T12:00:00Z"
    monkeypatch.setenv("TZ", "UTC")
    shown = cli.invoke(app, ["recall", "where does Anna live"]).output
    assert f"2026-01-01, updated 2026-02-09 · {berlin.path}" in shown, shown
    assert f"2026-01-20 · {lisbon.path}" in shown, shown


def test_a_titled_note_added_to_on_day_forty_says_so_beside_day_one(
    brain: Brain, clock: FixedClock
) -> None:
    clock.set(datetime(2026, 1, 1, 9, tzinfo=UTC))
    note = brain.remember("Ferns need shade", title="Garden")
    clock.set(datetime(2026, 2, 9, 9, tzinfo=UTC))
    added = brain.remembered("Tomatoes need full sun", title="Garden")
    assert added.outcome == "appended"
    assert added.note.meta["updated"] == "2026-02-09T09:00:00Z"
    listed = {r.id: r for r in brain.list(node="Knowledge/Inbox")}
    assert (listed[note.id].created, listed[note.id].updated) == (
        "2026-01-01T09:00:00Z",
        "2026-02-09T09:00:00Z",
    )
    [hit] = [h for h in brain.recall("tomatoes sun", k=3) if h.id == note.id]
    assert hit.updated == "2026-02-09T09:00:00Z"

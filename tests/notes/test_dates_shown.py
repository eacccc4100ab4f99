"""The dates brain shows are the person's days, and a memory said again says when
(docs/lab/probe-timezones.md, session 9)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from brain._brain import Brain
from brain._cli import _register, app
from brain._clock import FixedClock

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

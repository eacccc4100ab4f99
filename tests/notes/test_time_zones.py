"""A person's day is their own calendar day, wherever they are (docs/lab/probe-timezones.md)."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from typer.testing import CliRunner

from brain._brain import Brain
from brain._cli import _register, app
from brain._clock import FixedClock, SystemClock, local_zone
from brain._git import merge
from brain._recall.when import TIME_PRIOR, parse_time

_register()

LOS_ANGELES = ZoneInfo("America/Los_Angeles")
AUCKLAND = ZoneInfo("Pacific/Auckland")
BERLIN = ZoneInfo("Europe/Berlin")


def test_a_diary_entry_at_half_past_eleven_at_night_in_los_angeles_is_of_that_day(
    brain: Brain, clock: FixedClock, vault: Path
) -> None:
    clock.set(datetime(2026, 12, 7, 23, 30, tzinfo=LOS_ANGELES))  # 07:30 on the 8th in UTC
    note = brain.remember("Late call with the kayak club", node="LLM/Diary")
    assert note.path == "main/LLM/Diary/2026-12-07.md"
    assert note.created == "2026-12-08T07:30:00Z"  # stored times stay UTC
    assert "## 23:30:00-08:00\n\nLate call" in (vault / note.path).read_text(encoding="utf-8")


def test_the_same_moment_is_two_days_for_two_people_far_apart(
    cli: CliRunner, vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # UTC+14 and UTC-12 are 26 hours apart: at any moment their calendar days differ.
    paths = {}
    for zone in ("Etc/GMT-14", "Etc/GMT+12"):
        monkeypatch.setenv("TZ", zone)
        before = datetime.now(ZoneInfo(zone)).date().isoformat()
        done = cli.invoke(app, ["remember", f"Written in {zone}", "--node", "LLM/Diary", "--json"])
        after = datetime.now(ZoneInfo(zone)).date().isoformat()
        assert done.exit_code == 0, done.output
        paths[zone] = json.loads(done.output)["path"]
        assert paths[zone] in {f"main/LLM/Diary/{day}.md" for day in (before, after)}
    assert paths["Etc/GMT-14"] != paths["Etc/GMT+12"]


def test_the_system_clock_tells_the_time_in_the_machines_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TZ", "Pacific/Auckland")
    assert local_zone() == AUCKLAND
    now = SystemClock().now()
    assert now.utcoffset() == now.astimezone(AUCKLAND).utcoffset()
    monkeypatch.setenv("TZ", "UTC")
    assert not SystemClock().now().utcoffset()


def test_yesterday_asked_just_after_midnight_in_berlin_is_the_day_that_just_ended() -> None:
    window = parse_time("what did I do yesterday", datetime(2026, 12, 8, 0, 30, tzinfo=BERLIN))
    assert window is not None
    assert (window.start, window.end) == (date(2026, 12, 7), date(2026, 12, 8))
    # 00:30 on the 7th in Berlin is still the 6th in UTC: it was yesterday all the same.
    assert window.tier("2026-12-06T23:30:00Z") == 0
    # 23:30 on the 5th in UTC is already the 6th in Berlin: the day before yesterday.
    assert window.tier("2026-12-05T23:30:00Z") == 2
    start, end = window.bounds()
    assert start <= "2026-12-06T23:00:00Z" < end


def test_yesterday_asked_at_half_past_midnight_in_berlin_lifts_what_was_said_then(
    brain: Brain, clock: FixedClock
) -> None:
    clock.set(datetime(2026, 12, 7, 0, 10, tzinfo=BERLIN))  # still the 6th in UTC
    leash = brain.remember("Fixed the paddle leash on the kayak", title="Paddle leash").id
    clock.set(datetime(2026, 12, 6, 12, 0, tzinfo=BERLIN))
    paddle = brain.remember("Bought a new paddle for the kayak", title="New paddle").id
    clock.set(datetime(2026, 12, 8, 0, 30, tzinfo=BERLIN))
    hits = brain.recall("what did I do with the kayak yesterday", k=2, explain=True)
    factors = {h.id: (h.explain or {}).get("time") for h in hits}
    assert factors == {leash: TIME_PRIOR, paddle: 1.0}


def test_blocks_written_in_two_zones_merge_in_the_order_they_were_written() -> None:
    def day(*blocks: str) -> str:
        body = "".join(f"## {b}\n\ntext at {b}\n\n" for b in blocks)
        return f"---\nid: 01JE2Z0000000000000000000A\nkind: dated\n---\n# 2026-12-07\n\n{body}"

    base = day()
    # 09:00 in Berlin is 08:00Z; 07:00 in New York is 12:00Z; 10:00Z between them.
    merged = merge.merge_dated(base, day("09:00:00+01:00"), day("07:00:00-05:00", "10:00:00Z"))
    stamps = re.findall(r"^## (.+)$", merged, re.M)
    assert stamps == ["09:00:00+01:00", "10:00:00Z", "07:00:00-05:00"]


def test_hand_written_created_times_sort_as_moments_and_fall_on_their_day(
    brain: Brain, clock: FixedClock, vault: Path
) -> None:
    ids = {}
    for name in ("Offset", "Zulu", "Spaced", "Fraction", "Dated"):
        ids[name] = brain.remember(f"{name} note about the harbour", title=name).id
    written = {
        "Offset": "2026-12-07T10:00:00+01:00",  # 09:00Z
        "Zulu": "2026-12-07T09:30:00Z",
        "Spaced": "2026-12-07 08:00",  # naive: UTC
        "Fraction": "2026-12-07T09:45:00.123456Z",
        "Dated": "2026-12-06",  # a date alone
    }
    for name, created in written.items():
        path = vault / f"main/Knowledge/Inbox/{name}.md"
        text = path.read_text(encoding="utf-8")
        path.write_text(re.sub(r"(?m)^created: .*$", f"created: {created}", text), "utf-8")
    clock.set(datetime(2026, 12, 8, 12, tzinfo=UTC))
    rows = [r for r in brain.list(node="Knowledge/Inbox") if r.id in ids.values()]
    names = {v: k for k, v in ids.items()}
    assert [names[r.id] for r in rows] == ["Fraction", "Zulu", "Offset", "Spaced", "Dated"]
    assert {names[r.id]: r.created for r in rows}["Offset"] == "2026-12-07T09:00:00Z"
    # Every one of them is found by the day it names; none is dropped.
    found = {h.id for h in brain.recall("harbour on 6 December 2026", k=5)}
    assert found == set(ids.values())
    assert brain.doctor().ok


def test_an_evening_correction_in_los_angeles_is_among_the_days_reflection_cues(
    brain: Brain, clock: FixedClock
) -> None:
    clock.set(datetime(2026, 12, 7, 9, 0, tzinfo=LOS_ANGELES))
    launch = brain.remember("The launch is in May", title="Launch")
    clock.set(datetime(2026, 12, 7, 20, 0, tzinfo=LOS_ANGELES))  # 04:00 on the 8th in UTC
    fixed = brain.correct(launch.id, "The launch is in March")
    clock.set(datetime(2026, 12, 7, 21, 0, tzinfo=LOS_ANGELES))
    cues = brain.gate().cues()
    assert [c["id"] for c in cues["corrected_today"]] == [fixed.id]


def test_an_evening_in_los_angeles_is_logged_on_its_own_day_by_that_nights_sleep(
    brain: Brain, clock: FixedClock, vault: Path
) -> None:
    clock.set(datetime(2026, 12, 7, 20, 0, tzinfo=LOS_ANGELES))  # 04:00 on the 8th in UTC
    brain.remember("Dinner with the kayak club at the harbour", title="Kayak dinner")
    clock.set(datetime(2026, 12, 7, 23, 0, tzinfo=LOS_ANGELES))
    brain.sleep()
    logs = vault / "main/Insights/Logs"
    assert "Kayak dinner" in (logs / "2026-12-07.md").read_text(encoding="utf-8")
    assert not (logs / "2026-12-08.md").exists()  # no log of a day that has not begun here


def test_blocks_an_older_brain_merged_as_sections_are_blocks_again_at_their_moment() -> None:
    front = "---\nid: 01JE2Z0000000000000000000A\nkind: dated\n---\n# 2026-12-08\n\n"
    ours = front + "## 00:15:20Z\n\nMorning: the roadmap\n\n## 00:23:37Z\n\nA: the invoices\n"
    # What a brain of f83eea2 made of two blocks written in Tokyo by a newer one: sections
    # (a count after the heading), put before the blocks.
    older = front + (
        "## 09:23:35+09:00 (0)\n\nB: the venue\n\n## 00:15:20Z\n\nMorning: the roadmap\n\n"
        "## 00:23:37Z\n\nA: the invoices\n"
    )
    theirs = ours + "\n## 00:30:00Z\n\nA: the train\n"
    merged = merge.merge_dated(ours, older, theirs)
    stamps = re.findall(r"^## (.+)$", merged, re.M)
    assert stamps == ["00:15:20Z", "09:23:35+09:00", "00:23:37Z", "00:30:00Z"]  # 00:23:35Z
    assert "## 09:23:35+09:00\n\nB: the venue\n" in merged

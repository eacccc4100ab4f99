"""The daemon tells the time in each client's zone (docs/lab/probe-timezones.md, session 9)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from brain._daemon.client import DaemonClient
from brain._daemon.wire import VERSION, receive, send
from tests.daemon.conftest import brain, stop_daemon

# UTC+14 and UTC-12 are 26 hours apart: at any moment their calendar days differ.
EAST, WEST = "Etc/GMT-14", "Etc/GMT+12"


def days(zone: str) -> set[str]:
    return {datetime.now(ZoneInfo(zone)).date().isoformat()}


def raw(vault: Path, request: dict[str, object]) -> dict[str, object]:
    """One request as a client of an older brain (or a broken one) sends it."""
    client = DaemonClient.connect(vault)
    sock: socket.socket = client.sock
    try:
        send(sock, {"v": VERSION, **request})
        reply = receive(sock)
    finally:
        client.close()
    assert reply is not None
    return reply


@pytest.fixture
def west_daemon(vault: Path) -> Iterator[Path]:
    started = brain(vault, "daemon", "start", TZ=WEST)
    assert started.returncode == 0, started.stderr
    yield vault
    stop_daemon(vault)


def test_a_diary_entry_through_a_daemon_started_in_another_zone_is_the_writers_day(
    vault: Path, west_daemon: Path
) -> None:
    before = days(EAST)
    done = brain(vault, "remember", "Swim at dawn", "--node", "LLM/Diary", "--json", TZ=EAST)
    assert done.returncode == 0, done.stderr
    path = json.loads(done.stdout)["path"]
    assert path in {f"main/LLM/Diary/{day}.md" for day in before | days(EAST)}
    assert "+14:00\n\nSwim at dawn" in (vault / path).read_text(encoding="utf-8")


def test_a_request_without_a_zone_keeps_the_daemons_and_a_bad_zone_is_refused(
    vault: Path, west_daemon: Path
) -> None:
    args = {"text": "Evening walk", "node": "LLM/Diary"}
    before = days(WEST)
    reply = raw(vault, {"op": "remember", "args": args})
    assert reply["ok"], reply
    result = reply["result"]
    assert isinstance(result, dict)
    assert result["path"] in {f"main/LLM/Diary/{day}.md" for day in before | days(WEST)}
    refused = raw(vault, {"op": "remember", "args": args, "zone": "Nowhere/Atlantis"})
    assert not refused["ok"]
    assert "request field 'zone' 'Nowhere/Atlantis'" in json.dumps(refused["error"])
    # Nothing was written by the refused request: the day's file holds the one walk.
    text = (vault / str(result["path"])).read_text(encoding="utf-8")
    assert text.count("Evening walk") == 1

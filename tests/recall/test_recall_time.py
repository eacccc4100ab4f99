"""Time expressions in the query parse without a model and lift what was said at that time."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, date, datetime, timedelta

import pytest
from typer.testing import CliRunner

from brain._brain import Brain
from brain._cli import _register, app
from brain._clock import FixedClock
from brain._recall.question import read
from brain._recall.when import (
    TIME_PRIOR,
    parse_time,
)

_register()

NOW = datetime(2024, 1, 20, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What dish did Nate make on 9 November, 2022?", date(2022, 11, 9), date(2022, 11, 10)),
        ("Which book did Tim finish on 8th December, 2023?", date(2023, 12, 8), date(2023, 12, 9)),
        ("What did he do on October 6, 2022?", date(2022, 10, 6), date(2022, 10, 7)),
        ("Where was the picture taken on December 1,2023?", date(2023, 12, 1), date(2023, 12, 2)),
        ("Who joined the family in May 2022?", date(2022, 5, 1), date(2022, 6, 1)),
        (
            "What was planned for the beginning of November 2022?",
            date(2022, 11, 1),
            date(2022, 12, 1),
        ),
        ("When did John get injured in 2023?", date(2023, 1, 1), date(2024, 1, 1)),
        ("What deal did John get in December?", date(2023, 12, 1), date(2024, 1, 1)),
        (
            "Where was John between August 11 and August 15 2023?",
            date(2023, 8, 11),
            date(2023, 8, 16),
        ),
        ("What did they give him on Aug 15th?", date(2023, 8, 15), date(2023, 8, 16)),
        ("How many has Nate won by July 10, 2022?", date.min, date(2022, 7, 11)),
        ("What happened after 3 March 2023?", date(2023, 3, 3), date.max),
        ("What did I write yesterday?", date(2024, 1, 19), date(2024, 1, 20)),
        ("What did we decide last week?", date(2024, 1, 6), date(2024, 1, 14)),
        # the latest such day before today (a Saturday): a week back for "last Saturday"
        ("Which artist did I start on last Friday?", date(2024, 1, 19), date(2024, 1, 20)),
        ("Where did I go last Monday?", date(2024, 1, 15), date(2024, 1, 16)),
        ("What did I cook last Saturday?", date(2024, 1, 13), date(2024, 1, 14)),
        ("What did she say two weeks ago?", date(2023, 12, 30), date(2024, 1, 7)),
        ("The plan from 3 days ago?", date(2024, 1, 16), date(2024, 1, 18)),
        # A span on one side of a date: about that long (and a unit more), the date itself
        # with a span before it ("last week", said on it); a week of a month.
        ("What did he do the week before August 3, 2023?", date(2023, 7, 20), date(2023, 8, 4)),
        ("The puppy she got two weeks before 11 August 2023", date(2023, 7, 21), date(2023, 8, 12)),
        ("What happened the day after 3 March 2023?", date(2023, 3, 3), date(2023, 3, 5)),
        ("Where was Tim in the second week of November?", date(2023, 11, 8), date(2023, 11, 15)),
        ("What did I do in the last week of November 2023?", date(2023, 11, 24), date(2023, 12, 1)),
        ("99999999999 days before 3 March 2023", date(2022, 11, 22), date(2023, 3, 4)),  # capped
        ("What did I do 99999999999 days ago?", date(2023, 10, 11), date(2023, 10, 13)),
    ],
)
def test_time_expressions_parse(query: str, start: date, end: date) -> None:
    window = parse_time(query, NOW)
    assert window is not None, query
    assert (window.start, window.end) == (start, end)


@pytest.mark.parametrize(
    "query",
    [
        "What may I bring to the party?",
        "Which 3 books did she recommend?",
        "What did Caroline paint for the 2nd time?",
        "What is 31 February, 2023 about?",  # no such day
        "When did Melanie go camping?",
        "What time did I reach the clinic on Monday?",  # which Monday: not said
    ],
)
def test_no_time_no_window(query: str) -> None:
    assert parse_time(query, NOW) is None


def test_absolute_dates_win_over_relative_words() -> None:
    window = parse_time("What was Tim's issue last week, as mentioned on November 6, 2023?", NOW)
    assert window is not None and window.start == date(2023, 11, 6)


def test_window_holds_created_with_slack() -> None:
    window = parse_time("What did he cook on 9 November, 2022?", NOW)
    assert window is not None
    assert window.holds("2022-11-09T13:56:00Z") and window.holds("2022-11-15T09:00:00Z")
    assert not window.holds("2022-11-08T23:59:00Z") and not window.holds("2022-11-20T10:00:00Z")
    assert not window.holds("not a date")


TURNS = [
    (datetime(2023, 5, 8, 13, 56, tzinfo=UTC), "Nate cooked noodle soup for dinner."),
    (datetime(2023, 9, 2, 18, 0, tzinfo=UTC), "Nate will cook noodle soup for dinner."),
]
QUERY = "What did Nate cook for dinner in May 2023?"


def _remember(brain: Brain, clock: FixedClock) -> list[str]:
    ids = []
    for when, text in TURNS:
        clock.set(when)
        ids.append(brain.remember(text).id)
    clock.set(TURNS[-1][0] + timedelta(days=30))
    return ids


def test_the_time_named_lifts_what_was_said_then(brain: Brain, clock: FixedClock) -> None:
    may, september = _remember(brain, clock)
    without_time = [h.id for h in brain.recall("What did Nate cook for dinner?", k=2)]
    assert without_time[0] == september  # it matches the words better
    hits = brain.recall(QUERY, k=2, explain=True)
    assert [h.id for h in hits] == [may, september]
    why = {h.id: h.explain for h in hits}
    assert why[may] is not None and why[may]["time"] == TIME_PRIOR
    assert why[may]["time_said"] == "May 2023"
    assert why[september] is not None and why[september]["time"] == 1.0


def test_cli_explain_shows_the_time_prior(cli: CliRunner, brain: Brain, clock: FixedClock) -> None:
    _remember(brain, clock)
    brain.close()
    res = cli.invoke(app, ["recall", QUERY, "--explain"])
    assert res.exit_code == 0, res.output
    assert f"time ×{TIME_PRIOR} (May 2023)" in res.output
    res = cli.invoke(app, ["recall", QUERY, "--explain", "--json"])
    assert json.loads(res.output)["hits"][0]["explain"]["time"] == TIME_PRIOR


@pytest.mark.parametrize(
    ("query", "names", "only"),
    [
        ("What did I do on 17 November?", (), True),
        ("what happened last week", (), True),
        ("This month, what have I done?", (), True),
        ("What did Jo say about joy in May 2023?", ("Jo",), False),  # a name, not a piece
        ("What did Nate say to Joanna on 3 June, 2022?", ("Nate", "Joanna"), True),
        ("What did Sara say about Lisbon in November?", ("Sara", "Lisbon"), True),
        ("What did Sara say about moving in November?", ("Sara",), False),
        ("What dish did Nate make on 9 November, 2022?", ("Nate",), False),
        ("What did I do?", (), False),  # no time: nothing to answer with
        ("Dentist on 14 January?", (), False),  # not a name of who said what: a word
        ("What did I do the week before 3 March?", (), True),
        ("What did I do in the second week of March?", (), True),
    ],
)
def test_a_query_that_asks_only_when(query: str, names: tuple[str, ...], only: bool) -> None:
    assert read(query, NOW).asks_only_when(names) is only


DAYS = [  # (day of November 2026, what was written)
    (2, "Dentist appointment went fine; I need a filling in January."),
    (9, "Had lunch with Sara at the Thai place."),
    (9, "Finished the quarterly report and sent it to Marek."),
    (10, "Ran 8 km along the river."),
    (17, "The boiler broke; the plumber comes on Friday."),
    (20, "Paid the electricity bill."),
    (28, "Called mum about Christmas."),
]


@pytest.mark.parametrize("mode", ["hybrid", "text"])
def test_what_did_i_do_on_a_day_is_what_was_written_that_day(
    brain: Brain, clock: FixedClock, mode: str
) -> None:
    ids = {}
    for day, text in DAYS:
        clock.set(datetime(2026, 11, day, 10, tzinfo=UTC))
        ids[text.split()[0]] = brain.remember(text).id
    clock.set(datetime(2026, 11, 30, 18, tzinfo=UTC))
    # The words match nothing, or a memory of another day ("January" is a date too): what
    # was written on the day comes first, then what was written in the week after it.
    hits = brain.recall("What did I do on 17 November?", k=4, mode=mode, explain=True)
    assert [h.id for h in hits[:2]] == [ids["The"], ids["Paid"]]
    assert [(h.explain or {}).get("time_first") for h in hits[:2]] == ["said then", "just after"]
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))
    both = {h.id for h in brain.recall("what did I do on 9 November", k=2, mode=mode)}
    assert both == {ids["Had"], ids["Finished"]}
    # "The week before" a day is the days before it (and the day), not all time before it.
    before = brain.recall("What did I do the week before 17 November?", k=7, mode=mode)
    assert {h.id for h in before[:4]} == {ids[w] for w in ("Had", "Finished", "Ran", "The")}
    assert before[4].id == ids["Paid"]  # the week after: told later
    # A query with words of its own is ranked by them, the time a prior as before, even when
    # its one word is capitalised as a name would be.
    assert brain.recall("dentist filling in November", k=1)[0].id == ids["Dentist"]
    assert brain.recall("Dentist on 17 November?", k=1, mode=mode)[0].id == ids["Dentist"]

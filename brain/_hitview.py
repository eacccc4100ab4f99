"""How recall hits read in a terminal: the lines of each, styled, shared by the full command
line (rich) and its fast path (plain ANSI), so both print the same text.

A line is a list of (text, style) pieces; style is "" or a rich style name (bold, dim,
yellow, green), which the fast path maps to ANSI codes.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import tzinfo
from typing import Any

from brain._clock import day_shown

Piece = tuple[str, str]
Line = list[Piece]

BAND_STYLE = {"strong": "green", "fair": "yellow", "weak": "dim"}


def adds(snippet: str, title: str, heading_path: Sequence[str] = ()) -> bool:
    """Whether the snippet says more than the title and headings already shown."""
    said = _plain(snippet)
    return bool(said) and said not in _plain(" ".join([title, *heading_path]))


def hit_lines(
    hits: Sequence[Mapping[str, Any]], vault: str, zone: tzinfo | None = None
) -> list[Line]:
    """Every line `brain recall` prints for these hits (JSON form), in order. A hit's band is
    the core's (recall/relevance.py): how much of the question it holds, not its rank. Dates
    are the days in `zone`, the reader's (the JSON keeps the stored UTC times)."""
    if not hits:  # nothing cleared the relevance floor
        return [[(f"nothing relevant in {vault}", "")]]
    return [[(_printable(text), style) for text, style in line] for line in _lines(hits, zone)]


def _lines(hits: Sequence[Mapping[str, Any]], zone: tzinfo | None) -> list[Line]:
    lines: list[Line] = []
    for n, hit in enumerate(hits, 1):
        strength = hit.get("band", "weak")  # a daemon of an older brain sends none
        weak = strength == "weak"
        where = f"{_when(hit, zone)} · {hit['path']} · {hit['id']}"
        head: Line = [
            (f"{n}. {hit['title']}", "dim" if weak else "bold"),
            ("  ", ""),
            (strength, BAND_STYLE[strength]),  # the number itself is in --json
            ("  ", ""),
            (where, "dim"),
        ]
        if hit["status"] != "active":
            head += [("  ", ""), (hit["status"], "yellow")]
        lines.append(head)
        headings = list(hit.get("heading_path") or ())
        if headings:
            lines.append([("   ", ""), (" › ".join(headings), "dim")])
        if adds(hit["snippet"], hit["title"], headings):
            lines.append([("   ", ""), (hit["snippet"], "dim" if weak else "")])
        lines += [[("   ", ""), (f"⚠ {flag}", "yellow")] for flag in hit["flags"]]
        if hit.get("explain") is not None:  # recall --explain (recall/explain.py)
            lines.append([("   ", ""), (f"why: {describe(hit['explain'])}", "dim")])
    return lines


def _when(hit: Mapping[str, Any], zone: tzinfo | None) -> str:
    """The day a memory was written, and the day it was last added to or said again when that
    was another day: "lives in Berlin" said again after "moved to Lisbon" reads as newer."""
    created = day_shown(hit["created"], zone)
    updated = day_shown(hit.get("updated") or hit["created"], zone)  # an older daemon: none
    return created if updated == created else f"{created}, updated {updated}"


def describe(why: Mapping[str, Any]) -> str:
    """Why a hit came back (its `explain`, recall/explain.py) in one line, such as
    `text #2 7.410 (+1.200 from neighbours) · vector — · fused 0.812 · context +0.031`."""
    parts = _retrievers(why)
    parts.append(f"fused {why['fused']:.3f}")
    if "relevance" in why:  # how much of the question it holds (recall/relevance.py)
        parts.append(f"relevance {why['relevance']:.2f}")
    if why["context"]:
        parts.append(f"context {why['context']:+.3f}")
    return " · ".join(parts + _priors(why))


def _retrievers(why: Mapping[str, Any]) -> list[str]:
    """Each retriever's rank and score of the hit, or a dash where it did not find it."""
    parts = []
    for name, entry in why["retrievers"].items():
        if entry["rank"] is None:
            parts.append(f"{name} —")
            continue
        text = f"{name} #{entry['rank']} {entry['score']:.3f}"
        if entry.get("neighbours"):
            text += f" ({entry['neighbours']:+.3f} from neighbours)"
        parts.append(text)
    return parts


def _priors(why: Mapping[str, Any]) -> list[str]:
    """The factors that moved the fused score, each only where it did."""
    parts = []
    if why["prior"] != 1.0:
        parts.append(f"prior ×{why['prior']}")
    if why.get("time", 1.0) != 1.0:  # recall/when.py: the query named a time
        parts.append(f"time ×{why['time']} ({why['time_said']})")
    if why.get("answer", 1.0) != 1.0:  # recall/answers.py: its text gives what was asked
        parts.append(f"answers {why['answer_asked']} ×{why['answer']}")
    if why.get("asks", 1.0) != 1.0:  # recall/answers.py: part of its text is questions
        parts.append(f"asks ×{why['asks']}")
    if why.get("time_first"):  # the query asked only when: what was said then comes first
        parts.append(f"asked only when: {why['time_first']}")
    if why.get("speaker", 1.0) != 1.0:  # recall/persons.py: the asker's own words
        parts.append(f"asker's own words ×{why['speaker']}")
    if why.get("reply"):  # recall/replies.py: a short reply to a question that matched
        parts.append(f"reply to a question {why['reply']:+.3f}")
    if why.get("opens", 1.0) != 1.0:  # recall/openers.py: the first memory of its sitting
        parts.append(f"opens its sitting ×{why['opens']}")
    if why.get("name", 1.0) != 1.0:  # recall/names.py: the query named who said it
        parts.append(f"name ×{why['name']} ({', '.join(why['name_said'])})")
    return parts


def _printable(text: str) -> str:
    """The text without control characters (whitespace ones become spaces): a note's text, a
    model's or a synced file's, could hold a terminal's escape sequences (colours, the window
    title, the clipboard: OSC 52), which `brain recall` would otherwise play in the terminal."""
    return "".join(
        (" " if c.isspace() else "") if unicodedata.category(c) == "Cc" else c for c in text
    )


def shown(text: str) -> str:
    """A note's text for the terminal, its lines kept: every control character but the line
    break and the tab left out (as _printable, for whole notes: expand, list, history)."""
    return "".join(c for c in text if c in "\n\t" or unicodedata.category(c) != "Cc")


def _plain(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(re.sub(r"[^\w\s]", " ", folded).split())

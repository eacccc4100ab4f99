"""Loader for LoCoMo-format files (Maharana et al., ACL 2024; CC BY-NC 4.0, eval only).

Accepts any file in the format of the authors' ``locomo10.json``: a JSON list of samples
``{sample_id, conversation, qa, ...}``. Only the ``session_<n>`` keys of
``conversation`` are iterated (some samples carry ``session_<n>_date_time`` keys for
sessions that have no turns).

Evidence is normalised as the benchmark README prescribes: packed strings are split on
``;``, ``,`` and whitespace; ``D:11:26`` becomes ``D11:26`` and ``D30:05`` becomes
``D30:5`` (leading zeros dropped in both numbers); ids naming no turn of the sample are
dropped; questions left with no evidence are skipped (and counted in
``Sample.skipped_questions``).

Dates: every turn is ``created`` at its session's ``session_<n>_date_time``, parsed with
``%I:%M %p on %d %B, %Y`` and made timezone-aware UTC. A session with a missing or empty
date inherits the date of the nearest earlier dated session, else of the nearest later
dated session, else 1970-01-01 00:00 UTC (a sample with no dates at all). A date that is
present but does not parse is an error.

A qa item's ``question_date`` (LongMemEval's ``"2023/05/30 (Tue) 16:40"``, or the session date
format) is when the question is asked: ``Question.asked``, None when the item gives none.

Every structural problem raises ``ValueError`` naming the file, the sample and the
reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

DATE_FORMAT = "%I:%M %p on %d %B, %Y"
QUESTION_DATE_FORMATS = ("%Y/%m/%d (%a) %H:%M", DATE_FORMAT)
FALLBACK_DATE = datetime(1970, 1, 1, tzinfo=UTC)

_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE_KEY = re.compile(r"session_(\d+)_date_time")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")
# Accepts the canonical ``D3:7`` plus the quirks ``D:11:26`` and ``D30:05``.
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")


@dataclass(frozen=True)
class Turn:
    """One dialog turn; one memory under the retrieval protocol."""

    dia_id: str
    session: int
    speaker: str
    text: str
    created: datetime
    blip_caption: str | None = None

    @property
    def memory_text(self) -> str:
        """The memory text per protocol: ``"<speaker>: <text>"``."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    """One QA item with normalised gold evidence.

    ``answer`` is the ``answer`` field as a string (some are ints in the source), or
    None when absent (most category-5 items); ``adversarial_answer`` is the category-5
    distractor, if any.
    """

    question: str
    category: int
    gold: frozenset[str]
    answer: str | None
    adversarial_answer: str | None = None
    asked: datetime | None = None  # when the question is asked (`question_date`)


@dataclass(frozen=True)
class Sample:
    """One conversation: turns in session order and its evidence-bearing questions."""

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    skipped_questions: int = 0


def normalise_evidence_id(raw: str) -> str | None:
    """Canonical ``D<s>:<t>`` form of an evidence token, or None if malformed."""
    match = _EVIDENCE_ID.fullmatch(raw.strip())
    if match is None:
        return None
    return f"D{int(match.group(1))}:{int(match.group(2))}"


def normalise_evidence(evidence: list[str], known_ids: set[str] | frozenset[str]) -> frozenset[str]:
    """Split packed evidence strings, repair ids, keep those naming a known turn."""
    gold: set[str] = set()
    for entry in evidence:
        for token in _EVIDENCE_SPLIT.split(entry):
            if not token:
                continue
            dia_id = normalise_evidence_id(token)
            if dia_id is not None and dia_id in known_ids:
                gold.add(dia_id)
    return frozenset(gold)


def parse_date(value: str) -> datetime:
    """Parse a session date (``"1:56 pm on 8 May, 2023"``) as an aware UTC datetime."""
    return datetime.strptime(value.strip(), DATE_FORMAT).replace(tzinfo=UTC)


def parse_question_date(value: str) -> datetime:
    """When a question is asked, as an aware UTC datetime; ValueError when no format fits."""
    for form in QUESTION_DATE_FORMATS:
        try:
            return datetime.strptime(value.strip(), form).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"{value!r} matches none of {QUESTION_DATE_FORMATS}")


def _opt_str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _session_dates(
    conversation: dict[str, Any], fail: Callable[[str], NoReturn]
) -> dict[int, datetime]:
    dates: dict[int, datetime] = {}
    for key, value in conversation.items():
        match = _DATE_KEY.fullmatch(key)
        if match is None or value is None or (isinstance(value, str) and not value.strip()):
            continue
        if not isinstance(value, str):
            fail(f"{key} is not a string")
        try:
            dates[int(match.group(1))] = parse_date(value)
        except ValueError:
            fail(f"{key} {value!r} does not match {DATE_FORMAT!r}")
    return dates


def _date_for(session: int, dates: dict[int, datetime]) -> datetime:
    if session in dates:
        return dates[session]
    earlier = [n for n in dates if n < session]
    if earlier:
        return dates[max(earlier)]
    later = [n for n in dates if n > session]
    if later:
        return dates[min(later)]
    return FALLBACK_DATE


def _load_sample(raw: Any, index: int, path: Path) -> Sample:
    where = f"{path}: sample #{index}"

    def fail(reason: str) -> NoReturn:
        raise ValueError(f"{where}: {reason}")

    if not isinstance(raw, dict):
        fail("is not a JSON object")
    sample_id = raw.get("sample_id")
    if not isinstance(sample_id, str) or not sample_id:
        fail("has no string 'sample_id'")
    where = f"{path}: sample {sample_id!r}"
    conversation = raw.get("conversation")
    if not isinstance(conversation, dict):
        fail("has no 'conversation' object")
    qa = raw.get("qa", [])
    if not isinstance(qa, list):
        fail("'qa' is not a list")

    dates = _session_dates(conversation, fail)
    turns, seen = _turns(conversation, dates, fail)
    questions: list[Question] = []
    skipped = 0
    for position, item in enumerate(qa):
        asked = _question(position, item, seen, fail)
        if asked is None:
            skipped += 1
            continue
        questions.append(asked)
    return Sample(
        sample_id=sample_id,
        turns=tuple(turns),
        questions=tuple(questions),
        skipped_questions=skipped,
    )


def _turns(
    conversation: dict[str, Any], dates: dict[int, datetime], fail: Callable[[str], NoReturn]
) -> tuple[list[Turn], set[str]]:
    """Every session's turns in order, and the dia_ids seen."""
    sessions = sorted(
        (int(m.group(1)), key)
        for key in conversation
        if (m := _SESSION_KEY.fullmatch(key)) is not None
    )
    turns: list[Turn] = []
    seen: set[str] = set()
    for number, key in sessions:
        items = conversation[key]
        if not isinstance(items, list):
            fail(f"{key} is not a list of turns")
        created = _date_for(number, dates)
        for position, item in enumerate(items):
            turns.append(_turn(key, position, item, number, created, seen, fail))
    return turns, seen


def _turn(
    key: str,
    position: int,
    item: Any,
    number: int,
    created: datetime,
    seen: set[str],
    fail: Callable[[str], NoReturn],
) -> Turn:
    """One dialog turn, checked; its dia_id joins `seen`."""
    if not isinstance(item, dict):
        fail(f"{key}[{position}] is not an object")
    dia_id, speaker, text = (
        item.get("dia_id"),
        item.get("speaker"),
        item.get("text"),
    )
    if not isinstance(dia_id, str) or not dia_id:
        fail(f"{key}[{position}] has no string 'dia_id'")
    if not isinstance(speaker, str) or not isinstance(text, str):
        fail(f"{key}[{position}] ({dia_id}) lacks string 'speaker'/'text'")
    if dia_id in seen:
        fail(f"duplicate dia_id {dia_id!r} in {key}")
    seen.add(dia_id)
    caption = item.get("blip_caption")
    return Turn(
        dia_id=dia_id,
        session=number,
        speaker=speaker,
        text=text,
        created=created,
        blip_caption=caption if isinstance(caption, str) else None,
    )


def _question(
    position: int, item: Any, seen: set[str], fail: Callable[[str], NoReturn]
) -> Question | None:
    """One question, checked; None when none of its evidence is a turn of the sample."""
    if not isinstance(item, dict):
        fail(f"qa[{position}] is not an object")
    question, category = item.get("question"), item.get("category")
    if not isinstance(question, str):
        fail(f"qa[{position}] has no string 'question'")
    if not isinstance(category, int) or isinstance(category, bool):
        fail(f"qa[{position}] has no integer 'category'")
    evidence = item.get("evidence", [])
    if isinstance(evidence, str):
        evidence = [evidence]
    if not isinstance(evidence, list) or not all(isinstance(e, str) for e in evidence):
        fail(f"qa[{position}] 'evidence' is not a list of strings")
    gold = normalise_evidence(evidence, seen)
    if not gold:
        return None
    asked = item.get("question_date")
    if asked is not None and not isinstance(asked, str):
        fail(f"qa[{position}] 'question_date' is not a string")
    try:
        when = parse_question_date(asked) if asked else None
    except ValueError as exc:
        fail(f"qa[{position}] 'question_date': {exc}")
    return Question(
        question=question,
        category=category,
        gold=gold,
        answer=_opt_str(item.get("answer")),
        adversarial_answer=_opt_str(item.get("adversarial_answer")),
        asked=when,
    )


def load(path: Path) -> list[Sample]:
    """Load every sample of a LoCoMo-format JSON file, normalised per the README."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not UTF-8 text ({exc})") from exc
    if not isinstance(data, list):
        message = f"{path}: top level is not a JSON list of samples"
        raise ValueError(message)
    samples = [_load_sample(raw, index, path) for index, raw in enumerate(data)]
    ids = [s.sample_id for s in samples]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: duplicate sample_id values")
    return samples

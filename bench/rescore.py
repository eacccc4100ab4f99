"""Screens of a head rule, offline: today's best 20 (a bench.rank_features dump) rescored.

LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0) and LongMemEval (Wu et al., ICLR 2025; MIT):
evaluation only. A screen multiplies the dumped score of each of a question's best 20 by a
factor it reads from the question and the memory's text ("<speaker>: <text>", as the protocol
stores it) and re-sorts them; the rest keep their places. What a screen says is a first look:
a rule that passes goes into bench.rank_tune, through the real pipeline, before it is kept.

    python -m bench.rescore DUMP.jsonl DATA.json --screen NAME --out NEW.jsonl
    python -m bench.rank_features --compare DUMP.jsonl NEW.jsonl   # paired, by category
    python -m bench.rescore DUMP.jsonl DATA.json --misses           # where the first hit is

Screens (docs/lab/ranking.md, "Against the code the issue was filed on"):
- `asks_topical`: a memory's closing questions lower it only when they share a content word
  with the query ("What's up with you?" after an answer asks nothing about it).
- `who_named`: for a "who" question, ×1.2 to a memory naming someone (a capitalised word past
  a sentence's first) who is neither in the question nor a speaker.
- `core_first`: ×(1 + 0.1 × the share of the question's core words a memory holds), the core
  being the question before its first setting ("at", "during", "after", … past the third word).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.locomo_data import load
from brain._recall.answers import ANSWER_DEPTH, ASKING, closing_questions, sentences
from brain._terms import content_words

Factor = Callable[[str, dict[str, Any]], float]  # (question, hit with "text" and "f") -> ×

_WHO = re.compile(r"^\s*who\b|\bwho\s+(?:is|was|are|were|did|does)\b", re.IGNORECASE)
_SETTING = frozenset(
    "during at after before for with since in on from about as while by when to of".split()
)


def _stems(text: str) -> set[str]:
    return {word[:5] for word in content_words(text)}


def asking_topical(text: str, query_words: set[str]) -> float:
    """The share of a text's characters in the questions it ends with that share a content
    word with the query (answers.asking_share counts them all)."""
    parts = sentences(text)
    total = sum(map(len, parts))
    topical = [q for q in closing_questions(parts) if _stems(q) & query_words]
    return sum(map(len, topical)) / total if total else 0.0


def asks_topical(question: str, hit: dict[str, Any]) -> float:
    old = hit["f"]["asks"]
    if old == 1.0:  # not lowered today (no closing question, or a query about asking)
        return 1.0
    return (1.0 - ASKING * asking_topical(hit["text"], _stems(question))) / old


def names_in(text: str) -> set[str]:
    """Capitalised words past each sentence's first, lower-cased."""
    found = set()
    for sentence in sentences(text):
        for token in sentence.split()[1:]:
            word = re.sub(r"[^A-Za-z]", "", token)
            if len(word) > 1 and word[0].isupper() and word[1:].islower():
                found.add(word.lower())
    return found


def who_named(question: str, hit: dict[str, Any]) -> float:
    if not _WHO.search(question):
        return 1.0
    known = set(re.findall(r"[a-z]+", question.lower())) | {hit["speaker"].lower(), "i"}
    return 1.2 if names_in(hit["body"]) - known - hit["speakers"] else 1.0


def core_words(question: str) -> set[str]:
    """The question's content words before its first setting word past the third."""
    tokens = re.findall(r"[A-Za-z0-9']+", question)
    cut = next((i for i, t in enumerate(tokens) if i >= 3 and t.lower() in _SETTING), len(tokens))
    return _stems(" ".join(tokens[:cut]))


def core_first(question: str, hit: dict[str, Any]) -> float:
    core = core_words(question) - {s[:5] for s in hit["speakers"]}
    if not core or core == _stems(question) - {s[:5] for s in hit["speakers"]}:
        return 1.0  # no setting: nothing to tell apart
    return 1.0 + 0.1 * len(core & _stems(hit["text"])) / len(core)


SCREENS: dict[str, Factor] = {
    "asks_topical": asks_topical,
    "who_named": who_named,
    "core_first": core_first,
}


def rescored(line: dict[str, Any], factor: Factor) -> dict[str, Any]:
    """The dump line with its best ANSWER_DEPTH re-sorted by score × factor."""
    head, rest = line["hits"][:ANSWER_DEPTH], line["hits"][ANSWER_DEPTH:]
    scored = [
        (hit["f"]["score"] * factor(line["question"], hit), i, hit) for i, hit in enumerate(head)
    ]
    scored.sort(key=lambda item: (-item[0], item[1]))
    return {**line, "hits": [hit for _, _, hit in scored] + rest}


def _with_texts(dump: Path, data: Path) -> list[dict[str, Any]]:
    samples, lines = load(data), []
    turns = {(s.sample_id, t.dia_id): t for s in samples for t in s.turns}
    answers = {(s.sample_id, q.question): q.answer for s in samples for q in s.questions}
    for raw in dump.read_text(encoding="utf-8").splitlines():
        line = json.loads(raw)
        line["answer"] = answers.get((line["sample"], line["question"]))
        said = [turns[(line["sample"], hit["key"])] for hit in line["hits"]]
        speakers = {turn.speaker.lower() for turn in said}
        for hit, turn in zip(line["hits"], said, strict=True):
            hit["speaker"], hit["body"], hit["text"] = turn.speaker, turn.text, turn.memory_text
            hit["speakers"] = speakers
        lines.append(line)
    return lines


def misses(lines: Sequence[dict[str, Any]], pool: frozenset[int]) -> Counter[str]:
    """Of the questions whose evidence is in the top 10 but not first: is the first hit the
    same speaker's, in the evidence's session, how many turns away, and (two turns away)
    does the turn between them ask something; and does the first hit hold every content word
    of the file's answer (a proxy for evidence the file did not mark)."""
    counts: Counter[str] = Counter()
    for line in lines:
        hits, gold = line["hits"], set(line["gold"])
        if line["category"] not in pool:
            continue
        if not hits:
            counts["nothing shown (the relevance floor)"] += 1
            continue
        ranks = [i for i, hit in enumerate(hits[:10]) if hit["key"] in gold]
        if not ranks or ranks[0] == 0:
            counts["first" if ranks else "not in the top 10"] += 1
            continue
        first, found = hits[0], hits[ranks[0]]
        counts["evidence 2nd-10th"] += 1
        answer = _stems(line.get("answer") or "") - _stems(line["question"])
        counts["the first hit holds the answer's words"] += bool(answer) and answer <= _stems(
            first["body"]
        )
        counts["same speaker"] += first["speaker"] == found["speaker"]
        (s1, t1), (s2, t2) = first["key"].split(":"), found["key"].split(":")
        if s1 != s2:
            counts["another session"] += 1
            continue
        apart = abs(int(t1) - int(t2))
        counts[f"same session, {min(apart, 5)}{'+' if apart >= 5 else ''} turns apart"] += 1
        if apart == 2:
            later = "evidence after" if int(t2) > int(t1) else "evidence before"
            between = f"{s1}:{(int(t1) + int(t2)) // 2}"
            asks = any(h["key"] == between and "?" in h["body"] for h in hits)
            counts[f"two apart, {later}{', the turn between asks' if asks else ''}"] += 1
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dump", type=Path)
    parser.add_argument("data", type=Path)
    parser.add_argument("--screen", choices=sorted(SCREENS))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--misses", action="store_true")
    args = parser.parse_args(argv)
    lines = _with_texts(args.dump, args.data)
    if args.misses:
        pool = (
            frozenset({1, 2, 3, 4})
            if max(line["category"] for line in lines) <= 5
            else frozenset(range(1, 7))
        )
        for name, count in sorted(misses(lines, pool).items()):
            print(f"{name:<48}{count:>5}")
    if args.screen:
        if args.out is None:
            parser.error("--screen needs --out")
        keep = ("speaker", "body", "text", "speakers")
        with args.out.open("w", encoding="utf-8") as out:
            for line in lines:
                new = rescored(line, SCREENS[args.screen])
                new["hits"] = [{k: v for k, v in h.items() if k not in keep} for h in new["hits"]]
                out.write(json.dumps(new) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

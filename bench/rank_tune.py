"""Ranking variants on LoCoMo-format files (LoCoMo: Maharana et al., ACL 2024; LongMemEval: Wu et
al., ICLR 2025; evaluation only), each sample ingested once and every variant asked of it.

    python -m bench.rank_tune FILE --out OUT.json [--cache-embeddings PATH] [--samples N]

OUT.json has the shape of bench/locomo.py's (one config per variant), rewritten after each
sample, so a long run can be read before its end; each variant is compared with `today` (the
ranking as it is) by a paired bootstrap over the questions asked so far. Tune on both dev files
together: a variant is kept only if it helps on both. A variant is a name of VARIANTS, a fusion
weight (`w_text=0.5`, `w_vector=0.6`, `w_sparse=1.5`, `w_context=0.25`) or parts joined by "+".
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from datetime import date
from pathlib import Path
from typing import Any

from bench.compare import compare, shipped_encoders
from bench.locomo import K, Results, _file_pool, _gold_key, _ingest, _scored, _vault
from bench.locomo_data import load
from bench.metrics import POOLED_CATEGORIES
from brain._recall import answers, neighbours, pipeline, rank, when
from brain._recall import names as naming

_FIRST_PERSON = {"i", "i'm", "i've", "i'd", "i'll", "my", "me", "we", "our", "us", "mine"}


@contextmanager
def _set(module: Any, name: str, value: Any) -> Iterator[None]:
    saved = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, saved)


def _asks_told(text: str) -> float:
    """asking_share, a question that tells of its asker ("my", "I've") not counted as asking."""
    sentences = [p.strip() for p in answers._SENTENCE_END.split(text) if p.strip()]
    total = sum(map(len, sentences))
    asking = 0
    for sentence in reversed(sentences):
        if sentence.rstrip("!！\"')]”’」 ").endswith(answers._QUESTION):
            words = {w.lower().replace("’", "'") for w in sentence.split()}
            if not words & _FIRST_PERSON:
                asking += len(sentence)
        elif len(sentence) > answers._STRAY:
            break
    return asking / total if total else 0.0


def _near_answer(inner: Callable[..., Any]) -> Callable[..., Any]:
    """with_answer_type that looks for the asked-for kind in the passage nearest the question's
    words (its best sentence and the next), not anywhere in a long text."""

    def typed(ranked: Any, texts: dict[str, str], asked: Any) -> Any:
        wanted = _QUESTION_TERMS[0]
        near = {oid: rank.snippet(text, wanted, width=400) for oid, text in texts.items()}
        return inner(ranked, near, asked)

    return typed


_QUESTION_TERMS: list[frozenset[str]] = [frozenset()]


def _decaying(half_life: float) -> Callable[..., Any]:
    """with_time whose factor decays with the days between `created` and the window."""

    def timed(ranked: Any, rows: Any, window: Any) -> Any:
        if window is None:
            return list(ranked), {}
        factors = {}
        for oid, _ in ranked:
            if oid not in rows:
                continue
            try:
                day = date.fromisoformat(rows[oid].created[:10])
            except ValueError:
                continue
            if window.start <= day < window.end:
                away = 0
            elif day >= window.end:
                away = (day - window.end).days + 1
            else:
                away = (window.start - day).days
            factor = 1 + (when.TIME_PRIOR - 1) * math.pow(2, -away / half_life)
            if factor > 1.01:
                factors[oid] = factor
        out = [(oid, s * factors.get(oid, 1.0)) for oid, s in ranked]
        return sorted(out, key=lambda item: (-item[1], item[0])), factors

    return timed


def _first_gap(inner: Callable[..., Any]) -> Callable[..., Any]:
    """fuse, each retriever's first hit also given its lead over its second (a confident find)."""

    def fused(
        lists: Any, floors: Any = None, depth: Any = None, scaled: Any = None, then: Any = None
    ) -> Any:
        scores = dict(inner(lists, floors, depth, scaled, then))
        for name, found in lists.items():
            if len(found) < 2 or not scaled or name not in scaled:
                continue
            lead = (found[0][1] - found[1][1]) / scaled[name][1]
            scores[found[0][0]] += rank.WEIGHTS.get(name, 1.0) * lead
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))

    return fused


_SECOND_PERSON = {"you", "your", "you're", "you've", "yours"}


def _persons(text: str) -> tuple[int, int]:
    said = [w.strip('.,!?;:"()').lower().replace("’", "'") for w in text.split()]
    return sum(w in _FIRST_PERSON for w in said), sum(w in _SECOND_PERSON for w in said)


def _first_person(factor: float) -> Callable[..., Any]:
    """with_statements, and after it: a question asked in the first person (and not to "you")
    lifts the memories of the head that speak more of their speaker than to whom they address."""
    inner = answers.with_statements

    def stated(ranked: Any, texts: dict[str, str], about_asking: bool) -> Any:
        ranked, factors = inner(ranked, texts, about_asking)
        first, second = _persons(_QUESTION_TEXT[0])
        if not first or second:
            return ranked, factors
        lift = {}
        for oid, _ in ranked[: answers.ANSWER_DEPTH]:
            mine, yours = _persons(texts.get(oid, ""))
            if mine > yours:
                lift[oid] = factor
        head = answers._multiplied(ranked[: answers.ANSWER_DEPTH], lift)
        return [*head, *ranked[answers.ANSWER_DEPTH :]], factors

    return stated


_QUESTION_TEXT = [""]


def _first_named(inner: Callable[..., Any]) -> Callable[..., Any]:
    """whose_words, and of two speakers the question names apart ("How does Gina describe the
    studio that Jon opened?", not "Jon and Gina"), only the first: the one it asks about."""

    def whose(people: Any, talking: Any, owned: Any, pairs: Any) -> Any:
        chosen = inner(people, talking, owned, pairs)
        said = [name for name in chosen if name in talking]
        text = _QUESTION_TEXT[0]
        joined = (
            re.search(r"\b(?:and|or)\s+$", text[: max(text.find(n) for n in said)])
            if said
            else None
        )
        if len(said) < 2 or joined:
            return chosen
        first = min(said, key=text.find)
        return tuple(name for name in chosen if name not in talking or name == first)

    return whose


# The question → answer map of `qa_map`: (W, whether it applies to this question), per sample.
_QA_MAP: list[Any] = [None, False]


def qa_map(sample: Any, embedder: Any, smooth: float = 10.0) -> Any:
    """A map of the query vector learned from the conversation itself: each turn that asks
    something (a "?") and the other speaker's turn right after it, ridge-regressed toward the
    identity (W = argmin ‖QW − A‖² + smooth‖W − I‖²); None with under 20 such pairs."""
    import numpy as np

    turns = sample.turns
    pairs = [
        (i, i + 1)
        for i in range(len(turns) - 1)
        if "?" in turns[i].text
        and turns[i].session == turns[i + 1].session
        and turns[i].speaker != turns[i + 1].speaker
    ]
    if len(pairs) < 20:
        return None
    vectors = embedder.embed([t.memory_text for t in turns])
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    asked, answered = vectors[[i for i, _ in pairs]], vectors[[j for _, j in pairs]]
    eye = np.eye(asked.shape[1], dtype=np.float32)
    lhs, rhs = asked.T @ asked + smooth * eye, asked.T @ answered + smooth * eye
    return np.linalg.solve(lhs, rhs).astype(np.float32)


def _mapped_search(self: Any, query: str, k: int, filters: Any) -> Any:
    """VectorsInContext.search with the query vector through `_QA_MAP` where it applies."""
    import numpy as np

    vector = self.encoded(query)
    if _QA_MAP[0] is not None and _QA_MAP[1]:
        vector = vector @ _QA_MAP[0]
        vector = (vector / np.linalg.norm(vector)).astype(np.float32)
    found = self.nearest(vector, k, filters)
    if self.neighbourhood is None or not self.weight:
        return found
    around = self.neighbourhood.around([oid for oid, _ in found[: neighbours.DEPTH]], filters)
    self.last = neighbours.blend_vectors(vector, found, around, self.caches.vectors, self.weight)
    return [(oid, s) for oid, s in self.last.scores[:k] if s >= self.floor]


_PATCHES: dict[str, Callable[[], Any]] = {
    "no_time": lambda: _set(when, "TIME_PRIOR", 1.0),
    "first_named": lambda: _set(naming, "whose_words", _first_named(naming.whose_words)),
    "qa_map": lambda: _set(neighbours.VectorsInContext, "search", _mapped_search),
}


def _variant(names: Sequence[str]) -> ExitStack:
    stack = ExitStack()
    for name in names:
        if name == "no_asking":
            stack.enter_context(_set(answers, "ASKING", 0.0))
        elif name == "asks_told":
            stack.enter_context(_set(answers, "asking_share", _asks_told))
        elif name == "no_answer":
            stack.enter_context(_set(answers, "ANSWER_TYPE", 1.0))
        elif name == "answer_near":
            stack.enter_context(
                _set(pipeline, "with_answer_type", _near_answer(answers.with_answer_type))
            )
        elif name.startswith("time_decay"):
            half = float(name.removeprefix("time_decay") or 2)
            stack.enter_context(_set(pipeline, "with_time", _decaying(half)))
        elif name.startswith("first_person"):
            factor = float(name.removeprefix("first_person") or 1.5)
            stack.enter_context(_set(pipeline, "with_statements", _first_person(factor)))
        elif name == "first_gap":
            stack.enter_context(_set(pipeline, "fuse", _first_gap(rank.fuse)))
        elif name.startswith("w_"):  # a fusion weight: w_sparse=1.5, w_context=0.25
            stack.enter_context(_weight(name))
        elif name.startswith("context_long="):
            stack.enter_context(_context_long(float(name.partition("=")[2])))
        elif name in _PATCHES:
            stack.enter_context(_PATCHES[name]())
        else:
            raise ValueError(f"unknown variant part {name!r}")
    return stack


VARIANTS: dict[str, tuple[str, ...]] = {
    "today": (),
    "no_asking": ("no_asking",),
    "asks_told": ("asks_told",),
    "no_answer": ("no_answer",),
    "answer_near": ("answer_near",),
    "time_decay2": ("time_decay2",),
    "first_gap": ("first_gap",),
    "first_person": ("first_person",),
    "first_person1.2": ("first_person1.2",),
    "fp_no_answer": ("first_person", "no_answer"),
    "fp_near": ("first_person", "answer_near"),
    "fp_told_near_decay": ("first_person", "asks_told", "answer_near", "time_decay2"),
    "no_time": ("no_time",),
    "first_named": ("first_named",),
    "qa_map": ("qa_map",),
}
_EMBEDDER: list[Any] = [None]


def _weight(name: str) -> Any:
    """The fusion weight a `w_<list>=<value>` part sets (rank.WEIGHTS, rank.CONTEXT_WEIGHT)."""
    part, _, value = name.removeprefix("w_").partition("=")
    if part == "context":
        return _set(rank, "CONTEXT_WEIGHT", float(value))
    if part in rank.WEIGHTS:
        return _set(rank, "WEIGHTS", {**rank.WEIGHTS, part: float(value)})
    raise ValueError(f"unknown weight {part!r} in {name!r}")


_LENGTHS: dict[str, int] = {}  # memory id -> its text's length, this sample's


def _context_long(weight: float) -> Any:
    """Context lent to a memory longer than replies.SHORT characters at `weight`, not
    rank.CONTEXT_WEIGHT: a long message speaks for itself, a short turn needs its sitting."""
    from brain._recall.replies import SHORT

    def with_context(fused: Any, rows: Any) -> list[tuple[str, float]]:
        lent = dict(rank.with_context(fused, rows))
        plain = dict(fused)
        out = []
        for oid, score in lent.items():
            if _LENGTHS.get(oid, 0) > SHORT:
                score = plain[oid] + (score - plain[oid]) * weight / rank.CONTEXT_WEIGHT
            out.append((oid, score))
        return sorted(out, key=lambda item: (-item[1], item[0]))

    return _set(pipeline, "with_context", with_context)


def _parts(name: str) -> tuple[str, ...]:
    """A named variant's parts, or parts joined by "+" ("w_sparse=1.5+w_vector=0.6")."""
    return VARIANTS.get(name, tuple(name.split("+")))


def _ask(results: Results, brain: Any, clock: Any, sample: Any, owner: dict[str, Any]) -> None:
    from brain._recall.question import read

    last = clock.now()
    texts = dict(results.texts[sample.sample_id])
    _LENGTHS.clear()
    _LENGTHS.update({oid: len(texts[dia_id]) for oid, (_, dia_id) in owner.items()})
    if "qa_map" in results.configs:
        _QA_MAP[0] = qa_map(sample, _EMBEDDER[0])
    for name in results.configs:
        with _variant(_parts(name)):
            for question in sample.questions:
                clock.set(question.asked or last)
                _QUESTION_TERMS[0] = read(question.question, clock.now()).terms
                _QUESTION_TEXT[0] = question.question
                # the map leads from a question to its answer: not for one about the asker
                _QA_MAP[1] = not read(question.question, clock.now()).of_asker
                t0 = time.perf_counter()
                hits = brain.recall(question.question, k=K, mode="hybrid")
                results.latency[name].append((time.perf_counter() - t0) * 1000)
                ranked = [_gold_key(owner.get(h.id), sample.sample_id) for h in hits]
                results.scores[name].append((question.category, _scored(ranked, question)))
    clock.set(last)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cache-embeddings", type=Path)
    parser.add_argument("--samples", type=int, default=0)
    parser.add_argument("--skip", type=int, default=0, help="start at this sample")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    args = parser.parse_args(argv)
    embedder, terms = shipped_encoders(args.cache_embeddings)
    _EMBEDDER[0] = embedder
    pool = _file_pool(args.file)
    results = Results(args.variants.split(","), pool)
    samples = load(args.file)[args.skip :][: args.samples or None]
    for sample in samples:
        with _vault(embedder, sample.turns[0].created, terms) as (brain, clock):
            owner = _ingest(brain, clock, sample, results)
            _ask(results, brain, clock, sample, owner)
        report = results.report()
        args.out.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
        print(f"  {sample.sample_id}", file=sys.stderr)
    print_summary(results.report(), pool)
    return 0


def print_summary(report: dict[str, Any], pool: frozenset[int] = POOLED_CATEGORIES) -> None:
    heads = ("hit@1", "hit@10", "ndcg@10", "mrr", "session_hit@5")
    print(f"{'variant':<22}" + "".join(f"{h:>14}" for h in heads))
    for name, data in report["configs"].items():
        print(f"{name:<22}" + "".join(f"{data['pooled'][h]:14.3f}" for h in heads))
    for name in report["configs"]:
        if name != "today":
            lines = compare(report, report, name, "today", pool)
            keep = [ln for ln in lines if ln.split()[0] in heads]
            print(f"{name} against today:\n" + "\n".join(keep))


if __name__ == "__main__":
    sys.exit(main())

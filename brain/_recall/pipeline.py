"""The recall pipeline: scope → retrieve → fuse → rank → describe, over one opened vault."""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from brain._errors import InvalidInput
from brain._indexes.fulltext import Filters
from brain._model import Hit
from brain._notes import corrections, defining
from brain._recall import names as naming
from brain._recall import openers, relevance
from brain._recall.answers import ANSWER_DEPTH, with_answer_type, with_statements
from brain._recall.names import speakers, subjects, with_names, without
from brain._recall.neighbours import Blend, Neighbourhood
from brain._recall.persons import with_speaker
from brain._recall.question import Question
from brain._recall.question import read as read_question
from brain._recall.rank import (
    CANDIDATES,
    MODES,
    Briefs,
    Retriever,
    Scale,
    Then,
    VectorRetriever,
    fuse,
    passes,
    rank,
    scales,
    seen_by,
    to_hit,
    with_context,
)
from brain._recall.replies import in_head
from brain._recall.when import Window, time_first, with_time
from brain._scoping import holding, names_a_node, resolve_scope
from brain._terms import only_purpose
from brain._vault.archive import check_recallable

if TYPE_CHECKING:
    from collections.abc import Callable

    from brain._context import Context
    from brain._indexes.catalog import Brief

UPKEEP_KINDS = ("log",)

# A named time is looked at when at most this many memories were written then: each retriever
# is handed their ids as a filter, whose cost grows with them. Not tuned: on the LoCoMo dev
# split 200 and 1,000 give the same rankings (docs/lab/ranking.md).
WINDOW_MOST = 1000


def recall(
    brain: Context,
    query: str,
    *,
    k: int | None = None,
    node: str | None = None,
    include_superseded: bool = False,
    mode: str = "hybrid",
    defining_first: bool = False,
    scope: str | None = None,
    explain: bool = False,
) -> list[Hit]:
    """The few objects that best answer the query, best first.

    `scope`: `all` (the default), `auto` (the nodes whose index.json match), or one node.
    `explain`: each hit says why it came back (recall/explain.py).
    """
    if not query or not query.strip():
        raise InvalidInput("query is empty; say what to recall")
    k = brain.settings.recall_k if k is None else k
    if k < 1 or k > 100:
        raise InvalidInput(f"-k must be between 1 and 100, not {k}")
    if mode not in MODES:
        raise InvalidInput(f"unknown mode {mode!r}; allowed: {', '.join(MODES)}")
    question = read_question(query, brain.clock.now())  # read once, handed to every stage
    briefs = Briefs(brain.caches.catalog)  # each read once, by whichever stage asks first
    near = Neighbourhood(brain.caches.catalog, briefs=briefs)  # looked up once for all stages
    retrievers = _retrievers(brain, mode, briefs, near, query)
    # Their models encode the query on a worker while this thread catches up, flushes and
    # searches the full text: the encoding needs nothing of the vault. What needs the
    # indexes waits for `current`.
    current = threading.Event()
    for r in retrievers[1:]:
        r.start(query, CANDIDATES, current)
    check_recallable(brain.store, brain.partition)
    brain.catch_up()
    # Scoping (precision warming, scoping.py): the nodes to search, None for all of them.
    filters = Filters(
        partition=brain.partition,
        node=holding(brain, node, "node") if node is not None else None,  # "" is refused
        nodes=resolve_scope(brain, query, scope, node),
        exclude_status=() if include_superseded else ("superseded",),
        visibility=("normal",) if brain.for_model else None,
        # brain's own upkeep output (the daily logs, Graph.md) lists the titles of the notes
        # it tells of, so it matched their words beside them: it is found where it is asked
        # for, a search of a node the person names (--node, or --scope with a node).
        exclude_kinds=() if node or names_a_node(scope) else UPKEEP_KINDS,
    )
    brain.flush(vectors=any(r.name in ("vector", "sparse") for r in retrievers))
    current.set()
    asked = Asking(brain, question, retrievers, filters, briefs, defining_first, near)
    # A memory's place does not depend on how many are asked for: the ranking is made of each
    # retriever's best CANDIDATES whatever k is, and only when that holds fewer than k is a
    # deeper one asked for, whose others follow it.
    stored: dict[str, dict[str, str] | None] = {}  # title and body, each read once
    ranking = _ranking(asked, CANDIDATES, stored)
    why = _explained(ranking, asked, explain)
    best, bodies = _answers(brain, ranking.ordered, k, stored)
    if len(best) < k and ranking.cut:
        deeper = _ranking(asked, k * 5, stored)
        why = {**_explained(deeper, asked, explain), **why}
        best, bodies = _answers(brain, _after(ranking.ordered, deeper.ordered), k, stored)
    rows = brain.caches.catalog.get_many([oid for oid, _ in best])
    # Each hit as the catalog has it now, whatever a cache said on the way (the held briefs,
    # an index behind a write): gone, or hidden from a model, it is not shown.
    best = [(oid, score) for oid, score in best if oid in rows and brain.shows(rows[oid])]
    # Relevance is absolute (recall/relevance.py): when no hit holds enough of the question,
    # the answer is that nothing in the vault is about it, not the least bad memories.
    weighed = _weighed(asked, ranking.written_then)
    held = {oid: weighed.held(rows[oid].title, bodies[oid], rows[oid].created) for oid, _ in best}
    cosines = _cosines(asked, ranking.lists)  # only between texts that hold words
    worded = {oid for oid, _ in best if weighed.worded(rows[oid].title, bodies[oid])}
    held = relevance.with_meaning(held, {o: c for o, c in cosines.items() if o in worded})
    if not relevance.clears(held):
        best = []
    flags = corrections.suspicion_flags(
        brain.caches.catalog, [rows[oid] for oid, _ in best], visible_only=brain.for_model
    )
    hits = []
    for oid, score in best:
        hit = to_hit(rows[oid], score, bodies[oid], question.terms, flags.get(oid, ()), held[oid])
        if oid in why:
            why[oid]["relevance"] = round(held[oid], 4)
        hits.append(dataclasses.replace(hit, explain=why.get(oid), updated=rows[oid].updated))
    return hits


def _cosines(asked: Asking, lists: dict[str, list[tuple[str, float]]]) -> dict[str, float]:
    """Each memory's own cosine to the question (before neighbour context) as the shipped
    MiniLM scored it; {} for any other embedder, whose cosines mean something else."""
    if getattr(asked.brain.embedder, "name", None) != "minilm":
        return {}
    scores = dict(lists.get("vector", ()))
    for retriever in asked.retrievers:
        if retriever.name == "vector" and (last := getattr(retriever, "last", None)) is not None:
            scores.update(last.own)
    return scores


def _weighed(asked: Asking, written: int | None) -> relevance.Asked:
    """The question's terms and time weighed in this vault (recall/relevance.py); `written`:
    how many memories were written in the time it names, when a ranking counted them."""
    if not asked.weighed:  # made once a recall, by the first stage that needs it
        window = asked.question.window
        if written is None:  # the ranking did not look at the time: counted here, once
            written = _written_then(asked.brain, window, asked.filters, asked.briefs)[1]
        fulltext, text = asked.brain.caches.fulltext, asked.question.text
        within = seen_by(asked.brain.partition, asked.brain.for_model)
        asked.weighed.append(relevance.asked(fulltext, text, window, written, within))
    return asked.weighed[0]


@dataclass(frozen=True)
class Asking:
    """One recall's question, retrievers, filters and briefs: what every ranking of it uses."""

    brain: Context
    question: Question
    retrievers: list[Retriever]
    filters: Filters
    briefs: Briefs
    defining_first: bool
    near: Neighbourhood
    weighed: list[relevance.Asked] = field(default_factory=list, compare=False)  # _weighed's


@dataclass
class Ranking:
    """One ranking of a recall's candidates, and what each stage did to it (for --explain)."""

    ordered: list[tuple[str, float]]
    cut: bool  # a retriever's list was cut at its depth: a deeper one holds more
    lists: dict[str, list[tuple[str, float]]]
    plain: list[tuple[str, float]]
    fused: list[tuple[str, float]]
    briefs: dict[str, Brief]
    scaled: dict[str, Scale]
    then: Then
    stages: dict[str, dict[str, float]] = field(default_factory=dict)  # stage → oid → factor
    lifted: tuple[str, ...] = ()
    only_when: bool = False
    written_then: int | None = None  # how many were written in the named time, if looked up


def _ranking(asked: Asking, depth: int, stored: dict[str, dict[str, str] | None]) -> Ranking:
    """Each retriever's best `depth`, fused, with the priors of what the question says."""
    brain, question, filters, read = asked.brain, asked.question, asked.filters, asked.briefs
    first, *others = asked.retrievers
    # A person the query names (recall/names.py): a prior on what they said; a speaker's name
    # is no search word. The first retriever (full text, cheap) says who the names are, so
    # the others search once, with or without them.
    query, names = question.text, question.names
    lists = {first.name: first.search(query, depth, filters)}
    titles = brain.caches.catalog.said_titles(_ids(lists)) if names else {}
    people = subjects(names, titles)
    talking = speakers(people, titles)
    where = filters
    if talking:  # where the search without the names would go
        where = naming.kept_to(filters, people, titles, read.of(_ids(lists)))
    common = [n for n in talking if brain.caches.fulltext.share(n, where) >= naming.COMMON]
    rest = without(query, common) if common else None

    def words_for(r: Retriever) -> tuple[str, Filters]:  # each retriever's words and filters
        stripped = rest is not None and r.name in naming.STRIP_NAMES
        return (rest or query, where) if stripped else (query, filters)

    if rest is not None and first.name in naming.STRIP_NAMES:
        lists[first.name] = first.search(rest, depth, where)
    for r in others:
        words, allowed = words_for(r)
        lists[r.name] = r.search(words, depth, allowed)
    cut = any(len(found) >= depth for found in lists.values())
    floors = {r.name: r.floor for r in asked.retrievers if isinstance(r, VectorRetriever)}
    scaled = scales(lists, floors, depth)
    # A time the query names ("on 9 November, 2022", "last week") is a place to look (each
    # retriever lists its best memories of that time too), and what was said then is lifted.
    # A query that asks only when ("what did I do on 17 November") is answered by what was
    # written then: the memories of the window first, each of them a candidate.
    window = question.window
    only_when = question.asks_only_when(talking)  # "Nate: …" names who said it
    looked = len(lists) > 1 or only_when
    said, written = _written_then(brain, window, filters, read) if looked else (frozenset(), None)
    then = _look_then(asked.retrievers, lists, said, words_for, depth, floors) if said else {}
    if names:
        titles = brain.caches.catalog.said_titles(_ids(lists))
        people = subjects(names, titles)
    plain = fused = (
        fuse(lists, scaled=scaled, then=then) if len(lists) > 1 else next(iter(lists.values()))
    )
    if only_when and said:
        found = {oid for oid, _ in fused}
        fused = [*fused, *((oid, 0.0) for oid in sorted(said - found))]
    briefs = read.of([oid for oid, _ in fused])
    if len(lists) > 1:
        fused = with_context(fused, briefs)
    timed, time_factors = with_time(fused, briefs, window)
    # A person the query names lifts what they said (memories whose title opens with the name);
    # a speaker it names only as an owner or a recipient does not ("What did Jon say about
    # Gina's store?", "What did Tim recommend to John?").
    lifted = naming.whose_words(people, speakers(people, titles), question.owned, question.pairs)
    named, name_factors = with_names(timed, titles, lifted)
    ranked = rank(named, briefs)
    head = _read(brain, [oid for oid, _ in ranked[:ANSWER_DEPTH]], stored)
    typed: dict[str, float] = {}
    if question.wants is not None:  # a time, an amount: what some memories' text gives
        texts = {oid: "\n".join(fields.values()) for oid, fields in head.items()}
        ranked, typed = with_answer_type(ranked, texts, question.wants)
    # A memory that asks does not tell (answers.py): its body's share of questions lowers it.
    bodies = {oid: fields.get("body") or fields.get("title", "") for oid, fields in head.items()}
    ranked, asking = with_statements(ranked, bodies, question.about_asking)
    # Asked in the first person, what the asker said of themselves is lifted (persons.py).
    ranked, speaking = with_speaker(ranked, bodies, question.of_asker)
    replying: dict[str, float] = {}  # a short reply borrows its question's relevance:
    opening: dict[str, float] = {}
    if len(lists) > 1:  # replies.py (with one retriever alone, its own order)
        weighed, cosines = _weighed(asked, written), _cosines(asked, lists)
        held = partial(relevance.of_memory, weighed, cosines, head, briefs)
        giving = None if question.wants is None else typed  # the kind asked for
        # Titles that say who spoke each turn, an imported one's too (catalog said_titles).
        titles_of, someone = brain.caches.catalog.said_titles, question.to_someone
        ranked, replying = in_head(
            ranked, head, asked.near, asked.filters, held, giving, titles_of if someone else None
        )
        # The memory that opens a dialogue says what it was for (openers.py).
        ranked, opening = openers.in_head(ranked, asked.near, asked.filters, titles_of, someone)
    if only_when and window is not None:
        ranked = time_first(ranked, briefs, window)
    ordered = defining.defining_first(ranked, briefs) if asked.defining_first else ranked
    stages = {"time": time_factors, "answer": typed, "asks": asking, "name": name_factors}
    stages |= {"speaker": speaking, "reply": replying, "opens": opening}
    return Ranking(
        ordered, cut, lists, plain, fused, briefs, scaled, then, stages, lifted, only_when, written
    )


def _after(head: list[tuple[str, float]], more: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """`head` as it is, then the others of `more`, none scored above the head's last."""
    seen = {oid for oid, _ in head}
    low = head[-1][1] if head else float("inf")
    return [*head, *((oid, min(score, low)) for oid, score in more if oid not in seen)]


def _explained(ranking: Ranking, asked: Asking, explain: bool) -> dict[str, dict[str, Any]]:
    """Why each memory of the ranking came back (recall/explain.py), {} unless asked."""
    if not explain:
        return {}
    from brain._recall.explain import explain as explain_hits
    from brain._recall.explain import what_stages_did

    why = explain_hits(
        asked.retrievers,
        ranking.lists,
        ranking.plain,
        ranking.fused,
        ranking.briefs,
        [oid for oid, _ in ranking.ordered],
        ranking.scaled,
        ranking.then,
    )
    stages, rows = ranking.stages, ranking.briefs
    what_stages_did(why, asked.question, stages, rows, ranking.only_when, ranking.lifted)
    return why


def _read(
    brain: Context, ids: list[str], stored: dict[str, dict[str, str] | None]
) -> dict[str, dict[str, str]]:
    """Each memory's title and body as indexed, read into `stored` once a recall."""
    unread = [oid for oid in ids if oid not in stored]
    if unread:
        stored.update(brain.caches.fulltext.stored_many(unread))
    return {oid: stored[oid] or {} for oid in ids}


def _answers(
    brain: Context,
    ordered: list[tuple[str, float]],
    k: int,
    stored: dict[str, dict[str, str] | None],
) -> tuple[list[tuple[str, float]], dict[str, str]]:
    """The best k that hold something, with their text. A structural note with nothing in it
    but its purpose line (a new vault's Biography, Goals, Protocols: vault-template/) is a
    place to write, not an answer: its title alone matched any question about the person."""
    best: list[tuple[str, float]] = []
    bodies: dict[str, str] = {}
    for oid, score in ordered:
        if oid not in stored:
            stored[oid] = brain.caches.fulltext.stored(oid)
        body = (stored[oid] or {}).get("body", "")
        if only_purpose(body):
            continue
        best.append((oid, score))
        bodies[oid] = body
        if len(best) == k:
            break
    return best, bodies


def _written_then(
    brain: Context, window: Window | None, filters: Filters, read: Briefs
) -> tuple[frozenset[str], int]:
    """The memories the filters allow that were written in the window the query names (with
    the prior's slack: what happened on a day is often told the day after), or none when it
    names no time or more than WINDOW_MOST memories were written then; and how many of the
    partition's were (at most WINDOW_MOST + 1: the time's weight in relevance.py)."""
    if window is None or filters.partition is None:
        return frozenset(), 0
    # A model's count is of what it may see: a private note written then weighs nothing.
    found = brain.caches.catalog.written_between(
        filters.partition, *window.bounds(), WINDOW_MOST + 1, normal_only=brain.for_model
    )
    if len(found) > WINDOW_MOST:
        return frozenset(), len(found)
    read.keep(found)
    return frozenset(b.id for b in found if passes(b, filters)), len(found)


def _look_then(
    retrievers: list[Retriever],
    lists: dict[str, list[tuple[str, float]]],
    said: frozenset[str],
    words_for: Callable[[Retriever], tuple[str, Filters]],
    depth: int,
    floors: dict[str, float],
) -> Then:
    """Each retriever's best `depth` of the memories `said` (those of a named time), with
    its own words and filters, added to its list. Each such list is scaled like any other:
    from its last score when it is full, from the floor when it holds every memory of that
    time, so a memory its first list cut off counts from the cut of the list that holds it.
    The first list's neighbour context is kept for --explain, these added."""
    then: Then = {}
    for r in retrievers:
        words, allowed = words_for(r)
        before = getattr(r, "last", None)
        among = r.search(words, depth, replace(allowed, ids=said))
        after = getattr(r, "last", None)
        if before is not None and after is not None:
            r.last = Blend(before.scores, {**after.own, **before.own})  # type: ignore[attr-defined]
        if among:
            then[r.name] = (
                frozenset(o for o, _ in among),
                scales({r.name: among}, floors, depth)[r.name][0],
            )
            merged = {**dict(among), **dict(lists[r.name])}  # a first score stays
            lists[r.name] = sorted(merged.items(), key=lambda item: (-item[1], item[0]))
    return then


def _ids(lists: dict[str, list[tuple[str, float]]]) -> list[str]:
    return list(dict.fromkeys(oid for ranked in lists.values() for oid, _ in ranked))


def _retrievers(
    brain: Context, mode: str, rows: Briefs, near: Neighbourhood, query: str
) -> list[Retriever]:
    from brain._recall.neighbours import TextInContext, VectorsInContext

    catalog = brain.caches.catalog if brain.caches.filter_text_hits else None
    seen = seen_by(brain.partition, brain.for_model)  # a model's words weigh among these
    text = TextInContext(
        brain.caches.fulltext, catalog, neighbourhood=near, briefs=rows, weighed_in=seen
    )
    if mode == "text" or brain.embedder is None:
        if mode in ("vector", "sparse"):
            raise InvalidInput(
                f"{mode} recall needs an embedder; brain.yaml says `embedder: none`",
                "set `embedder: minilm` and run `brain reindex`",
            )
        return [text]
    if mode == "hybrid" and relevance.unread_by_models(brain.embedder.name, query):
        return [text]
    vector = VectorsInContext(brain.caches, brain.embedder, neighbourhood=near, briefs=rows)
    if mode == "vector":
        return [vector]
    sparse = _sparse(brain, near, rows, required=mode == "sparse")
    if mode == "sparse":
        return sparse
    return [text, vector, *sparse]


def _sparse(brain: Context, near: Any, rows: Briefs, *, required: bool) -> list[Retriever]:
    """The learned-sparse retriever, when brain.yaml has one (`sparse:`)."""
    from brain._recall.sparse import SparseInContext

    if brain.sparse is None or not brain.caches.sparse_on:
        if required:
            raise InvalidInput(
                "sparse recall needs a sparse encoder; brain.yaml says `sparse: none`",
                "set `sparse: splade` and run `brain reindex`",
            )
        return []
    return [SparseInContext(brain.caches, brain.sparse, neighbourhood=near, briefs=rows)]

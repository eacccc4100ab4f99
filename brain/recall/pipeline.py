"""The recall pipeline: scope → retrieve → fuse → rank → describe, over one opened vault."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from brain.errors import InvalidInput
from brain.indexes.fulltext import Filters
from brain.model import Hit
from brain.notes import corrections, defining
from brain.recall import names as naming
from brain.recall.names import query_names, speakers, subjects, with_names, without
from brain.recall.rank import (
    CANDIDATES,
    MODES,
    Briefs,
    Retriever,
    VectorRetriever,
    fuse,
    rank,
    scales,
    to_hit,
    with_context,
)
from brain.recall.when import parse_time, with_time
from brain.scoping import resolve_scope
from brain.vault.archive import check_recallable
from brain.vault.paths import check_node

if TYPE_CHECKING:
    from brain.context import Context


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
    check_recallable(brain.store, brain.partition)
    brain.catch_up()
    # Scoping (precision warming, scoping.py): the nodes to search, None for all of them.
    filters = Filters(
        partition=brain.partition,
        node=check_node(node) if node else None,
        nodes=resolve_scope(brain, query, scope),
        exclude_status=() if include_superseded else ("superseded",),
        visibility=("normal",) if brain.for_model else None,
    )
    read = Briefs(brain.caches.catalog)  # each read once, by whichever stage asks first
    retrievers = _retrievers(brain, mode, read)
    brain.flush(vectors=any(r.name in ("vector", "sparse") for r in retrievers))
    depth = max(k * 5, CANDIDATES)
    # A person the query names (recall/names.py): a prior on what they said; a speaker's name
    # is no search word. The first retriever (full text, cheap) says who the names are, so
    # the others search once, with or without them.
    first, *others = retrievers
    for r in others:  # their models encode the query on a worker while the full text is searched
        r.start(query)
    lists = {first.name: first.search(query, depth, filters)}
    names = query_names(query)
    titles = brain.caches.catalog.titles(_ids(lists)) if names else {}
    people = subjects(names, titles)
    talking = speakers(people, titles)
    where = filters
    if talking:  # where the search without the names would go
        where = naming.kept_to(filters, people, titles, read.of(_ids(lists)))
    common = [n for n in talking if brain.caches.fulltext.share(n, where) >= naming.COMMON]
    rest = without(query, common) if common else None
    if rest is not None and first.name in naming.STRIP_NAMES:
        lists[first.name] = first.search(rest, depth, where)
    for r in others:
        if rest is not None and r.name in naming.STRIP_NAMES:
            lists[r.name] = r.search(rest, depth, where)
        else:
            lists[r.name] = r.search(query, depth, filters)
    if names:
        titles = brain.caches.catalog.titles(_ids(lists))
        people = subjects(names, titles)
    floors = {r.name: r.floor for r in retrievers if isinstance(r, VectorRetriever)}
    plain = fused = fuse(lists, floors, depth) if len(lists) > 1 else next(iter(lists.values()))
    briefs = read.of([oid for oid, _ in fused])
    if len(lists) > 1:
        fused = with_context(fused, briefs)
    # A time the query names ("on 9 November, 2022", "last week") lifts what was said then.
    window = parse_time(query, brain.clock.now())
    timed, factors = with_time(fused, briefs, window)
    # A person the query names lifts what they said (memories whose title opens with the name).
    named, name_factors = with_names(timed, titles, people)
    ranked = rank(named, briefs)
    best = (defining.defining_first(ranked, briefs) if defining_first else ranked)[:k]
    rows = brain.caches.catalog.get_many([oid for oid, _ in best])
    flags = corrections.suspicion_flags(
        brain.caches.catalog, [rows[oid] for oid, _ in best], visible_only=brain.for_model
    )
    why: dict[str, dict[str, Any]] = {}
    if explain:
        from brain.recall.explain import explain as explain_hits

        why = explain_hits(
            retrievers,
            lists,
            plain,
            fused,
            briefs,
            [o for o, _ in best],
            scales(lists, floors, depth),
        )
        for oid, entry in why.items() if window else ():  # what the time prior multiplied
            entry["time"] = factors.get(oid, 1.0)
            entry["time_said"] = window.said if window else None
        for oid, entry in why.items() if name_factors else ():  # what the name prior multiplied
            entry["name"] = name_factors.get(oid, 1.0)
            entry["name_said"] = list(people)
    hits = []
    for oid, score in best:
        stored = brain.caches.fulltext.stored(oid)
        body = stored["body"] if stored else ""
        hit = to_hit(rows[oid], score, body, query, flags.get(oid, ()))
        hits.append(dataclasses.replace(hit, explain=why[oid]) if oid in why else hit)
    return hits


def _ids(lists: dict[str, list[tuple[str, float]]]) -> list[str]:
    return list(dict.fromkeys(oid for ranked in lists.values() for oid, _ in ranked))


def _retrievers(brain: Context, mode: str, rows: Briefs) -> list[Retriever]:
    from brain.recall.neighbours import Neighbourhood, TextInContext, VectorsInContext

    near = Neighbourhood(brain.caches.catalog, briefs=rows)  # looked up once for both
    catalog = brain.caches.catalog if brain.caches.filter_text_hits else None
    text = TextInContext(brain.caches.fulltext, catalog, neighbourhood=near, briefs=rows)
    if mode == "text":
        return [text]
    if brain.embedder is None:
        if mode in ("vector", "sparse"):
            raise InvalidInput(
                f"{mode} recall needs an embedder; brain.yaml says `embedder: none`",
                "set `embedder: minilm` and run `brain reindex`",
            )
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
    from brain.recall.sparse import SparseInContext

    if brain.sparse is None or not brain.caches.sparse_on:
        if required:
            raise InvalidInput(
                "sparse recall needs a sparse encoder; brain.yaml says `sparse: none`",
                "set `sparse: splade` and run `brain reindex`",
            )
        return []
    return [SparseInContext(brain.caches, brain.sparse, neighbourhood=near, briefs=rows)]

"""Precision warming and placement: which nodes a query or a new memory belongs to, by index.json.

Each index becomes a profile: its stemmed words (name, entities, keywords, sub-node names and
keywords, summary), each with a weight for how strongly the index vouches for it. A query is
scored against every profile of the partition, each query word weighted by how few nodes know it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from brain._errors import InvalidInput
from brain._indexes.ports import CatalogReads, NodeIndexPort
from brain._terms import query_terms, stem, terms
from brain._vault.paths import check_node, node_hint

if TYPE_CHECKING:
    from brain._context import Context

Profile = dict[str, float]

# Weights of the index fields in a profile.
NAME_WEIGHT = 1.0
ENTITY_WEIGHT = 1.0
KEYWORD_WEIGHT = (1.0, 0.6)  # the first keyword … the last
SUB_NODE_WEIGHT = 0.7
SUMMARY_WEIGHT = 0.4
# choose_scope: the best node must cover this share of the query's weight; nodes within
# SCOPE_NEAR of the best count as matching too; more than SCOPE_MAX of them is ambiguous.
SCOPE_MIN = 0.5
SCOPE_NEAR = 0.8
SCOPE_MAX = 3
# Placement: a topic must share at least PLACE_WORDS of a new memory's strongest PLACE_TERMS
# words, covering PLACE_MIN of their weight.
PLACE_MIN = 0.2
PLACE_WORDS = 2
PLACE_TERMS = 10
KNOWLEDGE = "Knowledge"
INBOX = "Knowledge/Inbox"


def profile(doc: dict[str, Any]) -> Profile:
    """The words an index.json vouches for, stemmed, with the strongest weight each gets."""
    out: Profile = {}

    def add(text: str, weight: float) -> None:
        for term in query_terms(text):
            out[term] = max(out.get(term, 0.0), weight)

    add(str(doc.get("node_name", "")), NAME_WEIGHT)
    for entity in _strings(doc.get("key_entities")):
        add(entity, ENTITY_WEIGHT)
    kws = _strings(doc.get("aggregate_keywords"))
    high, low = KEYWORD_WEIGHT
    for rank, keyword in enumerate(kws):
        add(keyword, high - (high - low) * rank / max(len(kws) - 1, 1))
    for sub in doc.get("sub_nodes") or []:
        if isinstance(sub, dict):
            add(str(sub.get("name", "")), SUB_NODE_WEIGHT)
            for keyword in _strings(sub.get("keywords")):
                add(keyword, SUB_NODE_WEIGHT)
    add(str(doc.get("summary", "")), SUMMARY_WEIGHT)
    return out


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


# NodeIndex.read returns the same dict while a file is unchanged: its profile is kept with it
# (placing a memory built every node's profile anew, ~10 ms a memory at 2k notes, measured).
_PROFILES: dict[int, tuple[dict[str, Any], Profile]] = {}


def profiles(nodes: NodeIndexPort, partition: str) -> dict[str, Profile]:
    """The profile of every node of the partition that has an index file."""
    out = {}
    for node in nodes.indexed_nodes(partition):
        doc = nodes.read(partition, node)
        if doc is not None:
            out[node] = _profile_of(doc)
    return out


def _profile_of(doc: dict[str, Any]) -> Profile:
    kept = _PROFILES.get(id(doc))
    if kept is not None and kept[0] is doc:
        return kept[1]
    if len(_PROFILES) > 1000:
        _PROFILES.clear()
    made = profile(doc)
    _PROFILES[id(doc)] = (doc, made)
    return made


def score(terms: Sequence[str], candidates: dict[str, Profile]) -> list[tuple[str, float]]:
    """Each node's share (0–1) of the terms' weight; rarer terms across nodes weigh more."""
    if not terms or not candidates:
        return []
    n = len(candidates)
    weight = {
        t: math.log(1 + n / (0.5 + sum(1 for p in candidates.values() if t in p))) for t in terms
    }
    total = sum(weight.values())
    scored = [
        (node, sum(weight[t] * prof.get(t, 0.0) for t in terms) / total)
        for node, prof in candidates.items()
    ]
    return sorted(scored, key=lambda item: (-item[1], item[0]))


def score_nodes(brain: Context, query: str) -> list[tuple[str, float]]:
    """Every indexed node of the current partition with its score for the query, best first."""
    return score(query_terms(query), profiles(brain.node_index, brain.partition))


def choose_scope(brain: Context, query: str) -> list[str] | None:
    """The few nodes worth searching for this query, or None to search everything."""
    return pick(score_nodes(brain, query))


def pick(scored: Sequence[tuple[str, float]]) -> list[str] | None:
    """The most specific nodes that score clearly, or None when nothing does or too many do."""
    if not scored or scored[0][1] < SCOPE_MIN:
        return None
    best = scored[0][1]
    near = [node for node, s in scored if s >= best * SCOPE_NEAR]
    # A node and its sub-node both matching: the sub-node is the more precise place to look.
    chosen = sorted(n for n in near if not any(m.startswith(n + "/") for m in near))
    return chosen if len(chosen) <= SCOPE_MAX else None


def names_a_node(scope: str | None) -> bool:
    """Whether `--scope` is a node the person chose, not `all` or `auto`."""
    return scope not in (None, "all", "auto")


def resolve_scope(
    brain: Context, query: str, scope: str | None, node: str | None = None
) -> tuple[str, ...] | None:
    """`--scope`: `all` (or nothing) searches everything, `auto` chooses, else one node,
    which must overlap `node` (`--node`) when both are given: else nothing is searched."""
    if scope is None or scope == "all":
        return None
    if scope == "auto":
        chosen = choose_scope(brain, query)
        return tuple(chosen) if chosen else None
    if not scope.strip():
        raise InvalidInput("scope is empty; use auto, all or a node such as Knowledge/Inbox")
    named = holding(brain, scope, "scope")
    if node and not (_under(named, check_node(node)) or _under(check_node(node), named)):
        raise InvalidInput(
            f"node {node!r} and scope {scope!r} do not overlap, so nothing would be searched; "
            "give one of them"
        )
    return (named,)


def holding(brain: Context, node: str, what: str) -> str:
    """A node to search, checked to hold notes (this caller's to see): a node named wrong
    ("Knowlege/Inbox") is said to be so, not answered "nothing relevant" as if the vault held
    nothing about the query. Its newest note is looked for, newest first, so the search stops
    at the first one (0.1-0.5 ms on a 100k-note vault, where counting them took ~35 ms)."""
    node = check_node(node)
    if not brain.caches.catalog.notes(
        brain.partition, normal_only=brain.for_model, node=node, limit=1
    ):
        raise InvalidInput(
            f"{what} {node!r} holds no notes in partition {brain.partition!r} "
            + node_hint(brain.partition, node)
        )
    return node


def place(
    nodes: NodeIndexPort, catalog: CatalogReads, partition: str, text: str, title: str | None
) -> str:
    """The topic node a new memory without --node belongs to: an existing note of the same title,
    else the best-matching indexed topic under Knowledge/, else the inbox."""
    if title is not None:
        from brain._model import normalise_title

        row = catalog.placed_title(partition, normalise_title(title), KNOWLEDGE)
        if row is not None:
            return row.node
    candidates = {
        node: prof
        for node, prof in profiles(nodes, partition).items()
        if _under(node, KNOWLEDGE)
        and node != KNOWLEDGE
        and not _under(node, INBOX)
        and _holds_notes(nodes, partition, node)
    }
    words = signature(title or "", text)
    scored = [
        (node, s)
        for node, s in score(words, candidates)
        if s >= PLACE_MIN and sum(1 for w in words if w in candidates[node]) >= PLACE_WORDS
    ]
    if not scored:
        return INBOX
    # Equal scores: the deeper node is the more specific topic.
    ties = [node for node, s in scored if s >= scored[0][1] - 1e-9]
    return max(ties, key=lambda node: (node.count("/"), node))


def _under(node: str, ancestor: str) -> bool:
    return node == ancestor or node.startswith(ancestor + "/")


def _holds_notes(nodes: NodeIndexPort, partition: str, node: str) -> bool:
    """Whether notes live in the node itself (a folder of sub-folders only is a shelf)."""
    doc = nodes.read(partition, node) or {}
    inside_subs = sum(int(s.get("memory_count", 0)) for s in doc.get("sub_nodes") or [])
    return int(doc.get("total_memory_count", 0)) > inside_subs


def signature(title: str, text: str) -> list[str]:
    """A memory's strongest words, stemmed: what a topic must share for the memory to fit."""
    return list(dict.fromkeys(stem(t) for t, _ in terms(title, text, PLACE_TERMS)))

"""Split suggestions: a node that holds 50+ memories is offered sub-nodes from keyword clusters.

Clustering is deliberately plain and deterministic: the keyword shared by the most notes not
yet placed becomes a sub-node, until no keyword gathers enough notes. Cluster names come only
from `normal` notes, because suggestions are written to the daily log, which git carries.
Applying a split moves files and nothing else: ids and bytes stay as they were.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brain._errors import InvalidInput
from brain._indexes.catalog import ObjectRow
from brain._model import Visibility
from brain._terms import content_words
from brain._upkeep.tiers import Move, relocate
from brain._vault.paths import check_node, check_segment, node_hint

if TYPE_CHECKING:
    from brain._context import Context

SPLIT_AT = 50  # memories directly in a node before a split is suggested
MIN_CLUSTER = 5
MAX_CLUSTERS = 6
COMMON = 0.6  # a word in more than this share of a node's notes names nothing in particular


@dataclass(frozen=True)
class Cluster:
    name: str
    keyword: str
    ids: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "keyword": self.keyword,
            "count": len(self.ids),
            "ids": list(self.ids),
        }


@dataclass(frozen=True)
class Suggestion:
    partition: str
    node: str
    memories: int
    clusters: tuple[Cluster, ...]

    @property
    def placed(self) -> int:
        return sum(len(c.ids) for c in self.clusters)

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "node": self.node,
            "memories": self.memories,
            "clusters": [c.to_json() for c in self.clusters],
            "staying": self.memories - self.placed,
        }

    def line(self) -> str:
        parts = ", ".join(f"{c.name} ({len(c.ids)})" for c in self.clusters)
        return (
            f"{self.node}: {self.memories} memories → {parts}; {self.memories - self.placed} stay"
        )


def crowded(brain: Context) -> list[tuple[str, str, int]]:
    """(partition, node, count) of nodes holding SPLIT_AT or more titled notes directly."""
    return brain.caches.catalog.crowded_nodes(SPLIT_AT)


def suggest(brain: Context, partition: str, node: str) -> Suggestion | None:
    """The split of one node, or None when it is small or has no clear clusters."""
    rows = brain.caches.catalog.titled_in(partition, node)
    if len(rows) < SPLIT_AT:
        return None
    keywords = {row.id: _keywords(brain, row) for row in rows}
    named = [row.id for row in rows if row.visibility == Visibility.NORMAL]
    in_node = {w for part in node.split("/") for w in content_words(part)}
    df = Counter(w for oid in named for w in keywords[oid])
    limit = COMMON * len(rows)
    candidates = {w for w, n in df.items() if n <= limit and w not in in_node}
    min_size = max(MIN_CLUSTER, len(rows) // 10)
    unplaced = [row.id for row in rows]
    clusters: list[Cluster] = []
    while len(clusters) < MAX_CLUSTERS and candidates:
        counts = Counter(w for oid in unplaced for w in keywords[oid] if w in candidates)
        if not counts:
            break
        word, size = min(counts.items(), key=lambda item: (-item[1], item[0]))
        if size < min_size:
            break
        members = tuple(oid for oid in unplaced if word in keywords[oid])
        clusters.append(Cluster(_name(word), word, members))
        unplaced = [oid for oid in unplaced if oid not in set(members)]
        candidates.discard(word)
    if not clusters:
        return None
    return Suggestion(partition, node, len(rows), tuple(clusters))


def suggestions(brain: Context) -> list[Suggestion]:
    found = (suggest(brain, p, n) for p, n, _c in crowded(brain))
    return [s for s in found if s is not None]


def split(brain: Context, node: str, *, apply: bool = False) -> tuple[Suggestion, list[Move]]:
    """`brain split NODE [--apply]`: the suggestion for a node of this partition, carried out."""
    node = check_node(node)
    brain.catch_up()
    suggestion = suggest(brain, brain.partition, node)
    if suggestion is None:
        count = len(brain.caches.catalog.titled_in(brain.partition, node))
        if not count and not brain.caches.catalog.notes(brain.partition, node=node, limit=1):
            raise InvalidInput(
                f"node {node!r} holds no memories in partition {brain.partition!r} "
                + node_hint(brain.partition, node)
            )
        if count < SPLIT_AT:
            raise InvalidInput(
                f"node {node!r} holds {count} memories; a split is suggested from {SPLIT_AT}"
            )
        raise InvalidInput(f"node {node!r} has no clear clusters of keywords to split by")
    if not apply:
        return suggestion, []
    with brain.lock.hold():
        planned = [
            (row, cluster.name)
            for cluster in suggestion.clusters
            for oid in cluster.ids
            if (row := brain.caches.catalog.get(oid)) is not None
        ]
        _check_folders(brain, {f"{posixpath.dirname(row.path)}/{name}" for row, name in planned})
        moves = [relocate(brain, row, _target(brain, row, name)) for row, name in planned]
    return suggestion, moves


def _check_folders(brain: Context, folders: set[str]) -> None:
    """Refuse before a file moves when a sub-node's name is taken by a file or a link."""
    if not brain.capabilities.folder:
        return
    for folder in sorted(folders):
        where = brain.store.path(folder)
        if where.is_symlink() or (where.exists() and not where.is_dir()):
            raise InvalidInput(
                f"cannot split: {folder} is taken by a file, not a folder",
                "rename or move it, then split again",
            )


def _target(brain: Context, row: ObjectRow, name: str) -> str:
    folder, file = posixpath.split(row.path)
    suffix = ".md.zst" if file.endswith(".md.zst") else ".md"
    target = f"{folder}/{name}/{file}"
    n = 2
    while brain.store.exists(target):
        target = f"{folder}/{name}/{file[: -len(suffix)]} {n}{suffix}"
        n += 1
    return target


def _keywords(brain: Context, row: ObjectRow) -> set[str]:
    stored = brain.caches.fulltext.stored(row.id)
    text = row.title + "\n" + (stored["body"] if stored else "")
    return {w for w in content_words(text) if len(w) >= 3 and not w.isdigit()}


def _name(word: str) -> str:
    name = word[:1].upper() + word[1:]
    try:
        return check_segment(name, "sub-node")
    except InvalidInput:
        return f"Topic {name}"

"""The full-text cache: a tantivy BM25 index over every recallable object."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import shutil
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brain._errors import BrainError
from brain._indexes import glued, glyphs
from brain._terms import words
from brain._vault.files import owner_only

SCHEMA_VERSION = "3"  # 2: the `glyphs` field; 3: words apart (glued.py), Thai…, flags whole


@dataclass(frozen=True)
class TextDoc:
    """What the full-text index holds for one object."""

    id: str
    note_id: str
    partition: str
    node: str
    status: str
    visibility: str
    kind: str
    title: str
    body: str


@dataclass(frozen=True)
class Filters:
    """Restrictions every retriever applies the same way."""

    partition: str | None = None
    node: str | None = None  # this node and everything below it
    nodes: tuple[str, ...] | None = None  # any of these nodes and below (a chosen scope)
    exclude_status: tuple[str, ...] = ("superseded",)
    visibility: tuple[str, ...] | None = None  # None: any
    kinds: tuple[str, ...] | None = None
    exclude_kinds: tuple[str, ...] = ()
    ids: frozenset[str] | None = None  # only these objects (the memories of a named time)


def node_prefixes(node: str) -> list[str]:
    """`A/B/C` → [`A`, `A/B`, `A/B/C`]: lets a term query select a whole subtree."""
    parts = [p for p in node.split("/") if p]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))] or [""]


class FullText:
    """A tantivy index in a folder under `.brain/`; writers must hold the vault lock.

    Opening only reads: an index that is missing, half made or of another schema is left
    exactly as it is and named in `problem`, for `create()` under the writer lock. A reader
    never deletes or stamps anything another process may be using or building.
    """

    def __init__(self, folder: Path) -> None:
        import tantivy

        self._t = tantivy
        self.folder = folder
        self.schema = _schema(tantivy)
        self.index: Any = None
        self.problem = self._open()
        self._writer: Any = None
        self._seen: tuple[int, int, int] | None = None  # meta.json when last reloaded

    def _open(self) -> str | None:
        """Open the index if it is whole and of this schema; else say what is wrong with it."""
        stamp = self.folder / "schema"
        try:
            found = stamp.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return "is missing" if not self.folder.exists() else "is half made (no schema stamp)"
        except OSError as exc:
            return f"cannot be read ({exc.strerror})"
        if found != SCHEMA_VERSION:
            return f"was built for schema {found!r}, not {SCHEMA_VERSION!r}"
        # The stamp is written last, so a stamped folder holds a whole index; this check only
        # keeps `Index(reuse=True)` from ever creating one outside the lock.
        if not (self.folder / "meta.json").exists():
            return "is half made (no meta.json)"
        try:
            self.index = self._t.Index(self.schema, path=str(self.folder), reuse=True)
        except (ValueError, OSError) as exc:
            return f"cannot be opened ({exc})"
        return None

    def create(self) -> None:
        """Make a new, empty index in place of whatever is there. Lock held; idempotent.

        What was there is renamed aside first, so a process still reading it keeps its open
        files and a crash halfway leaves "missing", never a stamped half.
        """
        if self.folder.exists():
            aside = self.folder.with_name(f"{self.folder.name}.old-{os.urandom(4).hex()}")
            self.folder.rename(aside)
        for old in self.folder.parent.glob(f"{self.folder.name}.old-*"):
            shutil.rmtree(old, ignore_errors=True)
        with owner_only():
            self.folder.mkdir(parents=True)
            self.index = self._t.Index(self.schema, path=str(self.folder), reuse=True)
            temp = self.folder / ".schema.tmp"  # the lock is held: one writer, one name
            temp.write_text(SCHEMA_VERSION, encoding="utf-8")
            os.replace(temp, self.folder / "schema")
        self.problem = None

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """One tantivy writer for a batch of changes, committed at the end."""
        if self._writer is not None:
            yield
            return
        with owner_only():  # segment files are born in commits and merges
            self._writer = self.index.writer(heap_size=50_000_000, num_threads=1)
            try:
                yield
                self._writer.commit()
                self._writer.wait_merging_threads()
            except BaseException:
                with contextlib.suppress(Exception):
                    self._writer.rollback()
                raise
            finally:
                self._writer = None
                self.index.reload()

    def upsert(self, docs: Sequence[TextDoc]) -> None:
        with self.writing():
            for doc in docs:
                self._writer.delete_documents_by_term("id", doc.id)
                self._writer.add_document(
                    self._t.Document(
                        id=doc.id,
                        note_id=doc.note_id,
                        partition=doc.partition,
                        nodes=node_prefixes(doc.node),
                        status=doc.status,
                        visibility=doc.visibility,
                        kind=doc.kind,
                        title=glued.apart(doc.title),
                        body=glued.apart(doc.body),
                        written_title=doc.title.encode(),
                        written_body=doc.body.encode(),
                        glyphs=" ".join(glyphs.glyphs(f"{doc.title}\n{doc.body}")),
                    )
                )

    def remove(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self.writing():
            for object_id in ids:
                self._writer.delete_documents_by_term("id", object_id)

    def clear(self) -> None:
        with self.writing():
            self._writer.delete_all_documents()

    def has_deletes(self) -> bool:
        """Whether some segment still holds deleted documents (their text is still on disk)."""
        try:
            meta = json.loads((self.folder / "meta.json").read_text(encoding="utf-8"))
            return any(seg.get("deletes") for seg in meta.get("segments", []))
        except (OSError, ValueError, AttributeError):
            return True  # cannot tell: assume so, a rewrite is always safe

    def everything(self) -> dict[str, dict[str, str]]:
        """Every live object's stored title and body, by id."""
        searcher = self.index.searcher()
        count = int(searcher.num_docs)
        if not count:
            return {}
        result = searcher.search(self._t.Query.all_query(), count)
        out = {}
        for _score, address in result.hits:
            doc = self._doc(searcher, address)
            out[str(doc["id"][0])] = _written(doc)
        return out

    def compact(self, docs: Sequence[TextDoc] | None = None) -> None:
        """Drop dead files; with `docs`, first rewrite the index as exactly those documents.

        Deletes in tantivy are only marks until segments merge; rewriting every live document
        in one commit leaves the old segments wholly dead, so their files (and any forgotten
        text in them) are removed.
        """
        if docs is not None:
            with self.writing():
                self._writer.delete_all_documents()
                self.upsert(docs)
        with owner_only():
            writer = self.index.writer(heap_size=50_000_000, num_threads=1)
            try:
                writer.garbage_collect_files()
            finally:
                writer.wait_merging_threads()
        self.index.reload()

    def refresh(self) -> None:
        """See the index as last committed, by this process or another. Reloaded only when
        its meta.json changed (a commit writes a new one): each recall asks, and a reload
        that finds nothing new took ~0.1 ms at 100k memories. OSError if the index is gone."""
        stat = (self.folder / "meta.json").stat()
        seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if seen != self._seen:
            self.index.reload()
            self._seen = seen

    def __len__(self) -> int:
        return int(self.index.searcher().num_docs)

    def share(self, word: str, filters: Filters) -> float:
        """The fraction of the memories these filters let through whose body holds this word
        (0 when none pass)."""
        t, plain = self._t, " ".join(words(glued.apart(word)))
        if not plain:
            return 0.0
        allowed = [(t.Occur.Must, t.Query.all_query()), *self._filter_clauses(filters)]
        searcher = self.index.searcher()
        total = searcher.search(t.Query.boolean_query(allowed), 1, count=True).count
        with_word = [(t.Occur.Must, self.index.parse_query(plain, ["body"])), *allowed]
        found = searcher.search(t.Query.boolean_query(with_word), 1, count=True).count
        return int(found) / int(total) if total else 0.0

    def doc_freqs(
        self, stems: Sequence[str], within: Filters | None = None
    ) -> tuple[int, dict[str, int]]:
        """How many memories there are, and how many hold each of these stems (`stems`) in
        their title or body. Read from the term dictionaries: no search; `within`: counted
        among the memories these filters let through instead, one count a stem."""
        searcher = self.index.searcher()
        if within is None:
            found = {s: max(int(searcher.doc_freq(f, s)) for f in _fields(s)) for s in stems}
            return int(searcher.num_docs), found
        t = self._t
        allowed = [(t.Occur.Must, t.Query.all_query()), *self._filter_clauses(within)]

        def count(*required: Any) -> int:
            query = t.Query.boolean_query([*((t.Occur.Must, q) for q in required), *allowed])
            return int(searcher.search(query, 1, count=True).count)

        def held(stem: str) -> Any:
            fields = _fields(stem)
            either = [(t.Occur.Should, t.Query.term_query(self.schema, f, stem)) for f in fields]
            return t.Query.boolean_query(either)

        return count(), {s: count(held(s)) for s in stems}

    def search(
        self, query: str, k: int, filters: Filters, weighed_in: Filters | None = None
    ) -> list[tuple[str, float]]:
        """BM25 over title and body, and over the glyphs of a query that holds any; returns
        (object id, score), best first. `weighed_in`: each term weighed by its rarity among the
        memories those filters let through (a model's: what it may see), not the index's."""
        # Plain words only: nothing the query language would read as syntax.
        words, marks = glyphs.split(query)
        if not words and not marks:
            return []
        t = self._t
        searcher = self.index.searcher()
        if weighed_in is not None:
            weighed = self._weighed(searcher, words, marks, weighed_in)
            return self._hits(searcher, weighed, k, filters)
        either = []
        if words:
            english = self.index.parse_query(
                " ".join(words), ["title", "body"], field_boosts={"title": 1.5}
            )
            either.append((t.Occur.Should, english))
        for mark in marks:
            either.append((t.Occur.Should, t.Query.term_query(self.schema, "glyphs", mark)))
        # A query without glyphs is the English query itself, scored exactly as it always was.
        text_query = either[0][1] if len(either) == 1 else t.Query.boolean_query(either)
        return self._hits(searcher, text_query, k, filters)

    def _hits(self, searcher: Any, text_query: Any, k: int, filters: Filters) -> list[Any]:
        t = self._t
        clauses: list[tuple[Any, Any]] = [(t.Occur.Must, text_query)]
        clauses += self._filter_clauses(filters)
        result = searcher.search(t.Query.boolean_query(clauses), k)
        out = []
        for score, address in result.hits:
            doc = self._doc(searcher, address)
            out.append((str(doc["id"][0]), float(score)))
        return out

    def _weighed(self, searcher: Any, words: list[str], marks: list[str], within: Filters) -> Any:
        """The query `search` makes, each term's clause in each field boosted by its idf among
        `within`'s memories over the idf tantivy takes from the whole index: the scores say
        nothing of the memories `within` leaves out (but for the fields' mean length)."""
        t = self._t
        terms = [*dict.fromkeys(s for word in words for s in stems(word)), *marks]
        total, held = self.doc_freqs(terms, within)
        everyone = int(searcher.num_docs)
        clauses = []
        for term in terms:
            boosts = {"glyphs": 1.0} if term in marks else {"title": 1.5, "body": 1.0}
            for field, boost in boosts.items():
                found = int(searcher.doc_freq(field, term))
                if found:
                    ratio = _idf(total, held.get(term, 0)) / _idf(everyone, found)
                    clause = t.Query.term_query(self.schema, field, term)
                    clauses.append((t.Occur.Should, t.Query.boost_query(clause, boost * ratio)))
        return t.Query.boolean_query(clauses) if clauses else t.Query.empty_query()

    def search_bare(self, query: str, k: int, scored_as: Filters) -> list[tuple[str, float]]:
        """The query's hits with no filter applied, scored as under `scored_as`: tantivy adds
        each required filter clause's constant score (1) to a hit's BM25, in float32, so a
        caller that filters these hits itself gets the filtered query's scores."""
        t = self._t
        added = sum(1 for occur, _ in self._filter_clauses(scored_as) if occur == t.Occur.Must)
        hits = self.search(query, k, Filters(exclude_status=()))
        if not added:
            return hits
        out = []
        for oid, score in hits:
            for _ in range(added):  # as tantivy sums the clauses: one float32 add each
                score = _float32(score + 1.0)
            out.append((oid, score))
        return out

    def _filter_clauses(self, filters: Filters) -> list[tuple[Any, Any]]:
        t = self._t
        clauses: list[tuple[Any, Any]] = []

        def any_of(field: str, values: Sequence[str]) -> Any:
            # One value: a term query scored 1 as a term set is, at a third of its cost over a
            # big index (100k memories: 0.7 against 1.9 ms; 1M: 20 against 27), same hits.
            if len(values) == 1:
                one = t.Query.term_query(self.schema, field, values[0])
                return t.Query.const_score_query(one, 1.0)
            return t.Query.term_set_query(self.schema, field, list(values))

        if filters.partition is not None:
            clauses.append((t.Occur.Must, any_of("partition", [filters.partition])))
        if filters.node:
            clauses.append((t.Occur.Must, any_of("nodes", [filters.node.strip("/")])))
        if filters.nodes is not None:
            wanted = [n.strip("/") for n in filters.nodes]
            clauses.append((t.Occur.Must, any_of("nodes", wanted)))
        for status in filters.exclude_status:  # scores nothing: a term query each
            clauses.append((t.Occur.MustNot, t.Query.term_query(self.schema, "status", status)))
        if filters.visibility is not None:
            clauses.append((t.Occur.Must, any_of("visibility", filters.visibility)))
        if filters.kinds is not None:
            clauses.append((t.Occur.Must, any_of("kind", filters.kinds)))
        for kind in filters.exclude_kinds:
            clauses.append((t.Occur.MustNot, t.Query.term_query(self.schema, "kind", kind)))
        if filters.ids is not None:
            clauses.append((t.Occur.Must, any_of("id", sorted(filters.ids))))
        return clauses

    def _doc(self, searcher: Any, address: Any) -> Any:
        """A stored document. The store's blocks are read only here, so damage to them (which
        opening does not see) is named here, never a traceback."""
        try:
            return searcher.doc(address)
        except ValueError as exc:
            raise BrainError(
                f"the full-text index {self.folder} is damaged ({exc})", "run `brain reindex`"
            ) from exc

    def stored(self, object_id: str) -> dict[str, str] | None:
        """Title and body as indexed, for snippets (no note file read)."""
        return self.stored_many([object_id])[object_id]

    def stored_many(self, ids: Sequence[str]) -> dict[str, dict[str, str] | None]:
        """`stored` of each of these ids (None for one not indexed), in one search: a recall
        reads its best 20 (one search each took ~3 times as long at 100k memories)."""
        t = self._t
        wanted = list(dict.fromkeys(ids))
        out: dict[str, dict[str, str] | None] = dict.fromkeys(wanted)
        if not wanted:
            return out
        terms = [(t.Occur.Should, t.Query.term_query(self.schema, "id", i)) for i in wanted]
        searcher = self.index.searcher()
        for _score, address in searcher.search(t.Query.boolean_query(terms), len(wanted)).hits:
            doc = self._doc(searcher, address)
            out[str(doc["id"][0])] = _written(doc)
        return out


def stems(text: str) -> list[str]:
    """The text's terms as the index holds them (tantivy's `en_stem`: simple tokens, long ones
    dropped, lowercased, English stems; words apart: glued.py), so a word is matched as BM25
    matches it."""
    return list(_analyzer().analyze(glued.apart(text)))


@functools.cache
def _analyzer() -> Any:
    import tantivy as t

    return (
        t.TextAnalyzerBuilder(t.Tokenizer.simple())
        .filter(t.Filter.remove_long(40))
        .filter(t.Filter.lowercase())
        .filter(t.Filter.stemmer("english"))
        .build()
    )


def _fields(term: str) -> tuple[str, ...]:
    """The fields that hold a term: a glyph's own, or the English title and body."""
    return ("glyphs",) if glyphs.is_glyph(term) else ("title", "body")


def _written(doc: Any) -> dict[str, str]:
    """A stored document's title and body as written (the fields index them `glued.apart`)."""
    return {"title": doc["written_title"][0].decode(), "body": doc["written_body"][0].decode()}


def _idf(total: int, found: int) -> float:
    """BM25's idf as tantivy computes it."""
    return math.log(1 + max(total - found + 0.5, 0.0) / (found + 0.5))


def _float32(value: float) -> float:
    return float(struct.unpack("f", struct.pack("f", value))[0])


def _schema(tantivy: Any) -> Any:
    builder = tantivy.SchemaBuilder()
    for name in ("id", "note_id"):
        builder.add_text_field(name, stored=True, tokenizer_name="raw")
    for name in ("partition", "nodes", "status", "visibility", "kind"):
        builder.add_text_field(name, stored=False, tokenizer_name="raw")
    # Title and body indexed as glued.apart reads them, kept as written (bytes: stored alone).
    for name in ("title", "body"):
        builder.add_text_field(name, stored=False, tokenizer_name="en_stem")
        builder.add_bytes_field(f"written_{name}", stored=True)
    # Title and body's glyph terms, space-separated (glyphs.py): counts, no positions.
    builder.add_text_field("glyphs", stored=False, tokenizer_name="whitespace", index_option="freq")
    return builder.build()

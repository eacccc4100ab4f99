"""Hybrid recall: vectors beside full text, fused; embeddings cached; forget drops vectors."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from brain._brain import Brain, open_vault
from brain._clock import FixedClock
from brain._errors import InvalidInput
from brain._indexes.catalog import Brief
from brain._indexes.embedder import HashingEmbedder, MiniLMEmbedder
from brain._recall.rank import fuse, with_context
from brain._settings import model_cache_dir
from brain.testing import T0, use_embedder

ROOT = Path(__file__).resolve().parents[2]


class CountingEmbedder(HashingEmbedder):
    """The test embedder, counting every text it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]):  # type: ignore[no-untyped-def]
        self.seen.extend(texts)
        return super().embed(texts)


def test_fusion_rewards_agreement() -> None:
    fused = fuse({"text": [("a", 9.0), ("b", 8.0)], "vector": [("b", 0.9), ("c", 0.8)]})
    assert [oid for oid, _ in fused] == ["b", "a", "c"]


def test_unchanged_notes_are_never_embedded_twice(vault: Path, clock: FixedClock) -> None:
    embedder = CountingEmbedder()
    brain = open_vault(vault, clock=clock, embedder=embedder)
    note = brain.remember("Otters hold hands while they sleep", title="Otters")
    brain.recall("otters")
    first = len(embedder.seen)
    assert any("Otters hold hands" in t for t in embedder.seen)
    brain.recall("sleeping otters")
    brain.reindex()
    brain.recall("otters again")
    texts = [t for t in embedder.seen[first:] if "Otters hold hands" in t]
    assert texts == []  # reindex reused the cached vector
    brain.remember("They also use tools", title="Otters")  # changed: embedded again
    brain.recall("otters")
    assert sum("They also use tools" in t for t in embedder.seen) == 1
    assert brain._context.caches.vectors.ids().count(note.id) == 1
    brain.close()


def test_forget_removes_the_vector(brain: Brain) -> None:
    note = brain.remember("Quokkas smile at tourists", title="Quokka")
    brain.recall("quokka")
    assert note.id in brain._context.caches.vectors.ids()
    brain.forget(note.id)
    brain.recall("anything at all")
    assert note.id not in brain._context.caches.vectors.ids()
    assert brain.recall("quokkas smile", mode="vector") == []


def test_modes_and_their_errors(brain: Brain, vault: Path, clock: FixedClock) -> None:
    note = brain.remember("Narwhal tusks are teeth", title="Narwhal")
    for mode in ("hybrid", "text", "vector"):
        assert brain.recall("narwhal tusks", mode=mode)[0].id == note.id
    with pytest.raises(InvalidInput, match="unknown mode 'fuzzy'"):
        brain.recall("x", mode="fuzzy")
    plain = open_vault(vault, clock=clock, embedder=None)
    assert plain.recall("narwhal", mode="hybrid")[0].id == note.id
    with pytest.raises(InvalidInput, match="needs an embedder"):
        plain.recall("narwhal", mode="vector")
    plain.close()


def test_vector_results_respect_the_node_scope(brain: Brain) -> None:
    inside = brain.remember("Sourdough starter needs flour", node="Knowledge/Domains/Baking")
    brain.remember("Sourdough starter needs flour too", node="Knowledge/Domains/Other")
    hits = brain.recall("sourdough starter flour", mode="vector", node="Knowledge/Domains/Baking")
    assert [h.id for h in hits] == [inside.id]


def test_an_unknown_embedder_name_is_refused(vault: Path) -> None:
    use_embedder(vault, "word2vec")
    with pytest.raises(
        InvalidInput,
        match=r"brain\.yaml line \d+: field 'embedder' names an unknown embedder 'word2vec'",
    ):
        open_vault(vault)


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


@pytest.mark.model
def test_a_paraphrase_that_full_text_misses_hybrid_finds(
    vault: Path, clock: FixedClock, minilm: MiniLMEmbedder
) -> None:
    brain = open_vault(vault, clock=clock, embedder=minilm)
    target = brain.remember("Caroline contacted two agencies that help people adopt children")
    brain.remember("Melanie painted a sunset over the lake last weekend")
    brain.remember("The car needs new tyres before winter")
    query = "which organisations did she reach out to about becoming a parent"
    assert target.id not in [h.id for h in brain.recall(query, mode="text")]
    assert brain.recall(query, mode="hybrid")[0].id == target.id
    brain.close()


@pytest.mark.model
def test_hybrid_recall_from_a_fresh_process_uses_onnx_not_torch(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    minilm.embed(["make sure the export exists"])
    vault = tmp_path / "v"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    brain = [sys.executable, "-m", "brain"]
    subprocess.run([*brain, "init", str(vault)], check=True, capture_output=True, env=env)
    subprocess.run(
        [*brain, "remember", "Caroline adopted a puppy", "--vault", str(vault)],
        check=True,
        capture_output=True,
        env=env,
    )
    probe = (
        "import sys\nfrom brain._cli import main\n"
        f"sys.argv = ['brain', 'recall', 'adopting a dog', '--vault', {str(vault)!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH')\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env)
    assert "Caroline adopted a puppy" in result.stdout, result.stdout + result.stderr
    assert result.stdout.strip().endswith("NO-TORCH")


def _brief(
    oid: str, node: str = "Inbox", kind: str = "titled", created: str = "2026-02-01T09:00:05Z"
) -> Brief:
    """A catalog brief of an active, visible memory in partition main."""
    return Brief(oid, "main", node, "active", "normal", kind, created, None)


def test_memories_written_together_lend_each_other_context() -> None:
    rows = {
        "lonely": _brief("lonely", created="2026-01-01T10:00:00Z"),
        "answer": _brief("answer", created="2026-02-01T09:00:00Z"),
        "context": _brief("context", created="2026-02-01T09:00:00Z"),
    }
    fused = [("lonely", 0.50), ("answer", 0.45), ("context", 0.40)]
    assert [oid for oid, _ in with_context(fused, rows)] == ["answer", "context", "lonely"]


def test_context_stays_within_a_node() -> None:
    rows = {"memory": _brief("memory", "Knowledge/Inbox"), "template": _brief("template", "Master")}
    rows["reply"] = _brief("reply", "Knowledge/Inbox")
    lifted = dict(with_context([("memory", 1.0), ("reply", 0.1), ("template", 0.1)], rows))
    assert lifted["reply"] == pytest.approx(0.1 + 0.5 * 1.1)  # its own node's best two
    assert lifted["template"] == pytest.approx(0.1 + 0.5 * 0.1)  # only what its node found


def test_a_documents_sections_share_context_with_it_not_with_other_documents() -> None:
    """A connector syncs documents in one minute into one node: a section is lent the best of
    its own document, not of every document synced beside it."""
    rows = {oid: _brief(oid, "Docs", "chunk") for oid in ("boiler#1", "boiler#2", "desk#1")}
    rows |= {oid: _brief(oid, "Docs", "document") for oid in ("boiler", "desk")}
    fused = [("boiler#1", 1.0), ("boiler", 0.4), ("boiler#2", 0.1), ("desk#1", 0.1)]
    lifted = dict(with_context(fused, rows))
    assert lifted["boiler#2"] == pytest.approx(0.1 + 0.5 * 1.4)
    assert lifted["desk#1"] == pytest.approx(0.1 + 0.5 * 0.1)


@pytest.mark.model
def test_a_new_vaults_notes_are_not_lifted_by_its_first_memory(
    vault: Path, clock: FixedClock, minilm: MiniLMEmbedder
) -> None:
    """The notes a vault is made with and its first memory share a minute, not a conversation
    (scripts/demo, as a new user meets it): recall of the memory shows them, if at all, weak.
    Filled in, as an untouched one is no answer at all (test_recall_text.py)."""
    from brain._indexes.sparse import SpladeEncoder

    for path, line in (
        ("Master/Biography.md", "Lives in Porto with two cats."),
        ("Master/Goals.md", "Learn to sail before the summer."),
        ("LLM/Protocols.md", "Answer in short paragraphs."),
    ):
        note = vault / "main" / path
        note.write_text(f"{note.read_text()}\n{line}\n")
    splade = SpladeEncoder(model_cache_dir(os.environ, Path.home()))
    brain = open_vault(vault, clock=clock, embedder=minilm, sparse=splade)
    clock.set(T0 + timedelta(seconds=5))  # the vault was made at T0
    first = brain.remember("We moved the launch to March").id
    hits = brain.recall("when is the launch", explain=True)
    assert hits[0].id == first and len(hits) > 1  # the sparse list finds the vault's notes
    for hit in hits[1:]:
        assert hit.explain is not None and hit.explain["context"] < hits[0].score / 10
        assert hit.band == "weak", (hit.title, hit.explain)  # they hold nothing of the query
    brain.close()

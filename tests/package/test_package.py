"""brain as a real package: a wheel that holds the vault template and the models, and works
unpacked on its own (what pip, pipx and `uv tool install` put in place)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from brain._indexes.pins import PINS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "--wheel-dir",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (built,) = out.glob("brain_memory-*.whl")
    return built


def test_the_wheel_holds_the_template_the_models_and_no_heavy_requirement(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        requires = [
            line.split(":", 1)[1].strip()
            for line in archive.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist:")
        ]
    for model, files in PINS.items():
        for name in files:
            assert f"brain/_models/{model}/{name}" in names
    assert "brain/_template/brain.yaml" in names
    assert "brain/py.typed" in names
    plain = [r for r in requires if "extra ==" not in r]  # what a plain install resolves
    assert not [r for r in plain if r.lower().startswith(("torch", "transformers", "sentence"))]
    assert any(r.startswith("sentence-transformers") and "extra ==" in r for r in requires)


@pytest.mark.model
def test_the_unpacked_wheel_runs_brain_with_its_own_models(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    env = {
        **os.environ,
        "PYTHONPATH": str(site),  # the wheel's brain first; its dependencies from this venv
        "HOME": str(tmp_path / "home"),
        "BRAIN_DAEMON": "off",
    }
    env.pop("BRAIN_VAULT", None)
    vault = tmp_path / "home" / "brain"

    def brain(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "brain", *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
            check=False,
        )

    version = brain("--version")
    assert version.returncode == 0 and "0.1.0" in version.stdout
    where = subprocess.run(
        [sys.executable, "-c", "import brain; print(brain.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=True,
    )
    assert where.stdout.startswith(str(site))
    assert brain("init").returncode == 0
    assert (vault / "brain.yaml").is_file()  # the template came from inside the wheel
    assert brain("remember", "We moved the launch to March").returncode == 0
    found = brain("recall", "when is the launch", "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["hits"]
    assert "March" in hits[0]["snippet"]

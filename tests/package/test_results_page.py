"""docs/benchmarks.md is a short results page; the history lives in docs/lab/, and links hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "benchmarks.md"
LAB = ROOT / "docs" / "lab"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CITES = {"LoCoMo": "Maharana et al.", "LongMemEval": "Wu et al."}


def _anchors(path: Path) -> set[str]:
    """The heading anchors GitHub makes: lower case, punctuation dropped, spaces to hyphens."""
    heads = re.findall(r"^#+ (.+)$", path.read_text(), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in heads}


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(LAB.glob("*.md"))]


def test_the_results_page_is_short_and_reruns_each_figure_with_a_real_benchmark() -> None:
    text = PAGE.read_text()
    assert len(text.splitlines()) <= 250
    for module in set(re.findall(r"python -m bench\.(\w+)", text)):
        assert (ROOT / "bench" / f"{module}.py").is_file(), module


def test_the_results_page_links_every_lab_file() -> None:
    linked = {Path(target).name for target in LINK.findall(PAGE.read_text())}
    assert sorted(LAB.glob("*.md")), "the history has moved to docs/lab/"
    for lab in LAB.glob("*.md"):
        assert lab.name in linked, lab.name


@pytest.mark.parametrize("document", _documents(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_reach_a_file_and_heading_that_exist(document: Path) -> None:
    for target in LINK.findall(document.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        file, _, anchor = target.partition("#")
        found = (document.parent / file).resolve() if file else document
        assert found.exists(), f"{document.name}: {target}"
        if anchor and found.suffix == ".md":
            assert anchor in _anchors(found), f"{document.name}: {target}"


@pytest.mark.parametrize("document", [PAGE, *sorted(LAB.glob("*.md"))], ids=lambda p: p.name)
def test_the_data_sets_used_are_cited(document: Path) -> None:
    text = document.read_text()
    for data, authors in CITES.items():
        if data in text:
            assert authors in text, f"{document.name} uses {data} without citing {authors}"

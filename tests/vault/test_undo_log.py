"""An undone correction or sleep leaves the daily log: the journal forgets what was undone."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from brain._brain import Brain
from brain._clock import FixedClock
from brain._errors import NotFound
from brain._vault import forgotten
from brain.testing import T0


def _log(vault: Path, when: str) -> str:
    return (vault / f"main/Insights/Logs/{when}.md").read_text()


def test_an_undone_correction_is_not_in_the_daily_log(gbrain: Brain, vault: Path) -> None:
    dinner = gbrain.remember("Dinner is at eight.", title="Dinner")
    gbrain.correct(dinner.id, "Dinner is at nine.")
    gbrain.git_undo()
    gbrain.sleep()
    assert "## Corrected" not in _log(vault, "2026-12-02")


def test_a_sleep_undone_then_run_again_logs_each_aging_once(
    gbrain: Brain, vault: Path, clock: FixedClock
) -> None:
    dinner = gbrain.remember("Dinner is at eight.", title="Dinner")
    clock.set(T0 + timedelta(days=90))
    gbrain.sleep()
    gbrain.git_undo()
    assert [r.status for r in gbrain.list(node="Knowledge")] == ["active"]
    gbrain.sleep()
    log = _log(vault, "2027-03-02")
    assert "## Aged (1)" in log and log.count(dinner.id) == 1


def test_an_undone_forget_is_not_forgotten(gbrain: Brain, vault: Path) -> None:
    """The note is back: the day's log does not count it forgotten, and the forgetting
    record that `doctor --forgotten` and later imports read of it is gone."""
    heron = gbrain.remember("The heron nests by the old mill pond.", title="Heron")
    kites = gbrain.remember("Kites fly best in the autumn wind.", title="Kites")
    gbrain.forget(kites.id)
    gbrain.forget(heron.id)
    gbrain.git_undo()
    assert gbrain.expand(heron.id, touch=False).title == "Heron"
    assert [r.names(heron.id) for r in forgotten.load(vault)] == [False]  # kites' stays
    with pytest.raises(NotFound):
        forgotten.lookup(vault, heron.id)
    gbrain.sleep()
    assert "## Forgotten (1)" in _log(vault, "2026-12-02")  # kites, still forgotten

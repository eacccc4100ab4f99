"""A model never sees a note as it was indexed once its file says otherwise: a note made
private by an edit in place (which no folder shows) while the caches trust the folders."""

from __future__ import annotations

import pytest

from brain import Brain
from brain._errors import NotFound
from brain._indexes import catchup
from brain._model import Note


@pytest.fixture
def trusting_folders(brain: Brain, monkeypatch: pytest.MonkeyPatch) -> Brain:
    """A walked vault whose catch-ups look at folders only, as a vault of 10k files does."""
    monkeypatch.setattr(catchup, "QUICK_ABOVE", 0)
    return brain


def _made_private_in_place(brain: Brain, note: Note) -> None:
    path = brain.root / note.path
    inode = path.stat().st_ino
    path.write_text(
        path.read_text().replace("status: active", "status: active\nvisibility: private")
    )
    assert path.stat().st_ino == inode  # rewritten in place: its folder shows nothing


def test_a_note_made_private_in_place_is_not_recalled_by_a_model(
    trusting_folders: Brain,
) -> None:
    brain = trusting_folders
    party = brain.remember("The surprise party for Ana is on Friday", title="Party plan")
    brain.remember("Ana likes lemon cake", title="Ana's cake")
    brain._context.catch_up(force=True)
    _made_private_in_place(brain, party)
    model = brain.at(for_model=True)
    titles = [h.title for h in model.recall("surprise party for Ana")]
    assert "Party plan" not in titles and "Ana's cake" in titles
    assert (
        brain._context.caches.catalog.get(party.id).visibility == "private"
    )  # caught up on the way
    assert "Party plan" in [h.title for h in brain.recall("surprise party for Ana")]  # the person


def test_a_note_made_private_in_place_cannot_be_read_by_a_model(trusting_folders: Brain) -> None:
    brain = trusting_folders
    diary = brain.remember("Felt low after the appointment", title="Diary, Tuesday")
    brain._context.catch_up(force=True)
    _made_private_in_place(brain, diary)
    model = brain.at(for_model=True)
    with pytest.raises(NotFound, match=diary.id):
        model.expand(diary.id)
    with pytest.raises(NotFound, match=diary.id):
        model._context.get(diary.id)
    assert brain._context.get(diary.id).visibility == "private"  # the person still reads it


def test_a_note_made_private_in_place_cannot_be_forgotten_by_a_model(
    trusting_folders: Brain,
) -> None:
    brain = trusting_folders
    diary = brain.remember("Felt low after the appointment", title="Diary, Tuesday")
    brain._context.catch_up(force=True)
    _made_private_in_place(brain, diary)
    with pytest.raises(NotFound, match=diary.id):
        brain.at(for_model=True).forget(diary.id)
    assert (brain.root / diary.path).exists()


def test_a_note_made_private_in_place_is_not_listed_for_a_model(trusting_folders: Brain) -> None:
    brain = trusting_folders
    brain.remember("Felt low after the appointment", title="Diary, Tuesday")
    brain.remember("Buy stamps", title="Errand")
    brain._context.catch_up(force=True)
    diary = next(n for n in brain._context.notes() if n.title == "Diary, Tuesday")
    _made_private_in_place(brain, diary)
    model = brain.at(for_model=True)
    assert "Diary, Tuesday" not in [row.title for row in model.list()]
    assert "Errand" in [row.title for row in model.list()]

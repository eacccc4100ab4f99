"""The session gate: session → addendum → maintain → remarks → diary → close, in that order.

The gate's state is a label (`gate: <last step done>`) in the front-matter of today's session
note, never in process memory: it survives a restart, and every process on the vault sees the
same gate. Each step reads and advances the label while holding the writer lock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from brain._clock import day_of, utc_days
from brain._errors import BrokenNote, InvalidInput
from brain._indexes.catalog import ObjectRow
from brain._model import LOCAL_ONLY, Note, Status, Visibility, parse_iso
from brain._notes.writing import SINGLETONS, THREADS, Request, check_text, plan
from brain._vault.archive import check_writable

if TYPE_CHECKING:
    from brain._context import Context

STEPS = ("session", "addendum", "maintain", "remarks", "diary", "close")
SESSIONS = "Memory/Sessions"
DIARY = "LLM/Diary"
BRIEF_CHARS = 4000  # per briefing note: enough to be useful, never the whole vault
RECENT_DEFINING = 10


@dataclass(frozen=True)
class Step:
    """What a gate step did: the step, the one now due, and what it has to say."""

    step: str
    due: str
    note_id: str
    report: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "next": self.due, "session_note": self.note_id, **self.report}


def due_after(label: str | None) -> str:
    """The step that may run next, given the last one done (a closed session may reopen)."""
    if label is None or label == "close":
        return "session"
    return STEPS[STEPS.index(label) + 1]


class Gate:
    """The gate of one Brain's partition, for today (by the Brain's clock)."""

    def __init__(self, brain: Context, source: Mapping[str, Any] | None = None) -> None:
        self.brain = brain
        self.source = dict(source or {"via": "cli"})

    def state(self) -> str | None:
        note = self._today()
        return self._label(note) if note else None

    def session(self) -> Step:
        """Open today's session note and return the briefing."""
        return self._advance("session", "Session opened.", self.briefing)

    def addendum(self, text: str) -> Step:
        check_text(text, self.brain.settings.max_text_bytes)
        return self._advance("addendum", text, dict)

    def maintain(self) -> Step:
        return self._advance("maintain", "Maintenance run.", self.upkeep)

    def remarks(self) -> Step:
        return self._advance("remarks", "Reflection cues read.", self.cues)

    def diary(self, text: str) -> Step:
        check_text(text, self.brain.settings.max_text_bytes)

        def write_diary() -> dict[str, Any]:
            note = self._append(DIARY, text)
            return {"diary_note": note.id}

        return self._advance("diary", "Diary written.", write_diary)

    def close(self, summary: str | None = None) -> Step:
        if summary is not None:
            check_text(summary, self.brain.settings.max_text_bytes)
        text = "Session closed." + (f"\n\n{summary.strip()}" if summary else "")
        return self._advance("close", text, dict)

    # the label ---------------------------------------------------------------
    def _today(self) -> Note | None:
        path = self._path()
        if self.brain.for_model and self.brain.store.exists(f"{LOCAL_ONLY}/{path}"):
            raise self._closed("session")
        if not self.brain.store.exists(path):
            return None
        note = self.brain.store.read(path)
        if self.brain.for_model and note.visibility != Visibility.NORMAL:
            # The person has hidden today's session note: its label, id and text stay theirs.
            raise self._closed("session")
        return note

    def _closed(self, what: str) -> InvalidInput:
        return InvalidInput(
            f"today's {what} note is kept by the person to themselves; "
            "the session gate cannot write into it",
            "carry on without the gate today, or ask the person",
        )

    def _path(self) -> str:
        day = self.brain.clock.now().strftime("%Y-%m-%d")
        return f"{self.brain.partition}/{SESSIONS}/{day}.md"

    def _label(self, note: Note) -> str | None:
        value = note.meta.get("gate")
        if value is None:
            return None
        if value not in STEPS:
            raise BrokenNote(
                f"{note.path}: front-matter field 'gate' is {value!r}; "
                f"expected one of {', '.join(STEPS)}"
            )
        return str(value)

    def _advance(self, step: str, text: str, work: Callable[[], Mapping[str, Any]]) -> Step:
        brain = self.brain
        with brain.lock.hold():
            check_writable(brain.store, brain.partition)
            brain.catch_up()
            note = self._today()
            label = self._label(note) if note else None
            due = due_after(label)
            if step != due:
                where = f"the gate is at {label!r}" if label else "no session is open today"
                raise InvalidInput(
                    f"{step} is out of order: {where}; the step due is {due}",
                    f"order: {' → '.join(STEPS)}",
                )
            report = work()
            session = self._append(SESSIONS, f"**{step}** — {text.strip()}")
            session = brain.save(session.with_meta(gate=step))
        return Step(step, due_after(step), session.id, report)

    def _append(self, node: str, text: str) -> Note:
        """Add a timestamped block to today's dated note in node (lock held).

        For a model, `Brain.save` refuses a note hidden from it; a local-only note of the day
        lives in another folder, so it is looked for here.
        """
        brain = self.brain
        request = Request(
            text=text, partition=brain.partition, node=node, kind="dated", source=self.source
        )
        note = plan(request, brain.store, brain.caches.catalog, brain.clock.now()).note
        if brain.for_model and brain.store.exists(f"{LOCAL_ONLY}/{note.path}"):
            raise self._closed("diary" if node == DIARY else "session")
        return brain.save(note)

    # what the steps say ------------------------------------------------------
    def briefing(self) -> dict[str, Any]:
        """Who the person is, how to work, what is open, and what mattered lately."""
        notes: dict[str, Any] = {}
        for node, title in sorted(SINGLETONS):
            found = self.brain.caches.catalog.titled(
                self.brain.partition, node, title, normal_only=self.brain.for_model
            )
            if found:
                body = self.brain.store.read(found[0].path).body.strip()
                cut = len(body) > BRIEF_CHARS
                notes[title] = body[:BRIEF_CHARS] + ("…" if cut else "")
        catalog = self.brain.caches.catalog
        part, hide = self.brain.partition, self.brain.for_model
        threads = catalog.active_threads(part, normal_only=hide, latest=20)
        defining = catalog.recent_defining(part, normal_only=hide, limit=RECENT_DEFINING)
        return {
            "briefing": notes,
            "active_threads": [_brief(r) for r in threads],
            "defining_memories": [{**_brief(r), "defining": r.defining} for r in defining],
        }

    def upkeep(self) -> dict[str, Any]:
        """Light upkeep (the caches catch up) and what needs the assistant's attention."""
        brain = self.brain
        found = brain.catch_up()
        now = brain.clock.now()
        soon = now - timedelta(days=max(brain.settings.dormant_days - 7, 0))
        threads = brain.caches.catalog.active_threads(brain.partition, normal_only=brain.for_model)
        fading = [r for r in threads if parse_iso(r.touched) <= soon]
        inbox = brain.caches.catalog.active_in(
            brain.partition, "Knowledge/Inbox", normal_only=brain.for_model
        )
        prefix = brain.partition + "/"
        broken = [f.path for f in brain.caches.catalog.broken_files() if f.path.startswith(prefix)]
        return {
            "caught_up": self._caught_up(found.changed, found.removed),
            # A broken file's visibility cannot be read, and its name is a title: a model is
            # told how many there are, and the person's `brain doctor` names them.
            "broken_notes": len(broken) if brain.for_model else broken,
            "threads_fading": [_brief(r) for r in fading],
            "inbox_to_file": len(inbox),
        }

    def _caught_up(self, changed: Sequence[str], removed: Sequence[str]) -> dict[str, int]:
        """What the catch-up found; for a model only the notes it may see (a removed file's
        visibility is gone with it, so a model is not told of removals)."""
        brain = self.brain
        if not brain.for_model:
            return {"changed": len(changed), "removed": len(removed)}
        catalog = brain.caches.catalog
        rows = [catalog.file(p) for p in changed]
        notes = [catalog.get(r.note_id) for r in rows if r is not None and r.note_id]
        return {"changed": sum(1 for n in notes if n is not None and brain.shows(n))}

    def cues(self) -> dict[str, Any]:
        """Reflection cues: today's corrections, notes worth suspicion, threads touched. Today
        is the person's calendar day, of which the stored UTC times may name two."""
        now = self.brain.clock.now()
        day, zone = now.date(), now.tzinfo
        catalog = self.brain.caches.catalog
        found: dict[str, ObjectRow] = {}
        for utc_day in utc_days(day, zone):
            for row in catalog.created_or_touched_on(
                self.brain.partition, utc_day, normal_only=self.brain.for_model
            ):
                found.setdefault(row.id, row)
        today = [
            r for r in found.values() if day in (day_of(r.created, zone), day_of(r.touched, zone))
        ]
        corrections = [r for r in today if r.supersedes and day_of(r.created, zone) == day]
        superseded = catalog.superseded(self.brain.partition, normal_only=self.brain.for_model)
        sessions = {
            (_session_of(r), day_of(r.created, zone))
            for r in superseded
            if _session_of(r) is not None
        }
        suspect = [
            r
            for r in today
            if r.status != Status.SUPERSEDED
            and (_session_of(r), day_of(r.created, zone)) in sessions
            and not r.supersedes
        ]
        threads = [
            r for r in today if r.node.startswith(THREADS) and day_of(r.touched, zone) == day
        ]
        return {
            "corrected_today": [_brief(r) for r in corrections],
            "suspect": [_brief(r) for r in suspect],
            "threads_touched": [_brief(r) for r in threads],
        }


def _brief(row: ObjectRow) -> dict[str, Any]:
    return {"id": row.id, "title": row.title, "touched": row.touched, "node": row.node}


def _session_of(row: ObjectRow) -> str | None:
    value = row.source.get("session") if isinstance(row.source, dict) else None
    return str(value) if value else None

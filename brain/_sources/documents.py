"""Connected files as document notes: connect, sync, disconnect. The connector's only writer.

A file `<folder>/<rel>` of connector NAME becomes one note at
`<partition>/Knowledge/Sources/<NAME>/<rel>.md` (a `.md` file keeps its name) holding the file's
text, its provenance in `source`, and its chunks as sections (see sections.py).
"""

from __future__ import annotations

import codecs
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brain._errors import BrokenNote, InvalidInput, NotConfirmed, NotFound
from brain._indexes.catalog import ObjectRow
from brain._ingest.chunking import chunk_markdown, chunk_text
from brain._ingest.sections import sections_meta, spans_of_chunks
from brain._model import Note, content_hash, iso, new_id
from brain._sources import connectors as conn
from brain._sources.consent import answers, ask_at_terminal, challenge
from brain._vault.archive import is_archived
from brain._vault.paths import check_segment

if TYPE_CHECKING:
    from brain._context import Context

SOURCES = "Knowledge/Sources"


@dataclass
class SyncReport:
    """What one sync of one connector did, file by file."""

    connector: str
    state: str = "connected"
    reason: str = ""
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)  # forgotten by the person since last sync

    def to_json(self) -> dict[str, Any]:
        return {
            "connector": self.connector,
            "state": self.state,
            "reason": self.reason,
            "added": self.added,
            "updated": self.updated,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "excluded": self.excluded,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
        }


def connect(brain: Context, path: Path, name: str | None = None) -> SyncReport:
    """Show what a folder holds, ask the person at the terminal, then declare, confirm, sync."""
    folder = path.expanduser().absolute()
    if not folder.exists():
        raise InvalidInput(f"{path}: no such folder")
    if not folder.is_dir():
        raise InvalidInput(f"{path}: not a folder")
    real = os.path.realpath(folder)
    vault = os.path.realpath(brain.root)
    if real == vault or real.startswith(vault + os.sep):
        raise InvalidInput(f"{path}: is inside the vault; connect folders outside it")
    declared = conn.declared(brain.root)
    same = next((d for d in declared.values() if os.path.realpath(d.folder) == real), None)
    conn.refuse_overlap(path, real, declared)
    if same is not None and name and name != same.name:
        # Read under two names, every file would be two documents, each recalled twice.
        raise InvalidInput(
            f"{path}: already connected as {same.name!r}",
            f"to confirm it again: brain connect {path}; for another name, "
            f"brain disconnect {same.name} first",
        )
    name = check_segment(name or (same.name if same else folder.name), "connector name")
    if name in declared and (same is None or same.name != name):
        raise InvalidInput(
            f"a connector named {name!r} already reads {declared[name].path}",
            "choose another with --name",
        )
    cap = same.max_file_bytes if same else conn.MAX_FILE_BYTES
    found = conn.scan(folder, cap, brain.root)
    if not found.files:
        raise InvalidInput(
            f"{path}: nothing to read (no Markdown or text files)",
            f"{len(found.skipped)} entries skipped" if found.skipped else "the folder is empty",
        )
    # A fresh random code, shown only on the terminal: a script answering blind (a guess such
    # as the folder's name, piped into a pseudo-terminal) cannot know it.
    code = challenge()
    answer = ask_at_terminal(
        conn.describe(name, found), f"Type the code {code} to let brain read it: "
    )
    if not answers(code, answer):
        # The code is not repeated: it was for the terminal only.
        raise NotConfirmed("not confirmed (what was typed is not the code shown); nothing was read")
    ident = conn.identity(folder)
    if ident is None:
        raise InvalidInput(f"{path}: the folder went away while you were asked")
    with brain.lock.hold():
        decl = conn.Declared(name, str(folder), cap, same.partition if same else brain.partition)
        confirm(brain, decl, ident)
        return sync_connector(brain, decl)


def confirm(brain: Context, decl: conn.Declared, ident: conn.Identity) -> None:
    """Declare the connector in brain.yaml and record this machine's confirmation. Lock held.

    Only `connect` calls this, after the person confirmed at the terminal.
    """
    declared = conn.declared(brain.root)
    if declared.get(decl.name) != decl:
        declared[decl.name] = decl
        conn.write_declared(brain.root, declared)
    state = conn.State.load(brain.root)
    state.confirm(decl.name, ident, iso(brain.clock.now()))
    state.save()


def statuses(brain: Context) -> list[conn.Status]:
    if not brain.capabilities.connectors:
        return []  # connectors read folders of the person's machine; a database has none
    brain.catch_up()
    state = conn.State.load(brain.root)
    out = []
    for decl in conn.declared(brain.root).values():
        status = conn.status_of(decl, state)
        count = len(documents_of(brain, decl.name))
        excluded = len(state.data["connectors"].get(decl.name, {}).get("excluded", []))
        out.append(
            conn.Status(status.name, status.path, status.state, status.reason, count, excluded)
        )
    return out


def sync(brain: Context, names: list[str] | None = None) -> list[SyncReport]:
    """Bring every confirmed connector (or the named ones) in step with its folder."""
    declared = conn.declared(brain.root)
    for name in names or []:
        if name not in declared:
            raise NotFound(f"no connector named {name!r}", _known(declared))
    with brain.lock.hold():
        brain.catch_up()
        return [sync_connector(brain, d) for n, d in declared.items() if not names or n in names]


def disconnect(brain: Context, name: str, *, forget: bool = False) -> int:
    """Stop syncing a connector; with forget, remove every document it brought in."""
    declared = conn.declared(brain.root)
    if name not in declared:
        raise NotFound(f"no connector named {name!r}", _known(declared))
    removed = 0
    with brain.lock.hold():
        brain.catch_up()
        if forget:
            for row in documents_of(brain, name).values():
                _delete(brain, row)
                removed += 1
        del declared[name]
        conn.write_declared(brain.root, declared)
        state = conn.State.load(brain.root)
        state.drop(name)
        state.save()
    return removed


def to_forget(brain: Context, name: str) -> list[ObjectRow]:
    """The documents `disconnect --forget` would remove (NotFound for an unknown connector)."""
    declared = conn.declared(brain.root)
    if name not in declared:
        raise NotFound(f"no connector named {name!r}", _known(declared))
    brain.catch_up()
    return list(documents_of(brain, name).values())


def documents_of(brain: Context, name: str) -> dict[str, ObjectRow]:
    """The connector's documents in the vault, by their path in the connected folder."""
    rows = brain.caches.catalog.documents_of(name)
    return {str(r.source.get("path")): r for r in rows if r.source.get("via") == "connector"}


def sync_connector(
    brain: Context, decl: conn.Declared, found: conn.Scan | None = None
) -> SyncReport:
    """One connector: read only changed files, forget deleted ones. Lock held."""
    report = SyncReport(decl.name)
    brain.catch_up()  # so notes the person deleted or forgot are known to be gone
    state = conn.State.load(brain.root)
    status = conn.status_of(decl, state)
    if status.state != "connected":
        report.state, report.reason = status.state, status.reason
        return report  # a pending folder is never read, not even listed
    if unplaced := _unplaced(brain, decl):
        report.state, report.reason = unplaced
        return report  # its other connectors are still synced
    entry = state.entry(decl.name)
    existing = documents_of(brain, decl.name)
    _exclude_forgotten(brain, state, decl.name, entry, report)
    found = found or conn.scan(decl.folder, decl.max_file_bytes, brain.root)
    report.skipped.extend(found.skipped)
    # Documents of files that exist but cannot be read now, or are empty, are kept.
    kept = {rel for rel, why in found.skipped if why.startswith("cannot") or why == conn.EMPTY}
    # A folder of documents is a bulk import: the lock taken once, vectors encoded while
    # the files are written (indexes/pipeline.py). The state is saved after the block,
    # when every rename in it is durable: a record never names a note a crash lost.
    with brain.bulk():
        present: set[str] = set()
        for item in found.files:
            row = existing.get(item.rel)
            _sync_file(brain, decl, state, entry, row, item, report, present, kept)
        for rel, row in existing.items():
            if rel not in present and rel not in kept and not _under_kept(rel, kept):
                _delete(brain, row)
                entry["files"].pop(rel, None)
                report.removed.append(rel)
    state.save()
    return report


def _unplaced(brain: Context, decl: conn.Declared) -> tuple[str, str] | None:
    """The state and reason of a connector whose documents have nowhere to go now."""
    partition = decl.partition or brain.partition
    if not brain.store.is_folder(partition):
        where = f"connectors.{decl.name}.partition in brain.yaml"
        return "missing", f"its partition {partition!r} is not in the vault ({where})"
    if is_archived(brain.store, partition):
        return "archived", f"its partition {partition!r} is archived (read-only)"
    return None


def _exclude_forgotten(
    brain: Context, state: conn.State, name: str, entry: dict[str, Any], report: SyncReport
) -> None:
    """A file whose document the person forgot is excluded until the file changes."""
    for rel, record in list(entry["files"].items()):
        if brain.caches.catalog.get(record["note"]) is None:  # the person forgot it
            state.exclude(name, rel, record["hash"])
            del entry["files"][rel]
            report.excluded.append(rel)


def _sync_file(
    brain: Context,
    decl: conn.Declared,
    state: conn.State,
    entry: dict[str, Any],
    row: ObjectRow | None,
    item: conn.FileEntry,
    report: SyncReport,
    present: set[str],
    kept: set[str],
) -> None:
    """One file of the folder: read only if it changed, its document written if its text did."""
    record = entry["files"].get(item.rel)
    if (
        record
        and row
        and row.source.get("hash") == record["hash"]
        and (record["mtime_ns"], record["size"]) == (item.mtime_ns, item.size)
    ):
        present.add(item.rel)
        report.unchanged += 1
        return
    data, problem = _read(decl, item)
    if problem == "vanished":
        report.skipped.append((item.rel, "vanished during sync"))
        return
    present.add(item.rel)
    if data is None:
        report.skipped.append((item.rel, problem))
        kept.add(item.rel)
        return
    digest = content_hash(data)
    if state.excluded(decl.name, item.rel, digest):
        why = "forgotten by you (edit the file to bring it back)"
        report.skipped.append((item.rel, why))
        return
    note_id = _written(brain, decl, item, data, digest, row, report, kept)
    if note_id is not None:
        entry["files"][item.rel] = {
            "note": note_id,
            "hash": digest,
            "mtime_ns": item.mtime_ns,
            "size": item.size,
        }


def _written(
    brain: Context,
    decl: conn.Declared,
    item: conn.FileEntry,
    data: bytes,
    digest: str,
    row: ObjectRow | None,
    report: SyncReport,
    kept: set[str],
) -> str | None:
    """The id of the file's document, saved if new or changed; None if its text is refused."""
    if row is not None and row.source.get("hash") == digest:
        report.unchanged += 1
        return row.id
    try:
        note = _document(brain, decl, item, data.decode(_encoding(data)), digest, row)
    except InvalidInput as exc:
        report.skipped.append((item.rel, exc.message))
        kept.add(item.rel)
        return None
    brain.save(note)
    (report.added if row is None else report.updated).append(item.rel)
    return note.id


def _read(decl: conn.Declared, item: conn.FileEntry) -> tuple[bytes | None, str]:
    """The file's bytes, or None and why: never through a link, never a partial read."""
    path = decl.folder / item.rel
    real_folder = os.path.realpath(decl.folder)
    if not os.path.realpath(path).startswith(real_folder + os.sep):
        return None, "leads outside the connected folder (a link); skipped"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None, "vanished"
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    try:
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(decl.max_file_bytes + 1)
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    if len(data) > decl.max_file_bytes:
        return None, f"larger than the {decl.max_file_bytes}-byte cap"
    encoding = _encoding(data)
    if encoding == "utf-8" and b"\x00" in data[:8192]:
        return None, "binary (holds NUL bytes)"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        return None, f"not {encoding.upper()} text (bad byte at offset {exc.start})"
    if "\x00" in text[:8192]:
        return None, "binary (holds NUL bytes)"
    if not text.removeprefix("\ufeff").strip():
        return None, conn.EMPTY
    return data, ""


def _encoding(data: bytes) -> str:
    """UTF-16 or UTF-32 for a file that opens with their byte-order mark (what Windows Notepad
    saved as "Unicode"), else UTF-8: a file's encoding is never guessed from its letters."""
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        return "utf-32"
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return "utf-8"


def _document(
    brain: Context,
    decl: conn.Declared,
    item: conn.FileEntry,
    text: str,
    digest: str,
    row: ObjectRow | None,
) -> Note:
    body = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    if body and not body.endswith("\n"):
        body += "\n"
    markdown = item.format == "markdown"
    chunks = chunk_markdown(body) if markdown else chunk_text(body)
    sections = spans_of_chunks(body, chunks)
    now = iso(brain.clock.now())
    real = Path(os.path.realpath(decl.folder / item.rel))
    source = {
        "via": "connector",
        "connector": decl.name,
        "uri": real.as_uri(),
        "path": item.rel,
        "hash": digest,
    }
    title = _title(body, item.rel, markdown)

    if row is not None:
        try:
            old = brain.store.read(row.path)
        except (BrokenNote, FileNotFoundError):
            old = None
        if old is not None:
            kept = {**old.meta, "title": title, "touched": now, "updated": now, "source": source}
            kept.update(sections_meta(body, sections))
            return Note(meta=kept, body=body, path=old.path)
    meta: dict[str, Any] = {
        "id": new_id(brain.clock.now()),
        "title": title,
        "kind": "document",
        "status": "active",
        "created": now,
        "touched": now,
        "source": source,
    }
    meta.update(sections_meta(body, sections))
    return Note(meta=meta, body=body, path=_vault_path(brain, decl, item.rel))


def _vault_path(brain: Context, decl: conn.Declared, rel: str) -> str:
    parts = rel.split("/")
    for part in parts:
        check_segment(part, f"{rel}: file or folder name")
    if not parts[-1].endswith(".md"):
        parts[-1] += ".md"
    base = f"{decl.partition or brain.partition}/{SOURCES}/{decl.name}/"
    path, n = base + "/".join(parts), 2
    while brain.store.exists(path):  # e.g. both `a.txt.md` and `a.txt` in the folder
        path = base + "/".join([*parts[:-1], f"{parts[-1][:-3]} {n}.md"])
        n += 1
    return path


def _title(body: str, rel: str, markdown: bool) -> str:
    """A Markdown file's first `# heading`, else the file name."""
    found = re.search(r"^ {0,3}# +(.+?)(?: +#+)? *$", body, re.MULTILINE) if markdown else None
    return found.group(1).strip() if found else rel.rsplit("/", 1)[-1]


def _delete(brain: Context, row: ObjectRow) -> None:
    try:
        note = brain.store.read(row.path)
    except (BrokenNote, FileNotFoundError):
        brain.caches.drop_note(row.note_id, row.path)
        brain.store.delete(row.path)
        return
    brain.delete(note)


def _under_kept(rel: str, kept: set[str]) -> bool:
    return any(rel.startswith(k.rstrip("/") + "/") for k in kept)


def _known(declared: dict[str, conn.Declared]) -> str:
    """The hint after "no connector named …": the names there are, or how to make one."""
    if not declared:
        return "no folder is connected; `brain connect FOLDER` connects one"
    return f"connectors: {', '.join(declared)}; `brain connectors` shows their state"

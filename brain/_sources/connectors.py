"""Folder connectors: declared in brain.yaml, confirmed on this machine, scanned without links.

The declaration (name → folder) is versioned with the vault. The confirmation is machine-local,
under `.brain/`, and bound to the folder's real path and identity (device and inode), so a
connector that arrives by `git pull`, or whose folder was moved or replaced by a link, is
`pending` and is never read until the person confirms it here.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from brain._errors import BrokenNote, InvalidInput
from brain._safeyaml import load_yaml
from brain._settings import SETTINGS_FILE, yaml_problem
from brain._sources import consent
from brain._vault.files import atomic_write
from brain._vault.paths import CACHE_DIR, check_segment

STATE_FILE = "connectors.json"
IGNORE_FILE = ".brainignore"
MAX_FILE_BYTES = 2 * 1024 * 1024
# What a connector reads, by file name ending; everything else is listed as skipped.
READABLE = {".md": "markdown", ".markdown": "markdown", ".txt": "text", ".text": "text"}


@dataclass(frozen=True)
class Declared:
    """One `connectors:` entry of brain.yaml."""

    name: str
    path: str
    max_file_bytes: int = MAX_FILE_BYTES
    partition: str | None = None  # where its documents go (else the default partition)

    @property
    def folder(self) -> Path:
        return Path(self.path).expanduser()

    def to_yaml(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path}
        if self.partition:
            data["partition"] = self.partition
        if self.max_file_bytes != MAX_FILE_BYTES:
            data["max_file_bytes"] = self.max_file_bytes
        return data


@dataclass(frozen=True)
class Identity:
    """What a confirmation is bound to: the real path, the device and inode, and link-ness."""

    real: str
    device: int
    inode: int
    link: bool

    def to_json(self) -> dict[str, Any]:
        return {"real": self.real, "device": self.device, "inode": self.inode, "link": self.link}


def identity(folder: Path) -> Identity | None:
    """The folder's identity now, or None when it is not there (or not a folder)."""
    try:
        st = folder.stat()
        link = folder.is_symlink()
        real = os.path.realpath(folder)
    except OSError:
        return None
    if not folder.is_dir():
        return None
    return Identity(real, st.st_dev, st.st_ino, link)


def refuse_overlap(path: Path, real: str, declared: Mapping[str, Declared]) -> None:
    """Refuse a folder inside, or holding, a connected one: their shared files would be read
    twice, each a document of its own, and recalled twice. The same folder is not refused here."""
    here = Path(real)
    for decl in declared.values():
        there = Path(os.path.realpath(decl.folder))
        if there != here and (here.is_relative_to(there) or there.is_relative_to(here)):
            where = "lies inside" if here.is_relative_to(there) else "holds"
            raise InvalidInput(
                f"{path}: {where} {decl.path}, already connected as {decl.name!r}",
                f"to read this one instead: brain disconnect {decl.name} first",
            )


# brain.yaml ------------------------------------------------------------------------------------
def declared(root: Path) -> dict[str, Declared]:
    """The connectors declared in brain.yaml (read afresh: it may have changed by hand)."""
    path = root / SETTINGS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: cannot be read: {exc}") from None
    return declared_in(text, path)


def declared_in(text: str, path: Path) -> dict[str, Declared]:
    """The connectors declared in the text of brain.yaml (`path` names it in messages)."""
    try:
        data = load_yaml(text, str(path), SETTINGS_FILE) or {}
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{path}{yaml_problem(exc)}") from None
    except BrokenNote as exc:
        raise InvalidInput(f"{path}: cannot be read: {exc}") from None
    section = data.get("connectors") if isinstance(data, dict) else None
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise InvalidInput(f"{path}: field 'connectors' must be a mapping of name → folder")
    out = {}
    for name, entry in section.items():
        where = f"{path}: connectors.{name}"
        check_segment(str(name), f"connector name in {path}")
        if isinstance(entry, str):
            entry = {"path": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            raise InvalidInput(f"{where}: field 'path' (the folder) is missing")
        cap = entry.get("max_file_bytes", MAX_FILE_BYTES)
        if isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0:
            raise InvalidInput(f"{where}.max_file_bytes must be a positive whole number")
        partition = entry.get("partition")
        if partition is not None:
            check_segment(str(partition), f"{where}.partition")
        out[str(name)] = Declared(str(name), entry["path"], cap, partition and str(partition))
    return out


def write_declared(root: Path, connectors: Mapping[str, Declared]) -> None:
    """Rewrite only the `connectors:` block of brain.yaml; every other line stays as written."""
    path = root / SETTINGS_FILE
    text = path.read_text(encoding="utf-8")
    updated = render_connectors(text, connectors)
    check = yaml.safe_load(updated) or {}
    wanted = {n: d.to_yaml() for n, d in connectors.items()}
    if (check.get("connectors") or {}) != wanted:  # never write a file that says otherwise
        raise InvalidInput(f"{path}: could not update the 'connectors' section safely; edit it")
    atomic_write(path, updated)


_TOP_KEY = re.compile(r"^[^\s#]")


def render_connectors(text: str, connectors: Mapping[str, Declared]) -> str:
    """brain.yaml text with its `connectors:` block replaced (or added at the end)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.startswith("connectors:")), None)
    comment, column = "", 0
    if start is None:
        start = end = len(lines)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
    else:
        found = re.search(r"\s(#.*)$", lines[start].rstrip("\n"))
        comment, column = (found.group(1), found.start(1)) if found else ("", 0)
        end = start + 1
        while end < len(lines) and not _TOP_KEY.match(lines[end]):
            end += 1
        # Trailing blank or comment lines belong to what follows, not to the block.
        while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip()[0] == "#"):
            end -= 1
    header = "connectors:" if connectors else "connectors: {}"
    if comment:  # the comment stays in its column
        header += " " * max(2, column - len(header)) + comment
    block = header + "\n"
    if connectors:
        body = {n: d.to_yaml() for n, d in connectors.items()}
        dumped = yaml.safe_dump(body, sort_keys=False, allow_unicode=True, default_flow_style=False)
        block += "".join(f"  {line}\n" for line in dumped.splitlines())
    return "".join(lines[:start]) + block + "".join(lines[end:])


# machine-local state ---------------------------------------------------------------------------
@dataclass
class State:
    """`.brain/connectors.json`: confirmations, what each connector brought in, exclusions."""

    path: Path
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, root: Path) -> State:
        path = root / CACHE_DIR / STATE_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            data = {}  # no state, or a damaged one: every connector asks again
        if not isinstance(data, dict) or not isinstance(data.get("connectors"), dict):
            data = {"version": 1, "connectors": {}}
        return cls(path, data)

    def save(self) -> None:
        atomic_write(self.path, json.dumps(self.data, indent=1, sort_keys=True) + "\n")

    def entry(self, name: str) -> dict[str, Any]:
        entry: dict[str, Any] = self.data["connectors"].setdefault(name, {})
        entry.setdefault("files", {})
        entry.setdefault("excluded", [])
        return entry

    def drop(self, name: str) -> None:
        self.data["connectors"].pop(name, None)

    def confirmation(self, name: str) -> dict[str, Any] | None:
        found = self.data["connectors"].get(name, {}).get("confirmed")
        return found if isinstance(found, dict) else None

    def confirm(self, name: str, ident: Identity, at: str) -> None:
        """Record the person's confirmation, sealed with this machine's key (consent.py)."""
        record = {**ident.to_json(), "at": at}
        mac = consent.seal(self.path.parent, {"connector": name, **record})
        self.entry(name)["confirmed"] = {**record, "mac": mac}

    def confirmed_here(self, name: str, found: dict[str, Any]) -> bool:
        """Whether a stored confirmation was made by `brain connect` on this machine."""
        record = {k: v for k, v in found.items() if k != "mac"}
        return consent.sealed(self.path.parent, {"connector": name, **record}, found.get("mac"))

    def excluded(self, name: str, rel: str, digest: str) -> bool:
        return {"path": rel, "hash": digest} in self.entry(name)["excluded"]

    def exclude(self, name: str, rel: str, digest: str) -> None:
        if not self.excluded(name, rel, digest):
            self.entry(name)["excluded"].append({"path": rel, "hash": digest})


@dataclass(frozen=True)
class Status:
    """Where a connector stands: `connected`, `pending` (with why) or `missing`."""

    name: str
    path: str
    state: str
    reason: str = ""
    documents: int = 0
    excluded: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "state": self.state,
            "reason": self.reason,
            "documents": self.documents,
            "excluded": self.excluded,
        }


def connected(root: Path) -> list[Declared]:
    """The connectors confirmed here and readable now: the folders a watcher follows."""
    state = State.load(root)
    return [d for d in declared(root).values() if status_of(d, state).state == "connected"]


def status_of(decl: Declared, state: State) -> Status:
    """Whether this connector may be read now; anything but an exact identity match is pending."""
    confirmed = state.confirmation(decl.name)
    now = identity(decl.folder)
    if now is None:
        return Status(decl.name, decl.path, "missing", "the folder is not there")
    if confirmed is None:
        return Status(decl.name, decl.path, "pending", "not confirmed on this machine")
    if not state.confirmed_here(decl.name, confirmed):
        why = "its confirmation was not made by `brain connect` on this machine"
        return Status(decl.name, decl.path, "pending", why)
    if confirmed != {**now.to_json(), "at": confirmed.get("at"), "mac": confirmed.get("mac")}:
        why = "the folder was moved, replaced or linked since it was confirmed"
        return Status(decl.name, decl.path, "pending", why)
    return Status(decl.name, decl.path, "connected")


# scanning ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FileEntry:
    rel: str  # POSIX path inside the connected folder
    size: int
    mtime_ns: int
    format: str  # markdown | text


@dataclass(frozen=True)
class Scan:
    """What a folder holds for a connector, read from directory entries only (no contents)."""

    folder: Path
    files: tuple[FileEntry, ...]
    skipped: tuple[tuple[str, str], ...]  # (relative path, reason)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def by_type(self) -> dict[str, int]:
        return dict(sorted(Counter(_ext(f.rel) for f in self.files).items()))

    def skipped_by_reason(self) -> dict[str, int]:
        return dict(sorted(Counter(reason for _, reason in self.skipped).items()))


def ignore_patterns(folder: Path) -> list[str]:
    try:
        text = (folder / IGNORE_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip() and line[0] != "#"]


def ignored(rel: str, is_dir: bool, patterns: list[str]) -> bool:
    """gitignore-like: `*.log` matches a name, `a/b` the path, `dir/` a folder, `!` unignores."""
    verdict = False
    name = rel.rsplit("/", 1)[-1]
    for raw in patterns:
        negate = raw.startswith("!")
        pattern = raw[1:] if negate else raw
        if pattern.endswith("/"):
            if not is_dir:
                continue
            pattern = pattern.rstrip("/")
        anchored = "/" in pattern
        target = rel if anchored else name
        if fnmatch.fnmatchcase(target, pattern.lstrip("/")):
            verdict = not negate
    return verdict


# An empty file is nothing to remember yet; a document it had is kept, for an editor that
# saves in place truncates the file before it writes the text again.
EMPTY = "empty (read once it holds text)"


def scan(folder: Path, max_bytes: int, vault: Path) -> Scan:
    """Every file a connector would read, and every one it would skip with the reason."""
    files: list[FileEntry] = []
    skipped: list[tuple[str, str]] = []
    patterns = ignore_patterns(folder)
    vault_real = os.path.realpath(vault)

    def visit(rel: str) -> None:
        for child, entry in _entries(folder, rel, skipped):
            is_dir = entry.is_dir(follow_symlinks=False)
            if ignored(child, is_dir, patterns):
                skipped.append((child, "ignored by .brainignore"))
            elif is_dir and os.path.realpath(entry.path) == vault_real:
                skipped.append((child, "the vault itself"))
            elif is_dir:
                visit(child)
            else:
                found = _file(child, entry, max_bytes, skipped)
                if found is not None:
                    files.append(found)

    visit("")
    return Scan(folder, tuple(sorted(files, key=lambda f: f.rel)), tuple(sorted(skipped)))


def _entries(
    folder: Path, rel: str, skipped: list[tuple[str, str]]
) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Entries of one folder level; links and hidden names are listed as skipped, never followed."""
    try:
        entries = sorted(os.scandir(folder / rel if rel else folder), key=lambda e: e.name)
    except OSError as exc:
        skipped.append((rel or ".", f"cannot be listed ({exc.strerror or exc})"))
        return
    for entry in entries:
        child = f"{rel}/{entry.name}" if rel else entry.name
        if entry.name.startswith("."):
            if entry.name != IGNORE_FILE:
                skipped.append((child, "hidden"))
            continue
        if entry.is_symlink():
            skipped.append((child, "a link (never followed)"))
            continue
        yield child, entry


def _file(
    rel: str, entry: os.DirEntry[str], cap: int, skipped: list[tuple[str, str]]
) -> FileEntry | None:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError as exc:
        skipped.append((rel, f"cannot be read ({exc.strerror or exc})"))
        return None
    if not entry.is_file(follow_symlinks=False):
        skipped.append((rel, "not a regular file"))
        return None
    fmt = READABLE.get(_ext(rel))
    if fmt is None:
        skipped.append((rel, "not a supported type"))
        return None
    if st.st_size > cap:
        skipped.append((rel, f"larger than the {cap}-byte cap"))
        return None
    if st.st_size == 0 or (st.st_size <= BLANK_BYTES and _blank(entry.path)):
        skipped.append((rel, EMPTY))
        return None
    return FileEntry(rel, st.st_size, st.st_mtime_ns, fmt)


BLANK_BYTES = 256  # only a file this small is read to see whether it holds any text


def _blank(path: str) -> bool:
    """True when the file holds only white space (and perhaps a byte-order mark)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(BLANK_BYTES + 1)
    except OSError:  # read later, where the reason is told
        return False
    return not data.removeprefix(b"\xef\xbb\xbf").strip()


def _ext(rel: str) -> str:
    name = rel.rsplit("/", 1)[-1].lower()
    return "." + name.rsplit(".", 1)[1] if "." in name else "(none)"


def describe(name: str, found: Scan) -> str:
    """The summary a person reads before confirming."""
    lines = [f"brain connect: {name}", f"  folder  {found.folder}"]
    kinds = ", ".join(f"{count} {ext}" for ext, count in found.by_type().items())
    lines.append(f"  reads   {len(found.files)} files ({kinds}), {_size(found.total_bytes)}")
    for reason, count in found.skipped_by_reason().items():
        lines.append(f"  skips   {count} × {reason}")
    lines.append("  Nothing is sent anywhere; the text is kept in this vault as document notes.")
    return "\n".join(lines)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    value = n / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"

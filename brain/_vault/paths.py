"""Turning names from input into paths that can never leave the vault."""

from __future__ import annotations

import functools
import os
import re
import stat
import unicodedata
from pathlib import Path

from brain._errors import InvalidInput

_RESERVED = {"con", "prn", "aux", "nul", "conin$", "conout$"} | {
    f"{p}{n}" for p in ("com", "lpt") for n in [*range(1, 10), "¹", "²", "³"]
}  # Windows takes COM¹ to COM³ for devices too
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_UNSAFE_IN_FILENAME = re.compile(r'[/\\:*?"<>|]')
MAX_SEGMENT = 100
# A file name's bytes in UTF-8: ext4 and APFS allow 255 (Windows 255 UTF-16 units, never more
# than the bytes); the rest is for " 12", ".md" and a write's temp name ".<name>.<8>.tmp".
MAX_STEM_BYTES = 200
CACHE_DIR = ".brain"
COLD_DIR = "cold"


def check_segment(name: str, what: str) -> str:
    """One folder or partition name: refused if it could mean anything but itself."""
    if not name or not name.strip():
        raise InvalidInput(f"{what} is empty")
    if _CONTROL.search(name):
        raise InvalidInput(f"{what} {name!r} contains a control character (NUL, newline, …)")
    if "/" in name or "\\" in name:
        raise InvalidInput(f"{what} {name!r} may not contain '/' or '\\'")
    if name in (".", "..") or name.startswith("."):
        raise InvalidInput(f"{what} {name!r} may not start with '.'")
    if name.split(".")[0].strip().casefold() in _RESERVED:
        raise InvalidInput(f"{what} {name!r} is a reserved file name")
    if len(name) > MAX_SEGMENT:
        raise InvalidInput(f"{what} is longer than {MAX_SEGMENT} characters")
    if name != name.strip():
        raise InvalidInput(f"{what} {name!r} may not start or end with a space")
    return name


def check_portable(name: str, what: str) -> str:
    """A folder name brain is to make, in NFC: one a clone on Windows or macOS can hold too
    (git stops a Windows checkout of the whole vault at one name it cannot make)."""
    name = unicodedata.normalize("NFC", name)
    unsafe = "".join(sorted(set(_UNSAFE_IN_FILENAME.findall(name))))
    if unsafe:
        raise InvalidInput(f"{what} {name!r} may not contain {unsafe!r} (Windows refuses them)")
    if name.endswith("."):
        raise InvalidInput(f"{what} {name!r} may not end with '.' (Windows drops it)")
    if len(name.encode()) > MAX_STEM_BYTES:
        raise InvalidInput(f"{what} is longer than {MAX_STEM_BYTES} bytes in UTF-8")
    return name


def unportable(name: str) -> str | None:
    """Why macOS or Windows cannot hold a file or folder of this name (None: both can)."""
    if unsafe := "".join(sorted(set(_UNSAFE_IN_FILENAME.findall(name)))):
        return f"{unsafe!r} cannot be in a Windows file name"
    if _CONTROL.search(name):
        return "a control character cannot be in a Windows file name"
    if name.endswith((".", " ")):
        return "Windows drops a name's last dot or space"
    if name.split(".")[0].strip().casefold() in _RESERVED:
        return "Windows keeps this name for a device"
    return None


def check_node(node: str) -> str:
    """A node path inside a partition, like `Knowledge/Domains/Cooking`."""
    if "\\" in node:
        raise InvalidInput(f"node {node!r} may not contain '\\'; separate folders with '/'")
    if node.startswith("/"):
        raise InvalidInput(f"node {node!r} must be relative to the partition, not absolute")
    parts = node.strip().strip("/").split("/")
    if not parts or parts == [""]:
        raise InvalidInput("node is empty")
    for part in parts:
        check_segment(part, f"node {node!r}: its part")
    if parts[0] == "~":  # a shell reads `brain list --node ~` as the home folder
        raise InvalidInput(f"node {node!r} may not start with a '~' folder")
    if parts[0] == COLD_DIR:
        raise InvalidInput(f"node {node!r} is reserved for the cold tier")
    return "/".join(parts)


def node_hint(partition: str, node: str) -> str:
    """What a node is, for a node that matched nothing: one copied from a note's path starting
    with its partition ("main/Knowledge/Sources") is told the node without it."""
    inside = node.removeprefix(f"{partition}/")
    if inside != node:
        return f"(a node is a folder of the partition, without {partition + '/'!r}: {inside!r})"
    return "(a node is a folder of the partition, such as Knowledge/Inbox)"


def spelled_as(folders: list[str], name: str) -> str | None:
    """`name` if it is one of `folders`, else the one folder that differs from it only in case
    (two would be ambiguous: none), else None."""
    if name in folders:
        return name
    key = name_key(name)
    same = [f for f in folders if name_key(f) == key]
    return same[0] if len(same) == 1 else None


def name_key(name: str) -> str:
    """What two names share when macOS or Windows take them for one file: the same letters in
    another case, or in another Unicode normal form (macOS wrote "é" as "e" + U+0301)."""
    return unicodedata.normalize("NFC", name).casefold()


def spellings(name: str) -> list[str]:
    """A file name and the spellings of it that macOS and Windows take for the same file, that
    people and Macs make most: all in lower case, its first letter's case swapped, macOS's NFD
    (not when longer than a name can be: Hangul's NFD is three times its bytes)."""
    variants = (name.lower(), name[:1].swapcase() + name[1:], unicodedata.normalize("NFD", name))
    return [v for v in dict.fromkeys((name, *variants)) if len(v.encode()) <= NAME_BYTES]


NAME_BYTES = 255  # the longest file name Linux's, macOS's and Windows's file systems hold


def file_stem(title: str) -> str:
    """A file name from a title that every system can hold: separators and the characters
    Windows refuses become spaces, in Unicode's composed form (NFC, as Linux and Windows
    spell a typed "é"), cut to 80 characters and to MAX_STEM_BYTES."""
    if _CONTROL.search(title):
        raise InvalidInput(f"title {title!r} contains a control character (NUL, newline, …)")
    stem = _UNSAFE_IN_FILENAME.sub(" ", unicodedata.normalize("NFC", title))
    stem = re.sub(r"\s+", " ", stem).strip(" .")[:80]
    while len(stem.encode()) > MAX_STEM_BYTES:  # 80 CJK characters or emoji are 240 or 320
        stem = stem[:-1]
    stem = stem.strip(" .")
    if not stem:
        raise InvalidInput(f"title {title!r} has no characters usable in a file name")
    base, dot, rest = stem.partition(".")
    if base.strip().casefold() in _RESERVED:  # a device on Windows ("Con", "aux.txt"): the
        stem = f"{base.rstrip()} (note){dot}{rest}"  # title stays, its file is "Con (note).md"
    return stem


@functools.lru_cache(maxsize=64)
def _real_root(root: Path) -> Path:
    # Resolved once per vault: `inside` runs several times per write, and each resolve is a
    # syscall per path component (about a tenth of a remember at scale, measured).
    return root.resolve()


def inside(root: Path, relative: str) -> Path:
    """The absolute path of a vault-relative path, refused if it resolves outside the vault."""
    real_root = str(_real_root(root) if root.is_absolute() else root.resolve())
    # As Path.resolve(), with the prefix compared as text: a write resolves ~10 paths, and
    # pathlib's objects and `parents` were half the cost of each (docs/lab/ingest.md).
    target = _resolved_below(real_root, relative)
    if target != real_root and not target.startswith(real_root.rstrip(os.sep) + os.sep):
        raise InvalidInput(f"path {relative!r} leads outside the vault")
    return Path(target)


def _resolved_below(real_root: str, relative: str) -> str:
    """os.path.realpath(real_root / relative) for a root with no link in it: only the
    relative part's components are looked at (one lstat each, where realpath also looks at
    every component of the root again). A link, or a `..` above the root, takes realpath."""
    if relative.startswith("/"):
        return _realpath(real_root, relative)
    base = path = real_root.rstrip(os.sep)  # "" for the root of the file system
    for part in relative.split("/"):  # vault-relative paths are written with "/"
        if part in ("", "."):
            continue
        if part == "..":
            if path == base:  # above the root: realpath says where that leads
                return _realpath(real_root, relative)
            path = path.rpartition(os.sep)[0]  # lexical, as realpath's
            continue
        path = path + os.sep + part
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return _realpath(real_root, relative)
        except OSError:  # not there (yet): taken as it is written, as realpath does
            pass
    return path or os.sep


def _realpath(real_root: str, relative: str) -> str:
    return os.path.realpath(os.path.join(real_root, relative))  # noqa: PTH118 (text: faster)

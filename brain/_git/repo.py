"""The vault's git repository: running git, enabling it, what is never committed, raw commits.

Every git call runs the real `git` binary with an argument list (never a shell).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from brain._errors import BrainError
from brain._model import LOCAL_ONLY
from brain._settings import SETTINGS_FILE
from brain._vault.files import atomic_write, owner_only
from brain._vault.paths import CACHE_DIR

if TYPE_CHECKING:
    from brain._settings import Settings

MESSAGE_FILE = f"{CACHE_DIR}/git-message"
REGENERATE_FLAG = f"{CACHE_DIR}/git-regenerate"
TRAILER = "Brain-Op"
UNDOES = "Brain-Undoes"
FORGETS = "Brain-Forgets"  # a forgotten note's id (its commit's subject names it already)
# Never committed, whatever a pathspec says: caches and machine-local state, local-only notes.
NEVER = (f"{CACHE_DIR}/", f"{LOCAL_ONLY}/", f"cold/{LOCAL_ONLY}/")
# Obsidian's window layout changes on every click and its trash holds notes the person
# deleted: neither is a note's history. Its other settings are left for the person to version.
IGNORED = (
    "/.brain/",
    "/local-only/",
    "/cold/local-only/",
    "/.obsidian/workspace*.json",
    "/.trash/",
)
ATTRIBUTES_BEGIN = "# brain: merge drivers (managed by `brain git enable`)"
ATTRIBUTES_END = "# brain: end"
ATTRIBUTES = (
    # What the block was written with, .gitignore's lines too: a block of another brain's
    # (an older one) is brought up to today's once, by the first command (`stale_layout`).
    "# and in .gitignore: " + " ".join(IGNORED),
    "*.md merge=brain-note",  # first: the lines below override it for their files
    "**/index.json merge=brain-regenerate",
    "**/Insights/Graph.md merge=brain-regenerate",
    "**/Memory/Sessions/*.md merge=brain-dated",
    "**/LLM/Diary/*.md merge=brain-dated",
    "**/Insights/Logs/*.md merge=brain-dated",
)
UNMERGED = {"DD", "AU", "UD", "UA", "DU", "AA", "UU"}
_GIT_SECTION = re.compile(r"^git:[^\n]*\n(?:[ \t]+[^\n]*\n?|[ \t]*\n)*", re.MULTILINE)


class GitError(BrainError):
    """git is missing, the vault is not a repository, or a git command failed."""


def autocommit_on(settings: Settings) -> bool:
    """`git.autocommit` in brain.yaml (off unless `brain git enable` turned it on)."""
    section = settings.raw.get("git") or {}
    if not isinstance(section, dict):
        raise settings.bad_field("git", "must be a mapping")
    return bool(section.get("autocommit", False))


def git_binary() -> str:
    found = shutil.which("git")
    if found is None:
        raise GitError(
            "git is not installed (no `git` on PATH)",
            "install git, or set `git: {autocommit: false}` in brain.yaml",
        )
    return found


def run(root: Path, *args: str, stdin: str | None = None, check: bool = True) -> str:
    """Run git in the vault; a failure becomes a GitError carrying git's own words."""
    try:
        done = subprocess.run(
            [git_binary(), "-C", str(root), "--literal-pathspecs", *args],
            input=stdin.encode("utf-8") if stdin is not None else None,
            capture_output=True,
            check=False,
        )
    except OSError as exc:
        raise GitError(f"could not run git: {exc}") from None
    if check and done.returncode != 0:
        said = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
        raise GitError(f"git {args[0]} failed: {said.splitlines()[0] if said else done.returncode}")
    return done.stdout.decode("utf-8", "surrogateescape")


def is_repo(root: Path) -> bool:
    return (root / ".git").exists()


def has_head(root: Path) -> bool:
    return bool(run(root, "rev-parse", "-q", "--verify", "HEAD^{commit}", check=False).strip())


def merging(root: Path) -> str | None:
    """What git is in the middle of (a merge, rebase, revert …), or None."""
    git_dir = root / ".git"
    for name, what in (
        ("MERGE_HEAD", "a merge"),
        ("rebase-merge", "a rebase"),
        ("rebase-apply", "a rebase"),
        ("CHERRY_PICK_HEAD", "a cherry-pick"),
        ("REVERT_HEAD", "a revert"),
    ):
        if (git_dir / name).exists():
            return what
    return None


def never_committed(rel: str) -> bool:
    return rel.startswith(NEVER) or rel == CACHE_DIR


# enabling ---------------------------------------------------------------------------
def enable(root: Path) -> str:
    """Make the vault a repository with ignores, merge drivers and autocommit; first commit.

    Returns the commit made (or the current HEAD when there was nothing to commit).
    """
    git_binary()  # before anything changes: no git, nothing half-done
    if not (root / "brain.yaml").is_file():
        raise GitError(f"no vault at {root}", "run `brain init --git` to create one")
    fresh = not is_repo(root)
    if fresh:
        run(root, "init", "-q")
    written = [_write_ignores(root), _write_attributes(root), _write_settings(root)]
    configure_drivers(root)
    if not has_head(root):
        run(root, "add", "-A")
        if nested := _other_vaults_staged(root):  # their caches and notes are not this vault's
            run(root, "rm", "-r", "--cached", "-q", "--", *nested)
        commit_paths(root, "brain: start the vault's history", "enable", None)
    else:
        commit_paths(root, "brain: keep the vault under git", "enable", [w for w in written if w])
    return run(root, "rev-parse", "HEAD").strip()


def _other_vaults_staged(root: Path) -> list[str]:
    """The folders of other vaults inside this one (each holds its own brain.yaml, doctor's
    `nested`) among what `git add -A` staged: their `.brain/` caches, forget records and notes
    would otherwise enter this vault's history (an embedded repository's link too)."""
    found = []
    for entry in run(root, "ls-files", "-s", "-z").split("\0"):
        meta, _, path = entry.partition("\t")
        if path.endswith(f"/{SETTINGS_FILE}"):
            found.append(path.rsplit("/", 1)[0])
        elif meta.startswith("160000") and (root / path / SETTINGS_FILE).is_file():
            found.append(path)
    return found


_DRIVERS = (
    ("brain-regenerate", "regenerate", "brain: regenerated files"),
    ("brain-dated", "dated", "brain: dated notes (union of blocks)"),
    ("brain-note", "note", "brain: notes (corrections made on both sides)"),
)


# `-P`: git runs a driver at the top of the work tree, and a `brain/` package committed there
# (by anyone who can push to a remote) would otherwise be imported instead of brain.
DRIVER_COMMAND = "-P -m brain git merge-driver"


def configure_drivers(root: Path) -> None:
    """Merge drivers live in this clone's .git/config (they name this machine's Python)."""
    command = f"{_quote(sys.executable)} {DRIVER_COMMAND}"
    for name, kind, label in _DRIVERS:
        run(root, "config", f"merge.{name}.name", label)
        run(root, "config", f"merge.{name}.driver", f"{command} {kind} %O %A %B %P")


def ensure_drivers(root: Path) -> bool:
    """A clone whose .gitattributes names brain's merge drivers but whose .git/config (which
    does not travel) lacks them, or names them as an older brain did (without `-P`), gets
    them as `brain git enable` gives them: without, git line-merges daily logs and index.json
    into conflicts. True if it configured them."""
    try:
        attributes = (root / ".gitattributes").read_text(encoding="utf-8")
        config = (root / ".git" / "config").read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        return False
    wanted = ATTRIBUTES_BEGIN in attributes and shutil.which("git") is not None
    current = all(f'[merge "{name}"]' in config for name, _, _ in _DRIVERS)
    if not wanted or (current and config.count(DRIVER_COMMAND) >= len(_DRIVERS)):
        return False
    configure_drivers(root)
    return True


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'" if re.search(r"[^\w@%+=:,./-]", arg) else arg


def stale_layout(root: Path) -> bool:
    """Git enabled by an older brain: `.gitattributes` holds a managed block other than the
    one this brain writes (a driver line missing, other ignores). A person's edit outside the
    block, or to `.gitignore` after it was written, never makes it stale."""
    try:
        text = (root / ".gitattributes").read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        return False
    found = _BLOCK.search(text)
    return found is not None and found.group(0).rstrip("\n") != "\n".join(_block_lines())


def refresh_layout(root: Path) -> list[str]:
    """Today's managed block in `.gitattributes` and the ignores `.gitignore` lacks; the
    files rewritten."""
    return [w for w in (_write_attributes(root), _write_ignores(root)) if w]


def _block_lines() -> tuple[str, ...]:
    return (ATTRIBUTES_BEGIN, *ATTRIBUTES, ATTRIBUTES_END)


_BLOCK = re.compile(re.escape(ATTRIBUTES_BEGIN) + r".*?" + re.escape(ATTRIBUTES_END) + r"\n?", re.S)


def _write_ignores(root: Path) -> str | None:
    path = root / ".gitignore"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    have = {line.strip().strip("/") for line in text.splitlines()}
    missing = [p for p in IGNORED if p.strip("/") not in have]
    if not missing:
        return None
    atomic_write(
        path, (text.rstrip("\n") + "\n" if text.strip() else "") + "\n".join(missing) + "\n"
    )
    return ".gitignore"


def _write_attributes(root: Path) -> str | None:
    path = root / ".gitattributes"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    block = "\n".join(_block_lines()) + "\n"
    updated = (
        _BLOCK.sub(lambda _: block, text)
        if _BLOCK.search(text)
        else (text.rstrip("\n") + "\n" if text.strip() else "") + block
    )
    if updated == text:
        return None
    atomic_write(path, updated)
    return ".gitattributes"


def _write_settings(root: Path) -> str | None:
    """`git: {autocommit: true}` in brain.yaml, editing only that section."""
    path = root / "brain.yaml"
    text = path.read_text(encoding="utf-8")
    section = "git:\n  autocommit: true        # one commit per brain operation (docs/git.md)\n"
    match = _GIT_SECTION.search(text)
    if match and "autocommit: true" in match.group(0):
        return None
    if match:
        updated = text[: match.start()] + section + text[match.end() :]
    else:
        updated = text.rstrip("\n") + "\n" + section
    atomic_write(path, updated)
    return "brain.yaml"


# what an operation changed ------------------------------------------------------------
def dirty(root: Path, paths: Sequence[str] = ()) -> dict[str, str]:
    """Files that differ from HEAD or are untracked (not ignored) → their status code."""
    args = ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"]
    out = run(root, *args, *(["--", *paths] if paths else []))
    found = {}
    for entry in out.split("\0"):
        if len(entry) > 3:
            found[entry[3:]] = entry[:2]
    return found


def snapshot(root: Path) -> dict[str, str]:
    """Each dirty file → its status code and a digest of its bytes, to tell who changed what."""
    return {rel: code + content(root, rel) for rel, code in dirty(root).items()}


def content(root: Path, rel: str) -> str:
    """A file's bytes as git names them (its blob id, as `git hash-object` says); "-" when it
    is not there."""
    try:
        data = (root / rel).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return "-"
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def committed(root: Path, paths: Sequence[str]) -> dict[str, str]:
    """Each path's blob id at HEAD ("-" when HEAD has none), read in one `git cat-file`."""
    asked = [p for p in paths if "\n" not in p]  # cat-file reads lines: such a name is new
    if not asked or not has_head(root):
        return dict.fromkeys(paths, "-")
    lines = "".join(f"HEAD:{p}\n" for p in asked)
    said = run(root, "cat-file", "--batch-check=%(objectname)", stdin=lines).split("\n")[:-1]
    found = {
        p: "-" if line.endswith(" missing") else line for p, line in zip(asked, said, strict=True)
    }
    return {p: found.get(p, "-") for p in paths}


def git_identity(root: Path) -> list[str]:
    """A stand-in author when this machine has none configured, so commits never fail on it."""
    if run(root, "config", "user.email", check=False).strip():
        return []
    return ["-c", "user.name=brain", "-c", "user.email=brain@localhost"]


def commit_paths(
    root: Path,
    message: str,
    verb: str,
    paths: Sequence[str] | None,
    trailers: Sequence[tuple[str, str]] = (),
) -> None:
    """Commit `paths` only (None: what is staged); the person's other changes stay as they are."""
    text = f"{message}\n\n{TRAILER}: {verb}\n" + "".join(f"{k}: {v}\n" for k, v in trailers)
    identity = git_identity(root)
    (root / CACHE_DIR).mkdir(exist_ok=True)
    atomic_write(root / MESSAGE_FILE, text)
    if paths is None:
        run(root, *identity, "commit", "-q", "--no-verify", "-F", MESSAGE_FILE)
        return
    if not paths:
        return
    spec = "\0".join(paths)
    pathspec = ["--pathspec-from-file=-", "--pathspec-file-nul"]
    run(root, "add", "-A", *pathspec, stdin=spec)
    run(root, *identity, "commit", "-q", "--no-verify", "-F", MESSAGE_FILE, *pathspec, stdin=spec)


def flag_regeneration(cwd: Path) -> None:
    """Called by the merge driver (git runs it at the top of the work tree)."""
    folder = cwd / CACHE_DIR
    if folder.is_dir():
        with owner_only():  # a file under .brain/ is the person's alone from its birth
            (cwd / REGENERATE_FLAG).write_text("merge\n", encoding="utf-8")

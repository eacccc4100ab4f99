"""brain.yaml: where the vault is, what it holds, and its settings with defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from brain._errors import BrokenNote, InvalidInput, VaultMissing
from brain._safeyaml import load_yaml

SETTINGS_FILE = "brain.yaml"
FORMAT_VERSION = 1
DEFAULT_VAULT = "~/brain"
VAULT_ENV = "BRAIN_VAULT"
EMBEDDERS = ("minilm", "hashing", "none")
SPARSE = ("splade", "splade-int8", "hashing", "none")


def default_sparse(embedder: str) -> str:
    """The learned-sparse encoder a vault has unless brain.yaml says: SPLADE beside a real
    model (the shipped one or a person's own); none beside the hashing test embedder or
    without vectors."""
    return "splade" if embedder == "minilm" or is_model_folder(embedder) else "none"


def is_model_folder(embedder: str) -> bool:
    """Whether an `embedder:` value names a folder (a person's own sentence-transformers
    model) rather than a built-in embedder: any path."""
    return "/" in embedder or embedder.startswith(("~", "."))


def model_folder(embedder: str, path: Path) -> Path:
    """The folder an `embedder:` value names (`~` expanded, relative to the vault whose
    brain.yaml is `path`), once it looks like a sentence-transformers model."""
    folder = Path(embedder).expanduser()
    folder = folder if folder.is_absolute() else path.parent / folder
    if not (folder / "modules.json").is_file() or not (folder / "tokenizer.json").is_file():
        raise InvalidInput(
            f"{path}: field 'embedder' names {folder}, which is not a sentence-transformers "
            "model folder (it needs modules.json and tokenizer.json)",
            "name a folder saved by SentenceTransformer.save(), or minilm, hashing or none",
        )
    return folder.resolve()


@dataclass(frozen=True)
class Settings:
    """The validated contents of brain.yaml."""

    vault_id: str
    format: int = FORMAT_VERSION
    default_partition: str = "main"
    embedder: str = "minilm"
    sparse: str = "splade"  # learned-sparse terms beside the vectors; `none` without them
    dormant_days: int = 21
    archive_days: int = 45
    max_text_bytes: int = 65536
    recall_k: int = 5
    cold_tier: bool = False
    cold_after_days: int = 90
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    path: Path | None = field(default=None, compare=False, repr=False)  # the file it was read from

    def bad_field(self, name: str, problem: str) -> InvalidInput:
        """A bad value in this brain.yaml, said in one line naming the file, line and field."""
        return bad_field(self.path or Path(SETTINGS_FILE), name, problem)


def find_vault(
    explicit: Path | None, env: Mapping[str, str], cwd: Path, home: Path
) -> tuple[Path, str]:
    """`--vault`, then BRAIN_VAULT, then the nearest folder upward with brain.yaml, then ~/brain.

    Returns the path and how it was found, so messages can say why that folder.
    """
    if explicit is not None:
        return _utf8(explicit.expanduser().absolute(), "--vault")
    if env.get(VAULT_ENV):
        return _utf8(Path(env[VAULT_ENV]).expanduser().absolute(), VAULT_ENV)
    for folder in (cwd, *cwd.parents):
        if (folder / SETTINGS_FILE).is_file():
            return _utf8(folder, "the current folder")
    return _utf8(home / "brain", "the default location")


def passed_over(root: Path, how: str, cwd: Path) -> str | None:
    """What to say when BRAIN_VAULT chose `root` while the command runs inside another vault's
    folder (a person with a work and a personal vault): which vault answers, and how to ask
    the other; None when they are the same vault or the choice was not BRAIN_VAULT's."""
    if how != VAULT_ENV:
        return None
    here = next((f for f in (cwd, *cwd.parents) if (f / SETTINGS_FILE).is_file()), None)
    if here is None or _same_folder(here, root):
        return None
    return (
        f"this command uses the vault at {root} (BRAIN_VAULT), not the one at {here} where it "
        f"runs; --vault {here} uses that one"
    )


def _same_folder(one: Path, other: Path) -> bool:
    try:
        return one.samefile(other)
    except OSError:
        return False


def _utf8(root: Path, how: str) -> tuple[Path, str]:
    # A name in another encoding reaches Python as lone surrogates, which no note, index or
    # message can hold: every command would end in a traceback.
    try:
        str(root).encode("utf-8")
    except UnicodeEncodeError:
        shown = str(root).encode("utf-8", "surrogateescape")
        raise InvalidInput(
            f"the vault's path {shown!r} ({how}) is not UTF-8",
            "rename the folder, e.g. with convmv -f latin1 -t utf-8, or move the vault",
        ) from None
    return root, how


def model_cache_dir(env: Mapping[str, str], home: Path) -> Path:
    """Machine-local cache for the exported embedding model (never inside a vault)."""
    base = env.get("XDG_CACHE_HOME") or str(home / ".cache")
    return Path(base) / "brain" / "models"


def state_dir(env: Mapping[str, str], home: Path) -> Path:
    """Machine-local state that must outlive a vault's `.brain/` (never inside a vault)."""
    base = env.get("XDG_STATE_HOME") or str(home / ".local" / "state")
    return Path(base) / "brain"


def load(root: Path) -> Settings:
    """Read and validate brain.yaml; every problem names the field."""
    path = root / SETTINGS_FILE
    if root.is_file():
        raise VaultMissing(
            f"no vault at {root}: it is a file",
            "make the vault elsewhere (`brain init PATH`) and name it with --vault PATH or "
            "BRAIN_VAULT",
        )
    if not path.is_file():
        if not root.exists():  # moved or renamed (`mv ~/brain ~/Notes/brain`), or never made
            raise VaultMissing(
                f"no vault at {root}: there is no such folder",
                "a vault moved or renamed is named by its new path: --vault PATH or "
                "BRAIN_VAULT, and `brain mcp-config HOST --write --vault PATH` for an "
                "assistant (cron lines too); `brain init` makes a new one",
            )
        raise VaultMissing(f"no vault at {root}", "run `brain init` to create one")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path}{yaml_problem(exc)}") from None
    return parse(text, path)


def parse(text: str, path: Path) -> Settings:
    """Validate the text of brain.yaml (`path` names it in every message)."""
    try:
        # It may arrive by `git pull`: read with the limits notes have (no aliases).
        data = load_yaml(text, str(path), SETTINGS_FILE) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}{yaml_problem(exc)}") from None
    except BrokenNote as exc:
        raise InvalidInput(exc.message, exc.hint) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: must be a mapping of settings")
    vault_id = data.get("vault_id")
    if not vault_id:
        raise InvalidInput(f"{path}: field 'vault_id' is missing")
    src = _Source(path, text)
    lifecycle = _section(data, "lifecycle", src)
    limits = _section(data, "limits", src)
    recall = _section(data, "recall", src)
    tiers = _section(data, "tiers", src)
    fmt = _positive(data.get("format", FORMAT_VERSION), "format", src)
    if fmt > FORMAT_VERSION:
        raise InvalidInput(
            f"{path}: format {fmt} is newer than this brain understands ({FORMAT_VERSION})",
            "upgrade brain",
        )
    embedder = str(data.get("embedder", "minilm"))
    if is_model_folder(embedder):
        embedder = str(model_folder(embedder, path))
    elif embedder not in EMBEDDERS:
        raise src.bad(
            "embedder",
            f"names an unknown embedder {embedder!r}; allowed: {', '.join(EMBEDDERS)}, "
            "or the path of a sentence-transformers model folder",
        )
    # SPLADE follows the real model by default; a hashing or vector-less vault has no sparse part.
    sparse = str(data.get("sparse", default_sparse(embedder)))
    if sparse not in SPARSE:
        raise src.bad(
            "sparse", f"names an unknown sparse encoder {sparse!r}; allowed: {', '.join(SPARSE)}"
        )
    return Settings(
        vault_id=str(vault_id),
        format=fmt,
        default_partition=str(data.get("default_partition", "main")),
        embedder=embedder,
        sparse=sparse if embedder != "none" else "none",
        dormant_days=_positive(lifecycle.get("dormant_days", 21), "lifecycle.dormant_days", src),
        archive_days=_positive(lifecycle.get("archive_days", 45), "lifecycle.archive_days", src),
        max_text_bytes=_positive(limits.get("max_text_bytes", 65536), "limits.max_text_bytes", src),
        recall_k=_positive(recall.get("k", 5), "recall.k", src),
        cold_tier=bool(tiers.get("cold", False)),
        cold_after_days=_positive(tiers.get("cold_after_days", 90), "tiers.cold_after_days", src),
        raw=data,
        path=path,
    )


def yaml_problem(exc: Exception) -> str:
    """What PyYAML (or the decoder) found wrong, in one line: where, then what."""
    if isinstance(exc, UnicodeDecodeError):
        return f": not UTF-8 text (bad byte at offset {exc.start})"
    mark = getattr(exc, "problem_mark", None)
    where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = str(getattr(exc, "problem", None) or "bad syntax")
    context, begun = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and begun is not None and (mark is None or begun.line != mark.line):
        problem += f" {context} begun on line {begun.line + 1}"
    return f"{where}: not valid YAML ({' '.join(problem.split())})"


def bad_field(path: Path, name: str, problem: str) -> InvalidInput:
    """A bad value in brain.yaml, in one line naming the file, the line and the field
    (`name` dotted: `lifecycle.dormant_days`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    return _Source(path, text).bad(name, problem)


@dataclass(frozen=True)
class _Source:
    """brain.yaml's path and the text read from it, for messages that name a line."""

    path: Path
    text: str

    def bad(self, name: str, problem: str) -> InvalidInput:
        line = _line_of(self.text, name)
        where = f" line {line}" if line else ""
        return InvalidInput(f"{self.path}{where}: field '{name}' {problem}")


def _line_of(text: str, name: str) -> int | None:
    """The line where a dotted field begins in the text; None if it is not there. Composed
    again only on the way to an error, so it costs nothing when all is well."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    for part in name.split("."):
        if not isinstance(node, yaml.MappingNode):
            return None
        found = [(k, v) for k, v in node.value if str(k.value) == part]
        if not found:
            return None
        key, node = found[-1]
    return int(key.start_mark.line) + 1 if name else None


def _section(data: Mapping[str, Any], name: str, src: _Source) -> Mapping[str, Any]:
    value = data.get(name) or {}
    if not isinstance(value, dict):
        raise src.bad(name, "must be a mapping")
    return value


def _positive(value: Any, name: str, src: _Source) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise src.bad(name, f"must be a positive whole number, not {value!r}")
    return value

"""The typer app, the error boundary its commands register behind, and what they all share."""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
import typer.core
from rich.console import Console
from rich.markup import escape

from brain._cli.progress import Shown
from brain._errors import InvalidInput, boundary
from brain._streams import Stopped, ending_as_ctrl_c, exit_code, interrupted, speaks_unicode

if TYPE_CHECKING:
    from brain._brain import Brain

# `brain --help` in the order a newcomer meets the commands; the README's list follows it
# (tests/package/test_readme.py holds the two together).
PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Everyday", ("init", "remember", "recall", "expand", "list", "correct", "forget")),
    ("Relations", ("relate", "unrelate", "graph")),
    ("Assistants", ("serve", "mcp-config", "daemon")),
    (
        "Documents and conversations",
        ("connect", "connectors", "sync", "watch", "disconnect", "ingest", "import"),
    ),
    ("Upkeep", ("sleep", "split", "tier")),
    ("History", ("git", "log", "undo")),
    ("Your levers", ("set", "partition")),
    ("Maintenance", ("reindex", "doctor")),
    ("Hosted", ("hosted",)),
)
# One example line for each everyday command, shown beside it in `brain --help`.
EXAMPLES = {
    "init": "brain init ~/brain",
    "remember": 'brain remember "We moved the launch to March"',
    "recall": 'brain recall "when is the launch"',
    "expand": "brain expand 01JE2Z3K4M5N6P7Q8R9S0T1V2W",
    "list": "brain list --node Knowledge --status active",
    "correct": 'brain correct 01JE2Z3K4M5N6P7Q8R9S0T1V2W "Actually, the launch is in April"',
    "forget": "brain forget 01JE2Z3K4M5N6P7Q8R9S0T1V2W",
}
_ORDER = [name for _panel, names in PANELS for name in names]


class _Command(typer.core.TyperCommand):
    """A command whose flags show no `<bool>` in help: a flag takes no value."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_flags(super().get_params(ctx))


class _Group(typer.core.TyperGroup):
    """A command group listed in the order of PANELS, its flags shown without a type."""

    def get_params(self, ctx: Any) -> list[Any]:
        return _plain_flags(super().get_params(ctx))

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: _ORDER.index(n) if n in _ORDER else len(_ORDER))


def _plain_flags(params: list[Any]) -> list[Any]:
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


app = typer.Typer(
    cls=_Group,
    help="brain: a local-first long-term memory in a folder of Markdown files.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
# Piped, stdout has no width to fit: rich would cut a table's paths at 80 columns (with "…"),
# which `grep` and `awk` then never see. A table is only as wide as its cells.
out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 100_000)
err = Console(stderr=True, highlight=False, soft_wrap=True)
_state = {"debug": False}

F = TypeVar("F", bound=Callable[..., Any])

VaultOpt = Annotated[
    Path | None,
    typer.Option(
        "--vault",
        help="The vault folder (else $BRAIN_VAULT, else the nearest folder upward with "
        "brain.yaml, else ~/brain).",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
PartitionOpt = Annotated[
    str | None,
    typer.Option(
        "--partition",
        help="Work in this partition for this command only (brain.yaml stays as it is).",
        show_default=False,
    ),
]


def command(
    *names: str, group: typer.Typer | None = None, own_signals: bool = False, **kwargs: Any
) -> Callable[[F], F]:
    """Register a command (on `app`, or a sub-command group) behind the error boundary:
    BrainError → one red line on stderr, exit 2. Ctrl-C, SIGTERM and SIGHUP unwind it and it
    says so in one line (exit 128 + the signal's number), unless it has `own_signals` (the
    long-lived `serve`, `watch`, `daemon run`)."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def guarded(*args: Any, **kw: Any) -> Any:
            debug = say_traceback if _state["debug"] else None
            if own_signals:
                with boundary(say_error, debug=debug):
                    return fn(*args, **kw)
            try:
                with ending_as_ctrl_c(), boundary(say_error, debug=debug):
                    return fn(*args, **kw)
            except KeyboardInterrupt as stop:
                signum = stop.signum if isinstance(stop, Stopped) else signal.SIGINT
                say_interrupted(_named(group, names[0] if names else fn.__name__), signum)
                raise SystemExit(exit_code(signum)) from None

        if "help" not in kwargs and fn.__doc__:
            # Paragraphs as flowing text: the rich help keeps a docstring's line breaks, which
            # then wrap again at the terminal's width into ragged lines.
            paragraphs = (inspect.getdoc(fn) or "").split("\n\n")
            kwargs["help"] = "\n\n".join(" ".join(p.split()) for p in paragraphs)
        (group or app).command(*names, **kwargs)(guarded)
        return fn

    return wrap


def say_error(message: str) -> None:
    """How the command line shows a BrainError: one red line on stderr."""
    err.print(f"[red]error:[/red] {escape(message)}")


def say_interrupted(name: str, signum: int) -> None:
    """What a command ended by a signal says: one line on stderr (none if stderr is gone)."""
    with contextlib.suppress(OSError):  # SIGHUP: the terminal may be gone with stderr
        err.print(f"[yellow]{escape(interrupted(name, signum))}[/yellow]")


def _named(group: typer.Typer | None, name: str) -> str:
    """A command's name as typed after `brain` (`import`, `partition list`)."""

    def under(parent: typer.Typer, path: list[str]) -> list[str] | None:
        for info in parent.registered_groups:
            here = [*path, info.name or ""]
            if info.typer_instance is group:
                return here
            if info.typer_instance is not None and (found := under(info.typer_instance, here)):
                return found
        return None

    path = under(app, []) if group is not None else []
    return " ".join([*(path or []), name.replace("_", "-")])


def say_traceback(text: str) -> None:
    """`--debug`: the traceback of an error, plain, on stderr before its line."""
    print(text, file=sys.stderr)


def _show_version(wanted: bool) -> None:
    if wanted:
        from brain._version import version

        typer.echo(f"brain {version()}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
    _version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Show brain's version."
        ),
    ] = False,
) -> None:
    _state["debug"] = debug


def vault_path(explicit: Path | None) -> tuple[Path, str]:
    """The vault a command works on and how it was found; a choice by BRAIN_VAULT while the
    command runs inside another vault is said once on stderr (stdout stays the answer's)."""
    from brain._settings import find_vault, passed_over

    root, how = find_vault(explicit, os.environ, Path.cwd(), Path.home())
    said = passed_over(root, how, Path.cwd())
    if said is not None and not _state.get("told"):
        _state["told"] = True
        err.print(f"[yellow]note:[/yellow] {escape(said)}")
    return root, how


def open_brain(explicit: Path | None) -> Brain:
    """The vault opened in this process; a long first build or embedding is shown as it goes."""
    from brain._brain import open_vault

    root, _how = vault_path(explicit)
    prepare_models(root)
    return open_vault(root, steps=Shown(root, err))


def prepare_models(root: Path) -> None:
    """Before a command opens the vault: what its models need made once (a person's own
    model exported to ONNX, SPLADE's int8 head) is made here, its steps shown, rather than
    in silence in the daemon."""
    from brain import _settings as settings
    from brain._errors import BrainError

    try:
        loaded = settings.load(root)
    except BrainError:
        return  # the command itself says what is wrong, in its own words
    cache = settings.model_cache_dir(os.environ, Path.home())
    if settings.is_model_folder(loaded.embedder):
        from brain._indexes.ownmodel import STEPS, OwnModelEmbedder

        embedder = OwnModelEmbedder(Path(loaded.embedder), cache)
        if not embedder.ready:
            name = Path(loaded.embedder).name
            with steps(f"Preparing {name} (once, about a minute)", STEPS) as step:
                embedder.prepare(step)
    if loaded.sparse == "splade-int8":
        from brain._indexes.sparse import SpladeEncoder

        sparse = SpladeEncoder(cache, int8=True)
        if not sparse.ready:
            with steps("Preparing SPLADE-tiny's int8 head (once, a few seconds)", 1) as step:
                sparse.prepare(step)


class steps:  # noqa: N801 - a context manager read as a phrase: `with steps(...) as step`
    """A progress bar of named steps on a terminal; elsewhere one line per step on stderr."""

    def __init__(self, title: str, total: int) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        self.title, self.total, self.done = title, total, 0
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        self.bar = Progress(*columns, console=err, transient=True) if err.is_terminal else None
        self.task = self.bar.add_task(title, total=total) if self.bar else None

    def __enter__(self) -> Callable[[str], None]:
        if self.bar is not None:
            self.bar.start()
        return self.step

    def step(self, what: str) -> None:
        self.done += 1
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, completed=self.done - 1, description=f"{self.title}: {what}")
        else:
            err.print(f"brain: {escape(self.title)}: {escape(what)}")

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def read_text(text: str) -> str:
    """TEXT, or stdin when TEXT is `-` (strict UTF-8)."""
    if text != "-":
        return text
    data = read_stdin()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"stdin is not valid UTF-8 (byte {exc.start})") from None


def read_stdin() -> bytes:
    """All of stdin; at a terminal, said first how to end it (else a person sees only a wait)."""
    if sys.stdin.isatty():
        err.print("Type or paste the text, then press Ctrl-D on a new line to end it.")
    return sys.stdin.buffer.read()


def emit_json(data: Any) -> None:
    # ASCII escapes where stdout cannot hold every character: the JSON stays exact.
    typer.echo(json.dumps(data, ensure_ascii=not speaks_unicode(sys.stdout), indent=2))


def arrange() -> None:
    """Put each command in its help panel (everyday ones with an example); plain flags.
    Called once every command module has registered (cli/__init__.py)."""
    panel_of = {name: panel for panel, names in PANELS for name in names}
    for info in app.registered_commands:
        callback = info.callback
        name = info.name or (callback.__name__.replace("_", "-") if callback else "")
        info.rich_help_panel = panel_of.get(name)
        info.cls = _Command
        if name in EXAMPLES:
            # The docstring's first paragraph, whole: its first line can end mid-sentence.
            summary = " ".join(
                (info.help or inspect.getdoc(callback) or "").split("\n\n")[0].split()
            )
            info.short_help = f"{summary}\n[dim]e.g. {escape(EXAMPLES[name])}[/dim]"
            info.epilog = f"Example: {escape(EXAMPLES[name])}"
    for group in app.registered_groups:
        group.rich_help_panel = panel_of.get(group.name or "")
        group.cls = _Group
        for info in group.typer_instance.registered_commands if group.typer_instance else ():
            info.cls = _Command

"""The README's command list never drifts from the real `brain --help`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.cli.test_help import ENV, brain_help, help_panels

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def readme_panels() -> list[tuple[str, list[str]]]:
    """The table under "## Commands": | panel | `cmd` `cmd` … |."""
    section = README.split("## Commands", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| ([A-Z][^|]+?) \| ((?:`[a-z-]+` ?)+) \|$", section, re.M)
    return [(title, re.findall(r"`([a-z-]+)`", names)) for title, names in rows]


def test_the_readme_table_is_the_help_page() -> None:
    assert readme_panels() == help_panels(brain_help())


def test_every_brain_command_the_readme_names_exists() -> None:
    known = {n for _t, names in help_panels(brain_help()) for n in names}
    code = re.findall(r"`([^`\n]+)`", README) + re.findall(r"^    (.+)$", README, re.M)
    named = {m for line in code for m in re.findall(r"(?:^|[\s(])brain ([a-z][a-z-]+)", line)}
    assert named, "the README names no commands?"
    unknown = sorted(n for n in named if n not in known)
    assert not unknown, f"README names commands brain does not have: {unknown}"
    # Sub-commands the README shows must exist too.
    for group in ("daemon", "git", "partition", "tier"):
        subs = {m for line in code for m in re.findall(rf"brain {group} ([a-z-]+)", line)}
        assert group == "tier" or subs, group
        for sub in subs:
            result = subprocess.run(
                [sys.executable, "-m", "brain", group, sub, "--help"],
                env=ENV,
                capture_output=True,
                cwd=ROOT,
            )
            assert result.returncode == 0, f"brain {group} {sub}"

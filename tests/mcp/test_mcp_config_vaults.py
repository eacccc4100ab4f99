"""`brain mcp-config --write` for a person with two vaults in one host: both stay served."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from brain.testing import NO_AUTOSTART, new_vault
from tests.mcp.test_mcp_config import ROOT, _write_in_pty


def test_a_second_vault_written_to_the_same_host_gets_its_own_server_and_the_first_stays(
    vault: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    settings = home / ".cursor" / "mcp.json"
    personal = new_vault(tmp_path / "Personal Notes", daemon=NO_AUTOSTART)

    assert _write_in_pty(vault, home, "yes")[0] == 0
    code, shown = _write_in_pty(personal, home, "yes")
    assert code == 0, shown
    servers = json.loads(settings.read_text())["mcpServers"]
    assert servers["brain"]["args"] == ["serve", "--vault", str(vault)]
    assert servers["brain-personal-notes"]["args"] == ["serve", "--vault", str(personal)]
    assert f"brain still serves the vault at {vault}" in " ".join(shown.split())

    again = _write_in_pty(personal, home, "yes")  # the same vault again: nothing changes
    assert again[0] == 0 and "nothing changed" in again[1]
    assert json.loads(settings.read_text())["mcpServers"] == servers

    moved = tmp_path / "elsewhere"
    shutil.move(vault, moved)  # the first vault moved: its entry is the one brought up to date
    assert _write_in_pty(moved, home, "yes")[0] == 0
    servers = json.loads(settings.read_text())["mcpServers"]
    assert servers["brain"]["args"] == ["serve", "--vault", str(moved)]
    assert sorted(servers) == ["brain", "brain-personal-notes"]


def test_a_second_vaults_snippet_shown_without_write_takes_the_name_write_would(
    vault: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    personal = new_vault(tmp_path / "Personal Notes", daemon=NO_AUTOSTART)
    assert _write_in_pty(vault, home, "yes")[0] == 0  # the first vault is in the host already
    env = {**os.environ, "HOME": str(home), "BRAIN_DAEMON": "off", "PYTHONPATH": str(ROOT)}
    shown = subprocess.run(
        [sys.executable, "-m", "brain", "mcp-config", "cursor", "--vault", str(personal)],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "300"},
        check=True,
    ).stdout
    assert '"brain-personal-notes": {' in shown
    assert '"brain": {' not in shown  # pasted, it would have replaced the first vault's server

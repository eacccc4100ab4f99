"""A vault lock held too long names the process that holds it, and says when it is stopped."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from brain._errors import VaultBusy
from brain._vault.files import WriterLock

HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(120)
"""


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[str]]]:
    """Another process that holds the writer lock of a vault's .brain/."""
    path = tmp_path / ".brain" / "writer.lock"
    path.parent.mkdir()
    script = tmp_path / "keeping-the-lock.py"
    script.write_text(HOLD)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    try:
        yield path, proc
    finally:
        proc.send_signal(signal.SIGCONT)
        proc.kill()
        proc.wait()


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="Linux's /proc/locks names holders")
def test_the_process_holding_the_lock_is_named(
    holder: tuple[Path, subprocess.Popen[str]],
) -> None:
    path, proc = holder
    with pytest.raises(VaultBusy) as busy, WriterLock(path, timeout=0.2).hold():
        pass
    assert f"pid {proc.pid}" in busy.value.message and "keeping-the-lock" in busy.value.message
    assert "stopped" not in busy.value.message
    proc.send_signal(signal.SIGSTOP)  # Ctrl-Z on a `brain import`, say
    with pytest.raises(VaultBusy) as busy, WriterLock(path, timeout=0.2).hold():
        pass
    assert f"pid {proc.pid}" in busy.value.message and ", stopped)" in busy.value.message
    assert busy.value.hint is not None and "kill -CONT" in busy.value.hint

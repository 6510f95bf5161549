"""The Makefile's promise of README.md's first lines: `make test` gets the browser its tests need, or stops
at once saying how to get it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _path_without_chromium(tmp_path: Path, uid: int) -> str:
    """A PATH with make and the shell but no chromium, chromedriver or apt-get, whose `id -u` is ``uid``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("make", "sh", "bash"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    fake_id = bin_dir / "id"
    fake_id.write_text(f"#!/bin/sh\necho {uid}\n")
    fake_id.chmod(0o755)
    return str(bin_dir)


def test_make_test_without_chromium_and_without_root_stops_at_once_with_the_command_to_run(tmp_path):
    # Given: a user who is not root, on a machine with no Chromium
    env = {**os.environ, "PATH": _path_without_chromium(tmp_path, uid=1000)}
    # When: `make test`'s first step, the browser check, runs
    result = subprocess.run(["make", "-C", str(ROOT), "browser"], env=env, capture_output=True, text=True, timeout=30)
    # Then: it fails, naming Debian's two packages in one command, and installs nothing
    assert result.returncode != 0
    assert "sudo sh -c 'apt-get update && apt-get install -y chromium chromium-driver'" in result.stderr


def test_make_test_checks_the_browser_before_any_install():
    # `make test` with its prerequisites in order (a dry run: nothing is executed)
    listed = subprocess.run(["make", "-C", str(ROOT), "-n", "-p", "test"], capture_output=True, text=True, timeout=30).stdout
    [rule] = [line for line in listed.splitlines() if line.startswith("test:")]
    assert rule.split(":", 1)[1].split()[:2] == ["browser", "setup"]

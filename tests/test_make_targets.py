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


def _dry_run(target: str) -> list[str]:
    """The commands `make TARGET` runs on a fresh clone: -B takes every file target as out of date,
    -n prints the commands and executes none."""
    done = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "-n", "-B", target], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_make_demo_installs_only_what_the_demo_runs():
    # Issue 40: a first `make demo` spent most of its 3 min 21 s installing checkov and the AWS CLI,
    # which the demo never runs. It needs the project's venv, the cdk CLI and the Lambda sandbox.
    commands = _dry_run("demo")
    assert ".venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt" in commands
    assert "npm ci --no-audit --no-fund --loglevel=error" in commands
    assert ".venv/bin/python -m emulator.awslambda.sandbox" in commands
    assert commands[-1] == ".venv/bin/python -m emulator demo"
    assert [c for c in commands if ".venv-checkov" in c or ".venv-awscli" in c] == []


def test_make_test_still_installs_everything_before_the_tests():
    commands = _dry_run("test")
    installs = [c for c in commands if " -m pip install " in c or c.startswith("npm ci")]
    assert [c.split(" -r ")[-1] if " -r " in c else "npm" for c in installs] == [
        "requirements-dev.txt", "npm", "requirements-checkov.txt", "requirements-awscli.txt"]
    assert commands.index(".venv/bin/python -m emulator.awslambda.sandbox") < commands.index(".venv/bin/python -m tests.parallel")
    assert commands[-1] == ".venv/bin/python -m tests.parallel"

"""Mutation testing of the logic modules with mutmut, against the fast runtime tests: `make mutate`.

mutmut names each mutant after the mutated file's path (``lambdas/alert_config/alert_config_logic.py``
becomes ``lambdas.alert_config.alert_config_logic``) and activates it only inside a module of that
name, while the tests import a function's modules as top-level modules (``alert_config_logic``, see
tests/lambda_loader.py) and the layer as ``patterns_common``. So mutmut runs in a staging directory,
``.mutmut/``, where each module sits at the path its import name says: ``alert_config_logic.py`` at the
top and ``patterns_common/`` beside it. mutmut puts its copy of that directory first on ``sys.path``;
the copy of the project it runs the tests in leaves the layer's ``patterns_common`` out, so the tests
import the mutated modules and nothing has to move.

Usage: ``python tools/mutate.py [MODULE ...]`` with module names as in ``LOGIC_MODULES`` (all of them when
none is given). Prints, per module, how many mutants the tests killed, every survivor nobody has read
yet, and the lines of the read list that name no survivor any more. Inspect a survivor afterwards with
``cd .mutmut && ../.venv/bin/mutmut show NAME``. A survivor read and found to change nothing a caller can
observe goes in ``tools/survivors_read.txt`` with the reason; one that changes behaviour gets a test
instead. A mutant's name counts its place in its function, so a change to that function names its
survivors afresh, and they are read again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGE = ROOT / ".mutmut"
LAYER = Path("lambdas/shared_layer/python")
READ = ROOT / "tools/survivors_read.txt"

# Import name -> the file in the repository.
LOGIC_MODULES = {
    "alert_config_logic": Path("lambdas/alert_config/alert_config_logic.py"),
    "map_retry": LAYER / "patterns_common/map_retry.py",
    "job_protocol": LAYER / "patterns_common/job_protocol.py",
    "job_validate_input_logic": Path("lambdas/job_validate_input/job_validate_input_logic.py"),
    "alert_status": LAYER / "patterns_common/alert_status.py",
    "alert_action_links": LAYER / "patterns_common/alert_action_links.py",
    "alert_alarms_logic": Path("lambdas/alert_alarms/alert_alarms_logic.py"),
    "alert_actions_logic": Path("lambdas/alert_actions/alert_actions_logic.py"),
    "oncall": LAYER / "patterns_common/oncall.py",
    "oncall_command": Path("lambdas/alert_actions/oncall_command.py"),
    "alert_on_call_logic": Path("lambdas/alert_on_call/alert_on_call_logic.py"),
    "alert_oncall_handoff_logic": Path("lambdas/alert_oncall_handoff/alert_oncall_handoff_logic.py"),
    "alert_oncall_declared_logic": Path("lambdas/alert_oncall_declared/alert_oncall_declared_logic.py"),
    "alert_dispatcher_logic": Path("lambdas/alert_dispatcher/alert_dispatcher_logic.py"),
    "slack_pace": LAYER / "patterns_common/slack_pace.py",
    "people": LAYER / "patterns_common/people.py",
    "alert_contact_logic": Path("lambdas/alert_contact/alert_contact_logic.py"),
    "alert_sms_replies_logic": Path("lambdas/alert_sms_replies/alert_sms_replies_logic.py"),
    "people_command": Path("lambdas/alert_actions/people_command.py"),
    "contact_arming": Path("lambdas/alert_notifier/contact_arming.py"),
}
# The fast tests a developer runs on every change; the emulator tests would take minutes per mutant.
FAST_TESTS = "tests/test_*_runtime.py"
# The property tests (Hypothesis) run under this profile: a fixed set of fewer examples, so a mutant's
# outcome does not depend on the run's random draw and the run takes minutes, not hours (see
# tests/test_oncall_properties_runtime.py).
PROPERTY_PROFILE = "mutate"
# Two cores, shared: mutmut forks at most this many test runs at a time, at a lower priority.
MAX_CHILDREN = 2
NICENESS = 10
# Top-level entries of the repository the staged copy does not link: mutmut's own output, the
# mutated sources (staged separately), tests and pytest.ini (mutmut copies these itself), caches.
NOT_LINKED = {".git", ".mutmut", "lambdas", "tests", "pytest.ini", "cdk.out", ".pytest_cache", ".ruff_cache"}


def staged_name(module: str) -> Path:
    """Where a module sits in the staging directory: the path its import name says."""
    source = LOGIC_MODULES[module]
    if source.is_relative_to(LAYER):
        return source.relative_to(LAYER)
    return Path(source.name)


def stage(modules: list[str]) -> None:
    """A fresh staging directory, so every run measures the tests as they are now."""
    shutil.rmtree(STAGE, ignore_errors=True)
    mutants = STAGE / "mutants"
    mutants.mkdir(parents=True)
    (STAGE / "tests").symlink_to(ROOT / "tests")
    (STAGE / "pytest.ini").symlink_to(ROOT / "pytest.ini")
    (STAGE / "patterns_common").symlink_to(ROOT / LAYER / "patterns_common")
    function_modules = [m for m in LOGIC_MODULES if not LOGIC_MODULES[m].is_relative_to(LAYER)]
    for module in function_modules:
        (STAGE / staged_name(module)).symlink_to(ROOT / LOGIC_MODULES[module])

    # The project the tests run in: links to the repository, except the layer's patterns_common,
    # which mutmut's copy at the top of mutants/ stands in for.
    for entry in ROOT.iterdir():
        if entry.name not in NOT_LINKED and not entry.name.startswith(".venv"):
            (mutants / entry.name).symlink_to(entry)
    for function_dir in (ROOT / "lambdas").iterdir():
        if function_dir.name != "shared_layer":
            (mutants / "lambdas" / function_dir.name).parent.mkdir(exist_ok=True)
            (mutants / "lambdas" / function_dir.name).symlink_to(function_dir)
    (mutants / LAYER).mkdir(parents=True)
    for entry in (ROOT / LAYER).iterdir():
        if entry.name != "patterns_common":
            (mutants / LAYER / entry.name).symlink_to(entry)

    source_paths = ["patterns_common", *(str(staged_name(m)) for m in function_modules)]
    only_mutate = [str(staged_name(m)) for m in modules]
    tests = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(FAST_TESTS))
    (STAGE / "setup.cfg").write_text(
        "[mutmut]\n"
        + "".join(
            f"{key}=\n" + "".join(f"    {value}\n" for value in values)
            for key, values in (
                ("source_paths", source_paths),
                ("only_mutate", only_mutate),
                ("also_copy", ["pytest.ini"]),
                ("pytest_add_cli_args_test_selection", tests),
            )
        )
        # A fresh directory each run: mutmut's git-based invalidation has nothing to compare.
        + "use_git_change_detection=false\n"
    )


def outcomes(module: str) -> dict[str, str]:
    """Each mutant of one module and its outcome, from the results mutmut keeps beside each mutated file."""
    from mutmut.stats import status_by_exit_code

    meta = json.loads((STAGE / "mutants" / f"{staged_name(module)}.meta").read_text())
    return {name: status_by_exit_code[exit_code] for name, exit_code in meta["exit_code_by_key"].items()}


def read_survivors() -> set[str]:
    """The survivors read and found to change nothing observable: the first word of each line of READ."""
    lines = READ.read_text().splitlines() if READ.exists() else []
    return {line.split()[0] for line in lines if line.strip() and not line.startswith("#")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", metavar="MODULE", help=", ".join(LOGIC_MODULES))
    modules = parser.parse_args().modules or list(LOGIC_MODULES)
    unknown = sorted(set(modules) - set(LOGIC_MODULES))
    if unknown:
        parser.error(f"unknown module(s) {', '.join(unknown)}; choose from {', '.join(LOGIC_MODULES)}")

    stage(modules)
    mutmut = Path(sys.executable).with_name("mutmut")
    started = time.monotonic()
    run = subprocess.run(
        ["nice", "-n", str(NICENESS), str(mutmut), "run", "--max-children", str(MAX_CHILDREN)],
        cwd=STAGE,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "ONCALL_PROPERTY_PROFILE": PROPERTY_PROFILE},
        check=False,
    )
    elapsed = time.monotonic() - started
    if run.returncode != 0:
        print(f"mutmut run failed (exit {run.returncode})", file=sys.stderr)
        return run.returncode

    print(f"\n{'module':<28}{'mutants':>8}{'survived':>10}{'unread':>8}{'no tests':>10}{'killed':>9}")
    below, unread, surviving = [], [], set()
    already_read = read_survivors()
    for module in modules:
        statuses = list(outcomes(module).items())
        survivors = [name for name, status in statuses if status == "survived"]
        not_read = [name for name in survivors if name not in already_read]
        surviving.update(survivors)
        unread += not_read
        # A timeout is a kill: the mutant made the tests hang, and they noticed.
        killed = sum(status in ("killed", "timeout") for _, status in statuses)
        percent = 100 * killed / len(statuses) if statuses else 100.0
        no_tests = sum(status == "no tests" for _, status in statuses)
        print(f"{module:<28}{len(statuses):>8}{len(survivors):>10}{len(not_read):>8}{no_tests:>10}{percent:>8.1f}%")
        if percent < 90:
            below.append(module)
    print(f"\n{len(modules)} module(s) in {elapsed:.0f} s; below 90% killed: {', '.join(below) or 'none'}")
    print(f"survivors not yet read ({READ.relative_to(ROOT)}): {len(unread) or 'none'}")
    for name in unread:
        print(f"  {name}")
    # Lines of modules not run this time are not judged; those of a module run must still name a survivor.
    run_prefixes = tuple(f"{str(staged_name(m).with_suffix('')).replace('/', '.')}.x" for m in modules)
    stale = sorted(name for name in already_read - surviving if name.startswith(run_prefixes))
    print(f"lines of {READ.relative_to(ROOT)} naming no survivor any more: {len(stale) or 'none'}")
    for name in stale:
        print(f"  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

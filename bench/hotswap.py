"""The local loop's speed: `cdk deploy --hotswap`, then `cdk watch`, of a handler change and of a definition change.

A copy of the app is changed (the deployed app is what `make watch` starts from) and hot-swapped into
the running emulator with the real CLI: the CLI's own "hotswap-deployment time" and "Synthesis time",
the whole command's wall time (with the machine's load as it ended: synthesis is CPU-bound), and
whether the change reached the emulator and the next execution ran. Then `cdk watch`, started on a
fresh copy as `serve --watch` starts it, and each change saved: from the save to the change in the
emulator, the whole loop a developer waits for.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from emulator.deploy import ROOT, run_cdk, stop_watch, watch
from emulator.session import APP_CONTEXT, Deployment

STACK = "MapRetryStack"
MACHINE = "map-retry"
# What `cdk synth` reads: the entry point, its settings, the stacks and what they package.
APP_FILES = ("app.py", "cdk.json", "requirements-powertools-layer.txt", "requirements-shared-layer.txt", "stacks", "lambdas",
             "statemachines")
# The changes, as a developer makes them: (what, file, old text, new text naming the {command} making it).
CHANGES = (
    ("handler", "lambdas/map_item_processor/handler.py", '"""Process Item:', '"""Process Item (changed by {command}):'),
    ("definition", "statemachines/map_retry.asl.json", '"Comment": "Map retry-failed',
     '"Comment": "Changed by {command}: Map retry-failed'),
)
DEPLOY = "cdk deploy --hotswap"
WATCH = "cdk watch"
SAMPLE_INPUT = {"items": [{"id": "A-123"}, {"id": "B-456", "fail_attempts": 1}], "max_attempts": 3}
# The targets on 2 cores, for each change.
TARGET_HOTSWAP_SECONDS = 5.0
TARGET_COMMAND_SECONDS = 30.0
# How long a watch may take to start or to deploy a change before the bench gives up (a busy machine).
WATCH_DEADLINE_SECONDS = 600.0
# What `cdk watch` prints as each of its deployments (the one it makes as it starts included) ends.
WATCH_DEPLOYED = "Total time"


def _figure(pattern: str, output: str) -> float:
    match = re.search(pattern, output)
    if match is None:
        raise ValueError(f"the cdk output has no {pattern!r}:\n{output[-2000:]}")
    return float(match.group(1))


def _deployed(deployment: Deployment) -> dict[str, str]:
    """What each change should alter, as the emulator holds it: the function's code hash, the definition."""
    function = deployment.stack_resource(STACK, "AWS::Lambda::Function", "ItemProcessor")
    return {
        "handler": deployment.client("lambda").get_function(FunctionName=function)["Configuration"]["CodeSha256"],
        "definition": deployment.client("stepfunctions").describe_state_machine(
            stateMachineArn=deployment.machine_arn(MACHINE))["definition"],
    }


def _copy_app(app_dir: Path) -> None:
    app_dir.mkdir(exist_ok=True)
    for name in APP_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, app_dir / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, app_dir / name)


def _save(app_dir: Path, relative: str, old: str, new: str, command: str) -> None:
    path = app_dir / relative
    path.write_text(path.read_text().replace(old, new.format(command=command), 1))


def _wait(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WATCH_DEADLINE_SECONDS
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{WATCH} never {what} in {WATCH_DEADLINE_SECONDS:g} s")
        time.sleep(0.05)


def hotswaps(deployment: Deployment) -> list[dict]:
    """A `cdk deploy --hotswap` row per change, then a `cdk watch` row per change."""
    with tempfile.TemporaryDirectory(prefix="bench-hotswap-") as tmp:
        app_dir = Path(tmp)
        _copy_app(app_dir)
        results = []
        for what, relative, old, new in CHANGES:
            _save(app_dir, relative, old, new, DEPLOY)
            before = _deployed(deployment)
            started = time.monotonic()
            output = run_cdk(deployment.aws, ["deploy", "--hotswap", "--exclusively", STACK], app_dir=app_dir,
                             outdir=app_dir / "cdk.out")
            command_seconds = time.monotonic() - started
            load_average = os.getloadavg()[0]
            run = deployment.run(MACHINE, SAMPLE_INPUT)
            results.append({
                "command": DEPLOY,
                "change": what,
                "file": relative,
                "reached": _deployed(deployment)[what] != before[what],
                "hotswap_seconds": _figure(r"hotswap-deployment time: ([\d.]+)s", output),
                "synthesis_seconds": _figure(r"Synthesis time: ([\d.]+)s", output),
                "command_seconds": command_seconds,
                "load_average": load_average,
                "next_execution": run.status,
            })
    return results + watched(deployment)


def watched(deployment: Deployment) -> list[dict]:
    """`cdk watch` on a fresh copy of the app, as `serve --watch` runs it; each change saved in turn.

    The loop is timed from the save to the change in the emulator (polled every 50 ms), the CLI's
    synthesis time read from the deployment the save set off. The copy is the app as deployed through
    CloudFormation, so the watch deploys nothing as it starts (``deployed_at_start`` says if it did).
    """
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp, open(Path(tmp) / "watch.log", "w+") as log:
        app_dir = Path(tmp) / "app"
        _copy_app(app_dir)

        def output() -> str:
            return (Path(tmp) / "watch.log").read_text()

        watcher = watch(deployment.aws, APP_CONTEXT, app_dir=app_dir, output=log)
        try:
            _wait(lambda: WATCH_DEPLOYED in output(), "finished the deployment it makes as it starts")
            at_start = output()
            deployed_at_start = "hotswapped!" in at_start or "Falling back" in at_start
            results = []
            for what, relative, old, new in CHANGES:
                before, deployments = _deployed(deployment), output().count(WATCH_DEPLOYED)
                _save(app_dir, relative, old, new, WATCH)
                saved = time.monotonic()
                _wait(lambda: _deployed(deployment)[what] != before[what], f"hot-swapped the {what} change")
                loop_seconds = time.monotonic() - saved
                load_average = os.getloadavg()[0]
                # The rest of the app's stacks (no changes) before the next save.
                _wait(lambda: output().count(WATCH_DEPLOYED) > deployments, f"finished deploying the {what} change")
                cycle = output().split(WATCH_DEPLOYED)[deployments]
                run = deployment.run(MACHINE, SAMPLE_INPUT)
                results.append({
                    "command": WATCH,
                    "change": what,
                    "file": relative,
                    "loop_seconds": loop_seconds,
                    "synthesis_seconds": _figure(r"Synthesis time: ([\d.]+)s", cycle),
                    "load_average": load_average,
                    "next_execution": run.status,
                    "deployed_at_start": deployed_at_start,
                })
        finally:
            stop_watch(watcher)
    return results

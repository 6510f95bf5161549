"""The local loop's speed: `cdk deploy --hotswap` of a handler change and of a definition change.

A copy of the app is changed (the deployed app is what `make watch` starts from) and hot-swapped into
the running emulator with the real CLI: the CLI's own "hotswap-deployment time" and "Synthesis time",
the whole command's wall time, and whether the next execution ran and on what.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from pathlib import Path

from emulator.deploy import ROOT, run_cdk
from emulator.session import Deployment

STACK = "MapRetryStack"
MACHINE = "map-retry"
# What `cdk synth` reads: the entry point, its settings, the stacks and what they package.
APP_FILES = ("app.py", "cdk.json", "requirements-powertools-layer.txt", "stacks", "lambdas", "statemachines")
# The changes, as a developer makes them: (what, file, old text, new text).
CHANGES = (
    ("handler", "lambdas/map_item_processor/handler.py", '"""Process Item:', '"""Process Item (changed):'),
    ("definition", "statemachines/map_retry.asl.json", '"Comment": "Map retry-failed', '"Comment": "Changed: Map retry-failed'),
)
SAMPLE_INPUT = {"items": [{"id": "A-123"}, {"id": "B-456", "fail_attempts": 1}], "max_attempts": 3}
# The targets on 2 cores, for each change.
TARGET_HOTSWAP_SECONDS = 5.0
TARGET_COMMAND_SECONDS = 30.0


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


def hotswaps(deployment: Deployment) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="bench-hotswap-") as tmp:
        app_dir = Path(tmp)
        for name in APP_FILES:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, app_dir / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(source, app_dir / name)
        results = []
        for what, relative, old, new in CHANGES:
            path = app_dir / relative
            path.write_text(path.read_text().replace(old, new, 1))
            before = _deployed(deployment)
            started = time.monotonic()
            output = run_cdk(deployment.aws, ["deploy", "--hotswap", "--exclusively", STACK], app_dir=app_dir,
                             outdir=app_dir / "cdk.out")
            command_seconds = time.monotonic() - started
            run = deployment.run(MACHINE, SAMPLE_INPUT)
            results.append({
                "change": what,
                "file": relative,
                "reached": _deployed(deployment)[what] != before[what],
                "hotswap_seconds": _figure(r"hotswap-deployment time: ([\d.]+)s", output),
                "synthesis_seconds": _figure(r"Synthesis time: ([\d.]+)s", output),
                "command_seconds": command_seconds,
                "next_execution": run.status,
            })
        return results

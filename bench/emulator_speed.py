"""How fast the emulator itself is: engine start-up, Pass-only throughput, the demo's scenarios."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.measure import observe
from emulator import demo
from emulator.session import Deployment

ROOT = Path(__file__).resolve().parents[1]
PASS_STATES = 5
SEQUENTIAL_EXECUTIONS = 20
CONCURRENT_EXECUTIONS = 50

# Run in a fresh interpreter: what the first `python -m emulator ...` of a session pays before it
# can deploy (importing moto's Step Functions engine, installing the emulator's patches, serving).
START_UP_PROBE = """
import json, time
started = time.perf_counter()
import moto.stepfunctions.parser.models
imported = time.perf_counter()
from emulator.server import LocalAws
with LocalAws() as aws:
    serving = time.perf_counter()
print(json.dumps({"engine_import": imported - started, "local_aws_start": serving - imported}))
"""


@dataclass(frozen=True)
class Timing:
    what: str
    seconds: float
    note: str = ""


def start_up() -> list[Timing]:
    output = subprocess.run([sys.executable, "-c", START_UP_PROBE], cwd=ROOT, capture_output=True, text=True, check=True)
    figures = json.loads(output.stdout.strip().splitlines()[-1])
    return [
        Timing("import moto's Step Functions engine", figures["engine_import"], "fresh interpreter, once per process"),
        Timing("start the local AWS (patches, HTTP server, clock)", figures["local_aws_start"], "no stacks deployed"),
    ]


def pass_only_machine(deployment: Deployment) -> str:
    states = {
        f"Step {n}": {"Type": "Pass", **({"Next": f"Step {n + 1}"} if n < PASS_STATES else {"End": True})}
        for n in range(1, PASS_STATES + 1)
    }
    iam = deployment.client("iam")
    # Pass states call nothing: a role Step Functions may assume is all the machine needs.
    role = iam.create_role(RoleName="bench-pass-only", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service": "states.amazonaws.com"}}]}))["Role"]["Arn"]
    return deployment.client("stepfunctions").create_state_machine(
        name="bench-pass-only", definition=json.dumps({"StartAt": "Step 1", "States": states}), roleArn=role
    )["stateMachineArn"]


def throughput(deployment: Deployment) -> list[Timing]:
    """Executions per second of a machine of Pass states, one at a time and many at once."""
    arn = pass_only_machine(deployment)
    sfn = deployment.client("stepfunctions")
    observe(deployment.aws, arn, {})  # warm-up: first parse of the definition
    started = time.monotonic()
    for _ in range(SEQUENTIAL_EXECUTIONS):
        observe(deployment.aws, arn, {"n": 1})
    sequential = time.monotonic() - started

    started = time.monotonic()
    arns = [sfn.start_execution(stateMachineArn=arn, input="{}")["executionArn"] for _ in range(CONCURRENT_EXECUTIONS)]
    while any(sfn.describe_execution(executionArn=a)["status"] == "RUNNING" for a in arns):
        time.sleep(0.05)
    concurrent = time.monotonic() - started
    return [
        Timing(f"executions per second, one at a time ({PASS_STATES} Pass states each)", SEQUENTIAL_EXECUTIONS / sequential,
               f"{SEQUENTIAL_EXECUTIONS} executions, started and awaited in turn"),
        Timing(f"executions per second, {CONCURRENT_EXECUTIONS} started at once", CONCURRENT_EXECUTIONS / concurrent,
               "started back to back, then awaited"),
    ]


def demo_scenarios(deployment: Deployment) -> list[Timing]:
    """Wall time of each `make demo` scenario, run as the demo runs it (after the deploy)."""
    table = deployment.output("AlertNotificationStack", "AlertTableName")
    before = _alert_ids(deployment, table)
    timings = []
    for scenario in demo.SCENARIOS:
        started = time.monotonic()
        scenario(deployment, io.StringIO())
        name = scenario.__name__.removesuffix("_scenario").replace("_", " ")
        timings.append(Timing(f"`make demo` scenario: {name}", time.monotonic() - started))
    # The demo's alerts stay active (an alert notifies until it is acknowledged); a later section
    # (the dispatch at scale) must find only its own.
    for alert_id in _alert_ids(deployment, table) - before:
        deployment.client("dynamodb").delete_item(TableName=table, Key={"alert_id": {"S": alert_id}})
    return timings


def _alert_ids(deployment: Deployment, table: str) -> set[str]:
    pages = deployment.client("dynamodb").get_paginator("scan").paginate(TableName=table, ProjectionExpression="alert_id")
    return {item["alert_id"]["S"] for page in pages for item in page["Items"]}

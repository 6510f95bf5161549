"""Scheduled dispatch at scale: one dispatcher invocation over 1,000 active alerts, 200 of them running.

The 200 are what the previous hour's dispatch started and is still running; the measured dispatch
must start the other 800 and leave those alone. API calls are counted where the emulator receives
them (``LocalAws.api_calls``), not in the handler.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

from emulator.faults import Fault
from emulator.server import ACCOUNT_ID, REGION, LocalAws
from emulator.session import Deployment

STACK = "AlertNotificationStack"
ACTIVE_ALERTS = 1000
ALREADY_RUNNING = 200
SCHEDULE_PERIOD_SECONDS = 3600  # the alert schedule's rate
ALERT_PREFIX = "dispatch-bench-"
BATCH_WRITE_MAX = 25  # items per BatchWriteItem request
# The calls the dispatcher makes, in the order it makes them; results.md shows these columns.
DISPATCH_OPERATIONS = ("Scan", "ListExecutions", "DescribeExecution", "StartExecution")


def dispatch_at_scale(deployment: Deployment) -> dict[str, Any]:
    aws = deployment.aws
    table = deployment.output(STACK, "AlertTableName")
    dispatcher = deployment.stack_resource(STACK, "AWS::Lambda::Function", "DispatchAlerts")
    fetch_config = deployment.stack_resource(STACK, "AWS::Lambda::Function", "FetchAlertConfig")
    timeout = deployment.client("lambda").get_function_configuration(FunctionName=dispatcher)["Timeout"]
    alert_ids = [f"{ALERT_PREFIX}{n:04d}" for n in range(ACTIVE_ALERTS)]
    with _held_at_first_task(aws, fetch_config) as held:
        slot = aws.clock.now() // SCHEDULE_PERIOD_SECONDS * SCHEDULE_PERIOD_SECONDS
        try:
            _write(deployment, table, [{"PutRequest": {"Item": _alert_item(a)}} for a in alert_ids[:ALREADY_RUNNING]])
            _invoke(deployment, dispatcher, slot - SCHEDULE_PERIOD_SECONDS)
            _write(deployment, table, [{"PutRequest": {"Item": _alert_item(a)}} for a in alert_ids[ALREADY_RUNNING:]])
            running_before = _running(deployment)
            if running_before != ALREADY_RUNNING:
                raise RuntimeError(f"{running_before} alert executions running before the dispatch, not {ALREADY_RUNNING}")
            with aws.api_calls.counting() as calls:
                started, cpu = time.monotonic(), time.process_time()
                result = _invoke(deployment, dispatcher, slot)
                wall, cpu = time.monotonic() - started, time.process_time() - cpu
            load = os.getloadavg()[0]
            _wait_until(lambda: held.hits >= ACTIVE_ALERTS, f"{ACTIVE_ALERTS} executions at their first task")
            running_after = _running(deployment)
        finally:
            _write(deployment, table, [{"DeleteRequest": {"Key": {"alert_id": {"S": a}}}} for a in alert_ids])
    return {
        "active_alerts": ACTIVE_ALERTS,
        "running_before": running_before,
        "started": len(result["started"]),
        "already_running": len(result["already_running"]),
        "already_started": len(result["already_started"]),
        "running_after": running_after,
        "wall_seconds": round(wall, 1),
        "timeout_seconds": timeout,
        "emulator_cpu_seconds": round(cpu, 1),
        "load_average": round(load, 1),
        "api_calls": dict(sorted(calls.items())),
    }


@contextlib.contextmanager
def _held_at_first_task(aws: LocalAws, fetch_config: str) -> Iterator[Fault]:
    """The bench's alert executions stay RUNNING at their first task, then are stopped.

    On AWS the executions a dispatch starts run elsewhere; here 1,000 of them would run their
    rounds on the cores the dispatcher is measured on. Instead each one's Fetch Alert Config invoke
    is answered 429 (one request, counted in the fault's hits), and its retry back-off waits on the
    paused clock. (An execution is stopped only once held: moto cannot stop one still starting.)
    """
    with aws.faults.lambda_throttled(fetch_config, times=None, matching=ALERT_PREFIX) as fault:
        aws.clock.pause()
        try:
            yield fault
        finally:
            aws.abort_running_executions()
            aws.clock.resume()


def _alert_item(alert_id: str) -> dict[str, Any]:
    """An alert as an operator writes it (three users, three rounds an hour apart)."""
    return {
        "alert_id": {"S": alert_id},
        "status": {"S": "active"},
        "user_accounts": {"L": [{"S": f"user{n}@example.com"} for n in range(1, 4)]},
        "notification_count": {"N": "3"},
        "interval_seconds": {"N": "3600"},
        "message": {"S": f"Disk above 90% on {alert_id}"},
    }


def _write(deployment: Deployment, table: str, requests: list[dict]) -> None:
    dynamodb = deployment.client("dynamodb")
    for start in range(0, len(requests), BATCH_WRITE_MAX):
        pending = {table: requests[start:start + BATCH_WRITE_MAX]}
        while pending:
            pending = dynamodb.batch_write_item(RequestItems=pending)["UnprocessedItems"]


def _invoke(deployment: Deployment, dispatcher: str, slot: float) -> dict[str, list[str]]:
    """Invoke the dispatcher with the event an EventBridge schedule sends at ``slot``; its answer."""
    event = {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": ACCOUNT_ID,
        "time": datetime.fromtimestamp(slot, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": [],
        "detail": {},
    }
    response = deployment.client("lambda").invoke(FunctionName=dispatcher, Payload=json.dumps(event))
    answer = json.loads(response["Payload"].read())
    if "FunctionError" in response:
        raise RuntimeError(f"the dispatcher failed: {answer}")
    return answer


def _wait_until(condition: Callable[[], bool], what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _running(deployment: Deployment) -> int:
    """Running executions for the bench's alerts (the dispatcher's names start with the alert id)."""
    pages = deployment.client("stepfunctions").get_paginator("list_executions").paginate(
        stateMachineArn=deployment.machine_arn("alert"), statusFilter="RUNNING"
    )
    names = [execution["name"] for page in pages for execution in page["executions"]]
    others = [name for name in names if not name.startswith(ALERT_PREFIX)]
    if others:
        print(f"Also running on the alert machine, not the bench's: {', '.join(others)}", flush=True)
    return len(names) - len(others)

"""Scheduled dispatcher: starts one alert-notification execution per active alert, never a second one.

The running check here saves starts; it does not make them safe: ListExecutions is eventually
consistent, so an execution started seconds ago may be missed. The machine's own one-escalation
claim on the alert item is what ends a second execution at once (``already_running``).

API calls: a Scan page per 1 MB of the alert table (DynamoDB reads that much, then filters), a
DescribeAlarms per 100 alarms the active alerts name (an alert whose alarm is OK is not started),
a ListExecutions page per 1,000 running executions, a DescribeExecution only for a running execution
started by hand (the dispatcher's own names say which alert they are for), and a StartExecution per
alert to start (more only when one is throttled and retried).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

import boto3
from alert_dispatcher_logic import (
    DispatchFailed,
    alarm_name_of,
    alarm_ok_alert_ids,
    alert_id_of,
    batches,
    execution_input,
    failure_message,
    plan_dispatch,
    running_alert_ids,
    scheduled_time,
    start_delays,
)
from aws_lambda_powertools.utilities.typing import LambdaContext
from boto3.dynamodb.conditions import Attr
from botocore.config import Config
from botocore.exceptions import ClientError

from patterns_common.alert_executions import execution_name
from patterns_common.observability import logger, tracer

STATE_MACHINE_ARN = os.environ["STATE_MACHINE_ARN"]
# StartExecution is throttled per account (a token bucket); standard mode retries ThrottlingException
# with jittered exponential back-off (at most 1, 2, 4, 8, 16 s), so a burst of starts slows down
# instead of failing. Six calls in all keep one start's back-off under 31 s, well inside the
# function's timeout, so a start throttled throughout is reported as DispatchFailed, not a timeout.
RETRIES = Config(retries={"mode": "standard", "total_max_attempts": 6})
# Starts run a few at a time: a thousand alerts take seconds, well inside StartExecution's bucket.
PARALLEL_STARTS = 8
table = boto3.resource("dynamodb").Table(os.environ["ALERT_TABLE_NAME"])
stepfunctions = boto3.client("stepfunctions", config=RETRIES)
cloudwatch = boto3.client("cloudwatch", config=RETRIES)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, list[str]]:
    scheduled_at = scheduled_time(event)
    alarm_names = dict(active_alerts())
    active = sorted(alarm_names)
    linked = {alert_id: alarm for alert_id, alarm in alarm_names.items() if alarm is not None}
    alarm_ok = alarm_ok_alert_ids(linked, alarm_states(linked.values()))
    running, started_by_hand = running_alert_ids(active, running_executions())
    running |= {alert_id for arn in started_by_hand if (alert_id := alert_id_of(described_input(arn)))}
    plan = plan_dispatch(active, running, alarm_ok)
    with ThreadPoolExecutor(PARALLEL_STARTS) as pool:
        delays = start_delays(len(plan.to_start))
        outcomes = dict(zip(plan.to_start, pool.map(lambda a, d: start(a, scheduled_at, d), plan.to_start, delays)))
    result = {
        "started": [a for a, outcome in outcomes.items() if outcome == "started"],
        "already_running": plan.already_running,
        "already_started": [a for a, outcome in outcomes.items() if outcome == "already_started"],
        "alarm_ok": plan.alarm_ok,
    }
    failed = {a: outcome for a, outcome in outcomes.items() if outcome not in ("started", "already_started")}
    logger.info("Dispatched", extra={**result, "failed": failed})
    if failed:
        # Every other alert was started; failing the invocation sends it to Lambda's retries, then to
        # the on-failure destination with this message. A retry starts nothing twice (same names).
        raise DispatchFailed(failure_message(failed, len(plan.to_start)))
    return result


def start(alert_id: str, scheduled_at: datetime, delay_seconds: int) -> str:
    """"started", "already_started" (the slot's execution exists and ended), or the error's code."""
    try:
        stepfunctions.start_execution(
            stateMachineArn=STATE_MACHINE_ARN,
            name=execution_name(alert_id, scheduled_at),
            input=json.dumps(execution_input(alert_id, delay_seconds)),
        )
    except stepfunctions.exceptions.ExecutionAlreadyExists:
        # This slot's execution already exists: the schedule event was delivered twice and it ran and
        # ended, or it runs with another start delay (fewer alerts were left to start this time). A
        # running one with the same name and input is not an error: StartExecution is idempotent.
        return "already_started"
    except ClientError as error:
        logger.exception("Alert not started", extra={"alert_id": alert_id})
        return error.response["Error"]["Code"]
    return "started"


def active_alerts() -> Iterator[tuple[str, str | None]]:
    """(alert id, its alarm name or None) of every alert whose status is active or absent (absent
    means active), page by page."""
    scan: dict[str, Any] = {
        "ProjectionExpression": "alert_id, alarm_name",
        "FilterExpression": Attr("status").not_exists() | Attr("status").eq("active"),
    }
    while True:
        page = table.scan(**scan)
        yield from ((item["alert_id"], alarm_name_of(item)) for item in page["Items"])
        if "LastEvaluatedKey" not in page:
            return
        scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def alarm_states(alarm_names: Iterable[str]) -> dict[str, str]:
    """Alarm name -> state (OK, ALARM, INSUFFICIENT_DATA) of the named alarms that exist, metric or
    composite. A failure fails the dispatch: paging an alert whose alarm may be OK is what it prevents."""
    states: dict[str, str] = {}
    for batch in batches(alarm_names):
        pages = cloudwatch.get_paginator("describe_alarms").paginate(
            AlarmNames=batch, AlarmTypes=["MetricAlarm", "CompositeAlarm"]
        )
        for page in pages:
            for alarm in page.get("MetricAlarms", []) + page.get("CompositeAlarms", []):
                states[alarm["AlarmName"]] = alarm["StateValue"]
    return states


def running_executions() -> dict[str, str]:
    """Name -> ARN of every running execution: one ListExecutions call per 1,000."""
    return {
        execution["name"]: execution["executionArn"]
        for page in stepfunctions.get_paginator("list_executions").paginate(
            stateMachineArn=STATE_MACHINE_ARN, statusFilter="RUNNING", PaginationConfig={"PageSize": 1000}
        )
        for execution in page["executions"]
    }


def described_input(execution_arn: str) -> str | None:
    described = stepfunctions.describe_execution(executionArn=execution_arn)
    return described.get("input") if described["status"] == "RUNNING" else None

"""Scheduled dispatcher: starts one alert-notification execution per active alert, never a second one."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext
from boto3.dynamodb.conditions import Attr
from logic import alert_id_of, execution_name, plan_dispatch, scheduled_time

from patterns_common.observability import logger, tracer

STATE_MACHINE_ARN = os.environ["STATE_MACHINE_ARN"]
table = boto3.resource("dynamodb").Table(os.environ["ALERT_TABLE_NAME"])
stepfunctions = boto3.client("stepfunctions")


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, list[str]]:
    scheduled_at = scheduled_time(event)
    plan = plan_dispatch(active_alert_ids(), running_alert_ids())
    started, already_started = [], []
    for alert_id in plan.to_start:
        try:
            stepfunctions.start_execution(
                stateMachineArn=STATE_MACHINE_ARN,
                name=execution_name(alert_id, scheduled_at),
                input=json.dumps({"alert_id": alert_id}),
            )
            started.append(alert_id)
        except stepfunctions.exceptions.ExecutionAlreadyExists:
            # This slot's execution already ran and ended: the schedule event was delivered twice.
            already_started.append(alert_id)
    result = {"started": started, "already_running": plan.already_running, "already_started": already_started}
    logger.info("Dispatched", extra=result)
    return result


def active_alert_ids() -> Iterator[str]:
    """Alert ids whose status is active or absent (absent means active), page by page."""
    scan: dict[str, Any] = {
        "ProjectionExpression": "alert_id",
        "FilterExpression": Attr("status").not_exists() | Attr("status").eq("active"),
    }
    while True:
        page = table.scan(**scan)
        yield from (item["alert_id"] for item in page["Items"])
        if "LastEvaluatedKey" not in page:
            return
        scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def running_alert_ids() -> set[str]:
    running = set()
    for page in stepfunctions.get_paginator("list_executions").paginate(
        stateMachineArn=STATE_MACHINE_ARN, statusFilter="RUNNING"
    ):
        for execution in page["executions"]:
            described = stepfunctions.describe_execution(executionArn=execution["executionArn"])
            if described["status"] == "RUNNING" and (alert_id := alert_id_of(described.get("input"))):
                running.add(alert_id)
    return running

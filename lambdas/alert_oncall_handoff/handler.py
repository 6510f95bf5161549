"""Handoff Notice: tells the incoming person in Slack that their shift starts, then arms the next notice.

Invoked by its own EventBridge Scheduler one-time schedule with ``{"handoff_at": <ISO instant>}``
(the notices of that instant are posted), and with ``{}`` to (re)arm it: by the declared-schedules
custom resource at deploy and by ``/oncall cover``. A post Slack refuses raises after the schedule is
re-armed, so Lambda's asynchronous retries post it again a minute or two late, never twice armed.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from typing import Any

import boto3
from alert_oncall_handoff_logic import next_handoff, notices
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.observability import logger
from patterns_common.oncall import InvalidSchedule, parse_schedule
from patterns_common.slack_post import post_followup

table = boto3.resource("dynamodb").Table(os.environ["ON_CALL_TABLE_NAME"])
scheduler = boto3.client("scheduler")
SCHEDULE_NAME = os.environ["AWS_LAMBDA_FUNCTION_NAME"]  # the one schedule is named as the function
# Slack's incoming webhooks take about one message per second: a 429 is waited out this often.
RATE_LIMITED_ATTEMPTS = 3
RATE_LIMITED_PAUSE_SECONDS = 1.0


class HandoffNoticeUndelivered(Exception):
    """Slack did not take a handoff notice; Lambda's asynchronous retry posts it again."""


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    schedules = _readable_schedules()
    now = datetime.fromtimestamp(time.time(), timezone.utc)
    handoff_at = datetime.fromisoformat(event["handoff_at"]) if event.get("handoff_at") else None
    due = notices(schedules, handoff_at) if handoff_at is not None else []
    arming = next_handoff(schedules, max(now, handoff_at or now))
    if arming is not None:
        _arm(arming, context.invoked_function_arn)
    failed = [notice.schedule_id for notice in due if _post(notice.text) is not None]
    logger.info("Handoff", extra={"handoff_at": event.get("handoff_at"), "notified": [n.member for n in due],
                                  "next": arming.expression if arming else None})
    if failed:
        raise HandoffNoticeUndelivered(f"Slack did not take the handoff notice of {', '.join(failed)}")
    return {"notified": [n.member for n in due], "next": arming.handoff_at.isoformat() if arming else None}


def _readable_schedules() -> list:
    items, kwargs = [], {}
    while True:
        page = table.scan(**kwargs)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            break
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
    readable = []
    for item in items:
        try:
            readable.append(parse_schedule(item))
        except InvalidSchedule as invalid:  # an alert paging it fails loudly; the notices go on for the rest
            logger.warning("Schedule unreadable", extra={"error": str(invalid)})
    return readable


def _arm(arming: Any, own_arn: str) -> None:
    settings = {
        "Name": SCHEDULE_NAME,
        "ScheduleExpression": arming.expression,
        "ScheduleExpressionTimezone": arming.time_zone,
        "FlexibleTimeWindow": {"Mode": "OFF"},
        "Target": {"Arn": own_arn, "RoleArn": os.environ["HANDOFF_SCHEDULER_ROLE_ARN"],
                   "Input": json.dumps({"handoff_at": arming.handoff_at.isoformat()})},
    }
    try:
        scheduler.update_schedule(**settings)
    except scheduler.exceptions.ResourceNotFoundException:
        scheduler.create_schedule(**settings)


def _post(text: str) -> str | None:
    webhook = parameters.get_secret(os.environ["SLACK_WEBHOOK_SECRET_NAME"], max_age=300)
    for _ in range(RATE_LIMITED_ATTEMPTS):
        problem = post_followup(webhook, text)
        if problem != "Slack answered 429":
            return problem
        time.sleep(RATE_LIMITED_PAUSE_SECONDS)
    return problem

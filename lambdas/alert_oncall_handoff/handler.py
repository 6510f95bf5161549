"""Handoff Notice: arms a one-time schedule per handoff, and posts each notice in Slack once, on Slack's pace.

Invoked with ``{}`` to (re)arm: hourly by its own recurring schedule, at deploy by the declared-schedules
custom resource and after ``/oncall cover``. It creates the one-time schedule of every handoff in the
next two days (alert_oncall_handoff_logic); one that exists already counts as armed (ConflictException).

Invoked by a one-time schedule with ``{"schedule_id", "handoff_at"}``: the notice of that schedule at
that instant. It takes a slot on the webhook's shared pace (slack_pace); a slot more than two seconds
off is left to a one-time schedule a second or two before it (``slot_at`` in its input), so no
invocation sleeps for Slack longer than that; the rest is slept out, and the notice posted in its slot. The
post is claimed on the posted record first (a conditional write), so a retry or a duplicate delivery
never posts it twice; a post Slack refuses gives the claim back and fails the invocation: Lambda's
asynchronous retries post it later, and after them the failure destination records it.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from typing import Any

import boto3
from alert_oncall_handoff_logic import Arming, claim, deferral, notice, posted, released, to_arm
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.observability import logger
from patterns_common.oncall import InvalidSchedule, parse_schedule
from patterns_common.one_time_schedules import Target, create_once
from patterns_common.slack_pace import SLEEP_AT_MOST_SECONDS, missed, reserve_slot_on
from patterns_common.slack_post import post_followup

table = boto3.resource("dynamodb").Table(os.environ["ON_CALL_TABLE_NAME"])
# Slack's pace item and the posted records: the notifier's short-lived table (TTL "expiration").
records = boto3.resource("dynamodb").Table(os.environ["PACE_TABLE_NAME"])
scheduler = boto3.client("scheduler")
SECRET_MAX_AGE_SECONDS = 300  # a rotated webhook URL is picked up within five minutes


class HandoffNoticeUndelivered(Exception):
    """Slack did not take a handoff notice; Lambda's asynchronous retry posts it again."""


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("schedule_id"):
        return _post_notice(event, context.invoked_function_arn)
    now = datetime.fromtimestamp(time.time(), timezone.utc)
    armings = to_arm(_readable_schedules(), now)
    created = [arming.name for arming in armings if _arm(arming, context.invoked_function_arn)]
    logger.info("Handoffs armed", extra={"armed": len(armings), "new": created})
    return {"armed": len(armings), "created": created}


def _post_notice(event: dict[str, Any], own_arn: str) -> dict[str, Any]:
    schedule_id, handoff_at = event["schedule_id"], datetime.fromisoformat(event["handoff_at"])
    found = _notice(schedule_id, handoff_at)
    if found is None:
        return {"posted": False, "reason": "no handoff to anyone then"}
    webhook = parameters.get_secret(os.environ["SLACK_WEBHOOK_SECRET_NAME"], max_age=SECRET_MAX_AGE_SECONDS)
    now = time.time()
    slot_at = event.get("slot_at")
    # A deferred notice's slot was reserved before: the notice goes in it, unless its schedule fired
    # more than LATE_SECONDS after it (a late post lands on later posts' moments).
    if slot_at is None or missed(slot_at, now):
        slot_at = reserve_slot_on(records, webhook, now)
    if slot_at - now > SLEEP_AT_MOST_SECONDS:
        later = deferral(schedule_id, handoff_at, slot_at)
        _arm(later, own_arn)
        logger.info("Notice waits for Slack's pace", extra={"schedule_id": schedule_id, "slot_at": slot_at})
        return {"posted": False, "deferred_to": later.expression}
    conditional_failure = records.meta.client.exceptions.ConditionalCheckFailedException
    try:
        records.put_item(**claim(schedule_id, handoff_at, now))
    except conditional_failure:
        logger.info("Notice posted already", extra={"schedule_id": schedule_id, "handoff_at": event["handoff_at"]})
        return {"posted": False, "reason": "posted already"}
    # Asleep for at most two seconds (the deferral woke it 1 to 2 s before its slot): posted in the slot.
    time.sleep(max(0.0, slot_at - time.time()))
    problem = post_followup(webhook, found.text)
    if problem is not None:
        records.delete_item(**released(schedule_id, handoff_at))
        raise HandoffNoticeUndelivered(f"Slack did not take the handoff notice of {schedule_id}: {problem}")
    records.update_item(**posted(schedule_id, handoff_at))
    # Not who: logs hold no one's account (the channel shows who was told).
    logger.info("Notice posted", extra={"schedule_id": schedule_id, "handoff_at": event["handoff_at"]})
    return {"posted": True}


def _notice(schedule_id: str, handoff_at: datetime) -> Any:
    item = table.get_item(Key={"schedule_id": schedule_id}, ConsistentRead=True).get("Item")
    if item is None:
        return None  # the schedule was deleted after its handoff was armed
    try:
        return notice(parse_schedule(item), handoff_at)
    except InvalidSchedule as invalid:  # an alert paging it reports it; no notice can be worked out
        logger.warning("Schedule unreadable", extra={"error": str(invalid)})
        return None


def _readable_schedules() -> list:
    items, kwargs = [], {}
    while True:
        page = table.scan(ConsistentRead=True, **kwargs)
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


def _arm(arming: Arming, own_arn: str) -> bool:
    """Create the one-time schedule; False when it exists already (armed, possibly due: left as it is)."""
    target = Target(os.environ["HANDOFF_SCHEDULE_GROUP"], own_arn, os.environ["HANDOFF_SCHEDULER_ROLE_ARN"],
                    os.environ["HANDOFF_FAILURE_QUEUE_ARN"])
    return create_once(scheduler, target, arming.name, arming.expression, arming.input)

"""Raises and resolves alerts from their CloudWatch alarms (EventBridge "CloudWatch Alarm State Change").

Per alert naming the alarm (looked up on the table's alarm_name index, never a scan): one
conditional UpdateItem, then on ALARM a StartExecution named after the state change, so a redelivered
event starts no second escalation; on OK a follow-up post to the channel.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3
from alert_alarms_logic import RAISE, AlarmChange, InvalidAlarmEvent, is_redelivery, read_alarm_change
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.typing import LambdaContext
from boto3.dynamodb.conditions import Key
from boto3.dynamodb.types import TypeDeserializer

from patterns_common.alert_executions import execution_name
from patterns_common.alert_status import (
    RESOLVED,
    alarm_resolver,
    followup_text,
    raise_update,
    resolve_by_alarm_update,
    timestamp,
)
from patterns_common.observability import logger, tracer
from patterns_common.slack_post import post_followup

ALARM_INDEX = os.environ["ALARM_INDEX_NAME"]
STATE_MACHINE_ARN = os.environ["STATE_MACHINE_ARN"]
table = boto3.resource("dynamodb").Table(os.environ["ALERT_TABLE_NAME"])
stepfunctions = boto3.client("stepfunctions")
_deserializer = TypeDeserializer()


class AlarmChangeNotApplied(Exception):
    """Some alerts naming the alarm could not be updated or started; EventBridge/Lambda retry the event."""


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        change = read_alarm_change(event)
    except InvalidAlarmEvent as error:
        logger.warning("Event ignored", extra={"reason": str(error), "event_id": event.get("id")})
        return {"ignored": str(error)}
    if change.effect is None:
        return ignored(change, f"the {change.state} state changes no alert")
    alert_ids = alerts_naming(change.alarm_name)
    if not alert_ids:
        return ignored(change, "no alert names this alarm")
    applied, failed = [], {}
    for alert_id in alert_ids:
        try:
            if (raise_alert if change.effect == RAISE else resolve_alert)(alert_id, change):
                applied.append(alert_id)
        except Exception as error:  # noqa: BLE001 - one alert's failure must not stop the others
            failed[alert_id] = type(error).__name__
    logger.info("Alarm change applied", extra={"alarm_name": change.alarm_name, "state": change.state,
                                               "applied": applied, "failed": failed})
    if failed:
        raise AlarmChangeNotApplied(f"{len(failed)} of {len(alert_ids)} alerts: {json.dumps(failed, sort_keys=True)}")
    return {"alarm_name": change.alarm_name, "state": change.state, "alerts": alert_ids, "applied": applied}


def ignored(change: AlarmChange, reason: str) -> dict[str, Any]:
    logger.info("Alarm change ignored", extra={"alarm_name": change.alarm_name, "state": change.state, "reason": reason})
    return {"alarm_name": change.alarm_name, "state": change.state, "alerts": [], "applied": []}


def alerts_naming(alarm_name: str) -> list[str]:
    found: list[str] = []
    query = {"IndexName": ALARM_INDEX, "KeyConditionExpression": Key("alarm_name").eq(alarm_name)}
    while True:
        page = table.query(**query)
        found.extend(item["alert_id"] for item in page["Items"])
        if "LastEvaluatedKey" not in page:
            return sorted(found)
        query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def raise_alert(alert_id: str, change: AlarmChange) -> bool:
    """Active again and escalating at once; True if this delivery raised it (or finished raising it)."""
    old = _conditional_update(raise_update(alert_id, state_at=change.state_timestamp, now=_now()))
    if old is not None and not is_redelivery(old, change):
        return False  # a later change of the alarm was applied already, or the alert is gone
    try:
        stepfunctions.start_execution(
            stateMachineArn=STATE_MACHINE_ARN,
            name=execution_name(alert_id, change.changed_at),
            input=json.dumps({"alert_id": alert_id}),
        )
    except stepfunctions.exceptions.ExecutionAlreadyExists:
        return old is None  # this change's execution ran already: the event came twice
    return True


def resolve_alert(alert_id: str, change: AlarmChange) -> bool:
    now = _now()
    update = resolve_by_alarm_update(alert_id, alarm_name=change.alarm_name, state_at=change.state_timestamp, now=now)
    if _conditional_update(update) is not None:
        return False
    webhook_secret_name = os.environ.get("SLACK_WEBHOOK_SECRET_NAME")
    if webhook_secret_name is None:  # a team's notifier delivers the notifications: no channel to follow up in
        return True
    text = followup_text(alert_id, RESOLVED, by=alarm_resolver(change.alarm_name), at=now)
    problem = post_followup(parameters.get_secret(webhook_secret_name, max_age=300), text)
    if problem is not None:
        logger.warning("Follow-up not posted", extra={"alert_id": alert_id, "problem": problem})
    return True


def _conditional_update(update: dict[str, Any]) -> dict[str, Any] | None:
    """None if the update was applied; else the item as it was ({} when there is none)."""
    try:
        table.update_item(**update, ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except table.meta.client.exceptions.ConditionalCheckFailedException as refused:
        old = refused.response.get("Item") or {}
        return {name: _deserializer.deserialize(value) for name, value in old.items()}
    return None


def _now() -> str:
    return timestamp(time.time())

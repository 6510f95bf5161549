"""Raises and resolves alerts from their CloudWatch alarms (EventBridge "CloudWatch Alarm State Change").

Per alert naming the alarm (looked up on the table's alarm_name index, never a scan): one
conditional UpdateItem, then on ALARM a StartExecution named after the state change, so a redelivered
event starts no second escalation; on OK a follow-up post to the channel.

A raise is a new occurrence: its UpdateItem also hands the alert's escalation claim to the execution
it is about to start (whose ARN the name decides), and the execution that escalated the earlier
occurrence is then stopped, so the new occurrence is escalated from its first level at once.
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
from botocore.exceptions import ClientError

from patterns_common.alert_executions import CLAIM_ATTRIBUTE, claim_expiry, execution_arn, execution_name
from patterns_common.alert_status import (
    RESOLVED,
    alarm_ok_update,
    alarm_resolver,
    followup_text,
    raise_update,
    resolve_by_alarm_update,
    timestamp,
)
from patterns_common.observability import logger, tracer
from patterns_common.slack_post import FOLLOWUP_TIMEOUT_SECONDS, post_followup_in_turn

ALARM_INDEX = os.environ["ALARM_INDEX_NAME"]
STATE_MACHINE_ARN = os.environ["STATE_MACHINE_ARN"]
table = boto3.resource("dynamodb").Table(os.environ["ALERT_TABLE_NAME"])
# Slack's pace item, on which a follow-up takes its turn: the notifier's short-lived table (absent with
# a team's notifier: no webhook, no follow-up).
pace_table = boto3.resource("dynamodb").Table(os.environ["PACE_TABLE_NAME"]) if "PACE_TABLE_NAME" in os.environ else None
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
    # A follow-up still to be posted after this moment would not be done before the function's end.
    latest = time.time() + context.get_remaining_time_in_millis() / 1000 - FOLLOWUP_TIMEOUT_SECONDS - 1
    for alert_id in alert_ids:
        try:
            done = raise_alert(alert_id, change) if change.effect == RAISE else resolve_alert(alert_id, change, latest=latest)
            if done:
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
    """A new occurrence, escalating at once; True if this delivery raised it (or finished raising it)."""
    name = execution_name(alert_id, change.changed_at)
    escalation = execution_arn(STATE_MACHINE_ARN, name)
    update = raise_update(alert_id, state_at=change.state_timestamp, now=_now(), execution_arn=escalation,
                          claim_expires_at=claim_expiry(time.time()), reopen=change.reopens)
    applied, old = _conditional_update(update)
    if not applied and not is_redelivery(old, change):
        # A later change of the alarm was applied already, the alert is gone, or its alarm is still
        # in the occurrence this change belongs to (ALARM, INSUFFICIENT_DATA, ALARM).
        return False
    try:
        stepfunctions.start_execution(stateMachineArn=STATE_MACHINE_ARN, name=name, input=json.dumps({"alert_id": alert_id}))
    except stepfunctions.exceptions.ExecutionAlreadyExists:
        return applied  # this change's execution ran already: the event came twice
    earlier = old.get(CLAIM_ATTRIBUTE) if applied else None
    if isinstance(earlier, str) and earlier != escalation:
        stop_earlier_escalation(alert_id, earlier, escalation)
    return True


def stop_earlier_escalation(alert_id: str, earlier: str, escalation: str) -> None:
    """Stops the execution of the earlier occurrence now rather than at its next status read (which
    would end it too: the claim is no longer its own)."""
    try:
        stepfunctions.stop_execution(
            executionArn=earlier,
            error="AlertRaisedAgain",
            cause=f"Alert {alert_id} was raised again; {escalation} escalates the new occurrence.",
        )
    except ClientError as error:  # it has ended already, or cannot be stopped now: its next read ends it
        logger.info("Earlier escalation not stopped", extra={"alert_id": alert_id, "execution": earlier,
                                                             "error": error.response["Error"]["Code"]})


def resolve_alert(alert_id: str, change: AlarmChange, *, latest: float) -> bool:
    now = _now()
    update = resolve_by_alarm_update(alert_id, alarm_name=change.alarm_name, state_at=change.state_timestamp, now=now)
    applied, old = _conditional_update(update)
    if not applied:
        if old.get("status") == RESOLVED:  # a person resolved it: only the end of the occurrence is recorded
            _conditional_update(alarm_ok_update(alert_id, state_at=change.state_timestamp))
        return False
    webhook_secret_name = os.environ.get("SLACK_WEBHOOK_SECRET_NAME")
    if webhook_secret_name is None:  # a team's notifier delivers the notifications: no channel to follow up in
        return True
    text = followup_text(alert_id, RESOLVED, by=alarm_resolver(change.alarm_name), at=now)
    problem = post_followup_in_turn(pace_table, parameters.get_secret(webhook_secret_name, max_age=300), text, latest=latest)
    if problem is not None:
        logger.warning("Follow-up not posted", extra={"alert_id": alert_id, "problem": problem})
    return True


def _conditional_update(update: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """Whether the update was applied, and the item as it was before ({} when there was none)."""
    try:
        old = table.update_item(**update, ReturnValues="ALL_OLD", ReturnValuesOnConditionCheckFailure="ALL_OLD")
        return True, old.get("Attributes") or {}
    except table.meta.client.exceptions.ConditionalCheckFailedException as refused:
        old = refused.response.get("Item") or {}
        return False, {name: _deserializer.deserialize(value) for name, value in old.items()}


def _now() -> str:
    return timestamp(time.time())

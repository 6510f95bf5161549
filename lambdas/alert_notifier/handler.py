"""Notify User: posts one alert notification to Slack, at most once per (execution, round, user).

The event is {execution_id, alert_id, message, round, user, links, occurrence, actions_url, post_at,
attempt}: the alert, the user to notify and their signed action links, the occurrence they are for
and the action endpoint's URL, when the round's own pace would let this post go, and
which attempt of the machine's this is; and ``slot_at``, the slot an earlier call reserved, when the
machine waited for it.

A round's own pace (``post_at``) cannot see the other executions posting to the webhook, so this
notifier keeps the webhook's pace shared by all of them instead (slack_pace): a call without a slot
takes one. A slot at most two seconds off is slept out and posted in; a farther one ends the call
with SlackChannelBusy, and the machine waits (a Wait state costs nothing while it waits; this
function sleeps two seconds at most, as it holds one of the account's concurrent executions, ten in
a new account) until a second or two before it, and calls again with the slot. A call more than
LATE_SECONDS after its slot (throttled, or the retry of a post Slack refused) takes a new slot
instead: a late post would land on the moments of the posts slotted after it. It waits again only
while its share of the execution's history allows (slack_pace.may_wait; SlackSlotMissed after it).

Once posted, the person's own rules start (contact_arming): the item of the people table naming
the user, if any, says which texts, calls and e-mails follow, each armed as its own Contact
invocation (at once, or a one-time schedule), so none costs the machine a state transition.

A retried attempt (the state machine's Retry, or a Lambda retry after a timeout) finds the first
attempt's idempotency record and returns its result instead of posting again. A first attempt that
stopped waiting for Slack's answer (its request's timeout, or the function's) recorded nothing, so
its retry posts again: Slack may have taken the post, but no sender can tell that from a lost one.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
)
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import BotoCoreError, ClientError
from contact_arming import ContactArming, contact_armings, not_armed_text
from slack_webhook import (
    Notification,
    SlackRejectedError,
    SlackTransientError,
    gives_up,
    post_message,
)

from patterns_common.observability import logger, metrics, tracer
from patterns_common.one_time_schedules import Target, create_once
from patterns_common.people import InvalidPerson, parse_person
from patterns_common.slack_pace import (
    SLEEP_AT_MOST_SECONDS,
    SlackChannelBusy,
    SlackSlotMissed,
    may_wait,
    missed,
    reserve_slot_on,
    spent_through_wait,
)

SECRET_MAX_AGE_SECONDS = 300  # a rotated webhook URL is picked up within five minutes

persistence = DynamoDBPersistenceLayer(table_name=os.environ["IDEMPOTENCY_TABLE_NAME"])
# The same short-lived table holds the webhook's pace item (its key cannot be an idempotency record's).
pace_table = boto3.resource("dynamodb").Table(os.environ["IDEMPOTENCY_TABLE_NAME"])
people_table = boto3.resource("dynamodb").Table(os.environ["PEOPLE_TABLE_NAME"])
scheduler = boto3.client("scheduler")
lambda_client = boto3.client("lambda")
idempotency = IdempotencyConfig(
    event_key_jmespath="[execution_id, round, user]",
    raise_on_no_idempotency_key=True,
    # Retries of one notification happen within minutes; the key also names the execution.
    expires_after_seconds=3600,
)


def count_for_alert(metric: str, alert_id: str) -> None:
    # The alert id is a property of the metric's log line, not a dimension: a dimension value is a
    # separately billed custom metric, and alert ids are unbounded. Logs Insights still finds it.
    metrics.add_metadata(key="alert_id", value=alert_id)
    metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)


# Metrics outermost: they are flushed however the handler ends. The idempotent body runs once per
# (execution, round, user), so a replayed notification is not counted twice.
@metrics.log_metrics
@logger.inject_lambda_context
# The response names the person notified: never record it in a trace. Errors carry Slack's answer.
@tracer.capture_lambda_handler(capture_response=False)
@idempotent(config=idempotency, persistence_store=persistence)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    notification = Notification.from_event(event)
    webhook_url = parameters.get_secret(os.environ["SLACK_WEBHOOK_SECRET_NAME"], max_age=SECRET_MAX_AGE_SECONDS)
    attempt = event.get("attempt", 1)
    now = time.time()
    if "slot_at" not in event:
        # A call without a slot takes one, whichever attempt: the machine's first attempts may have
        # been throttled, never running, and the retry of a post Slack refused (a 429, a 5xx) or never
        # answered (a timeout) is a new post, which takes a new slot like any other.
        slot_at = reserve_slot(webhook_url, now)
    else:
        slot_at = event["slot_at"]
        # A post later than LATE_SECONDS in its slot would land on later posts' moments: it takes a
        # new slot (a call throttled after its Wait, or retried after Slack refused it).
        if missed(slot_at, now):
            slot_at = reserve_slot(webhook_url, now)
    if slot_at - now > SLEEP_AT_MOST_SECONDS:
        spent = spent_through_wait(event.get("spent", 0), attempt)
        if not may_wait(spent):
            count_for_alert("NotificationsFailed", notification.alert_id)
            raise SlackSlotMissed("missed its slot on Slack's pace more often than the execution's history allows")
        raise SlackChannelBusy(slot_at, spent)
    # Asleep for at most two seconds (the machine's Wait woke this call 1 to 2 s before its slot), so
    # that the post goes in its slot, not up to a second after it.
    time.sleep(max(0.0, slot_at - now))
    try:
        status = post_message(webhook_url, notification.payload())
    except (SlackTransientError, SlackRejectedError) as error:
        if gives_up(error, attempt):
            count_for_alert("NotificationsFailed", notification.alert_id)
        raise
    count_for_alert("NotificationsSent", notification.alert_id)
    # Not who: logs hold no one's account (the item records who acted, the channel who was notified).
    logger.info("Notified", extra={"alert_id": notification.alert_id, "round": notification.round})
    arm_contacts(event, time.time())
    return {"user": notification.user, "round": notification.round, "status": status}


def reserve_slot(webhook_url: str, now: float) -> float:
    """This post's moment on the webhook's shared pace (slack_pace.reserve_slot_on)."""
    return reserve_slot_on(pace_table, webhook_url, now)


def arm_contacts(event: dict[str, Any], notified_at: float) -> None:
    """Start the person's rules (contact_arming). Never raises: the post is made, and a retry of this
    idempotent body would post it again. What could not be started is counted and told to the channel."""
    try:
        item = people_table.get_item(Key={"member": event["user"]}, ConsistentRead=True).get("Item")
        if item is None:
            return  # no rules: today's post, at today's cost
        armings = contact_armings(parse_person(item), event, notified_at)
    except (InvalidPerson, ClientError, BotoCoreError) as error:
        logger.exception("Rules not read", extra={"alert_id": event["alert_id"], "error": type(error).__name__})
        count_for_alert("ContactsNotArmed", event["alert_id"])
        _tell_channel(not_armed_text(event["user"], event["alert_id"], [], _why(error)))
        return
    failed, why = [], ""
    for arming in armings:
        try:
            arm(arming)
        except (ClientError, BotoCoreError) as error:
            logger.exception("Contact not armed", extra={"alert_id": event["alert_id"], "schedule": arming.name,
                                                         "error": type(error).__name__})
            count_for_alert("ContactsNotArmed", event["alert_id"])
            failed.append(arming)
            why = _why(error)
    if failed:
        _tell_channel(not_armed_text(event["user"], event["alert_id"], failed, why))


def _why(error: Exception) -> str:
    if isinstance(error, InvalidPerson):
        return f"their people item is unreadable: {error.field} {error.problem}"
    code = error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else None
    return f"AWS answered {code or type(error).__name__}"


def _tell_channel(text: str) -> None:
    """As Contact's notes: through the follow-up function, the path a click's follow-up takes."""
    try:
        lambda_client.invoke(FunctionName=os.environ["FOLLOW_UP_FUNCTION_NAME"], InvocationType="Event",
                             Payload=json.dumps({"text": text}).encode())
    except (ClientError, BotoCoreError):
        logger.exception("Channel not told", extra={"text": "contacts not armed"})


def arm(arming: ContactArming) -> None:
    """Contact at once (asynchronously), or a one-time schedule; one that exists already counts as armed
    (armed by an earlier attempt of this notification)."""
    if arming.at is None:
        lambda_client.invoke(FunctionName=os.environ["CONTACT_FUNCTION_ARN"], InvocationType="Event",
                             Payload=json.dumps(arming.payload).encode())
        return
    target = Target(os.environ["CONTACT_SCHEDULE_GROUP"], os.environ["CONTACT_FUNCTION_ARN"],
                    os.environ["CONTACT_SCHEDULER_ROLE_ARN"], os.environ["CONTACT_FAILURE_QUEUE_ARN"])
    create_once(scheduler, target, arming.name, arming.expression, arming.payload)

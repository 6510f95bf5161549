"""Slack's webhook pace shared by every notification to one webhook, whichever execution sends it.

An incoming webhook takes about one message a second, with short bursts (https://api.slack.com/docs/rate-limits).
Each notification reserves a moment to post (its slot) on one DynamoDB item per webhook, which holds
the webhook's theoretical arrival time (GCRA, the generic cell rate algorithm): a slot is
``max(now, tat - BURST * INTERVAL)`` and every reservation moves ``tat`` on by one interval. A
reservation is one atomic UpdateItem (two when the webhook was idle), so 200 alerts raised in one
second get 200 different slots, one every INTERVAL_SECONDS after a burst, below Slack's pace.
Every poster to the webhook takes its turn here: Notify User and Handoff Notice. The rules here hold
no AWS client; the caller hands its DynamoDB table to ``reserve_slot_on``.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from typing import Any

# A little slower than Slack's "about one a second", and a smaller burst than Slack allows: the room
# left takes the posts that go without a slot (follow-ups, the retry of a post made in its slot) and
# posts that arrive together a little off their slots. A burst of three posts a round's first three
# users at once (its Map notifies three at a time): a notification that waits costs two more
# transitions, the Wait and the second call.
INTERVAL_SECONDS = 1.25
BURST = 3
# The pace item goes once its webhook has been idle this long (the table's TTL).
IDLE_EXPIRY_SECONDS = 3600


class SlackChannelBusy(Exception):
    """This notification's slot has not come: the machine waits for it (a Wait costs nothing while it
    waits; a function asleep holds one of the account's concurrent executions) and calls again with it.

    The message is JSON, {"slot_at": slot}, which the state machine's Catch reads: its Wait's
    ``Timestamp`` is the slot rounded up to the whole second, as Step Functions keeps no finer time
    (it truncates milliseconds), so the post goes at most a second and the call's start after its
    slot, never before: an early post spends the room below Slack's pace that the posts without a
    slot (follow-ups) need."""

    def __init__(self, slot_at: float) -> None:
        super().__init__(json.dumps({"slot_at": slot_at}))


def due(slot_at: float, now: float) -> bool:
    """Whether a post in ``slot_at`` goes now: never before its slot (to the millisecond the pace item
    keeps: a slot computed from its rounded ``tat`` can lie a fraction of one after ``now``)."""
    return slot_at - now < 0.001


def pace_key(webhook_url: str) -> dict[str, str]:
    """The pace item's key: one per webhook (its URL hashed: the URL is a credential)."""
    return {"id": "slack-pace#" + hashlib.sha256(webhook_url.encode()).hexdigest()[:32]}


def held_slot_key(notification_key: str) -> dict[str, str]:
    """The key of the item recording the slot one notification took (its idempotency key hashed), so
    that the retry of an attempt that took one posts in it instead of queueing again."""
    return {"id": "slack-slot#" + hashlib.sha256(notification_key.encode()).hexdigest()[:32]}


def held_slot_item(notification_key: str, slot_at: float) -> dict[str, Any]:
    """The PutItem ``Item`` recording the slot a notification took; it goes with the table's TTL."""
    return {**held_slot_key(notification_key), "slot_at": _number(slot_at), "expiration": int(slot_at) + IDLE_EXPIRY_SECONDS}


def busy_update(webhook_url: str, now: float) -> dict[str, Any]:
    """UpdateItem arguments while posts are queued (tat ahead of now): one more interval on the queue."""
    return {
        "Key": pace_key(webhook_url),
        "UpdateExpression": "SET tat = tat + :interval, expiration = :expiry",
        "ConditionExpression": "tat > :now",
        "ExpressionAttributeValues": {
            ":interval": _number(INTERVAL_SECONDS),
            ":now": _number(now),
            ":expiry": int(now) + IDLE_EXPIRY_SECONDS,
        },
        "ReturnValues": "UPDATED_NEW",
    }


def idle_update(webhook_url: str, now: float) -> dict[str, Any]:
    """UpdateItem arguments when nothing is queued: this post goes now, the next a full burst later at most."""
    return {
        "Key": pace_key(webhook_url),
        "UpdateExpression": "SET tat = :next, expiration = :expiry",
        "ConditionExpression": "attribute_not_exists(tat) OR tat <= :now",
        "ExpressionAttributeValues": {
            ":next": _number(now + INTERVAL_SECONDS),
            ":now": _number(now),
            ":expiry": int(now) + IDLE_EXPIRY_SECONDS,
        },
    }


def slot_after_busy_update(new_tat: float, now: float) -> float:
    """The moment a post may go, from the tat a busy_update returned (its own interval included)."""
    return max(now, new_tat - BURST * INTERVAL_SECONDS)


def _number(value: float) -> Decimal:
    # DynamoDB numbers go through boto3 as Decimal; milliseconds are precision enough.
    return Decimal(str(round(value, 3)))


def reserve_slot_on(table: Any, webhook_url: str, now: float) -> float:
    """A post's moment on the webhook's shared pace, reserved on ``table`` (a boto3 DynamoDB Table):
    one atomic UpdateItem, two if the webhook was idle."""
    conditional_failure = table.meta.client.exceptions.ConditionalCheckFailedException
    while True:  # each refusal means the other branch now holds; the race is lost at most a few times
        try:
            tat = table.update_item(**busy_update(webhook_url, now))["Attributes"]["tat"]
            return slot_after_busy_update(float(tat), now)
        except conditional_failure:
            pass
        try:
            table.update_item(**idle_update(webhook_url, now))
            return now
        except conditional_failure:
            pass

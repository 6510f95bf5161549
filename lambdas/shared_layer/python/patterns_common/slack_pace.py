"""Slack's webhook pace shared by every post to one webhook, whichever function or execution sends it.

An incoming webhook takes about one message a second, with short bursts (https://api.slack.com/docs/rate-limits).
Each post reserves a moment to go (its slot) on one DynamoDB item per webhook, which holds the
webhook's theoretical arrival time (GCRA, the generic cell rate algorithm): a slot is
``max(now, tat - BURST * INTERVAL)`` and every reservation moves ``tat`` on by one interval. A
reservation is one atomic UpdateItem (two when the webhook was idle), so 200 alerts raised in one
second get 200 different slots, one every INTERVAL_SECONDS after a burst.

Why Slack refuses none of them. The pace hands out at most ``BURST + x / INTERVAL_SECONDS`` slots in
any span of ``x`` seconds. A post reaches Slack no earlier than its slot and at most
``LATE_SECONDS + transit`` after it (a post that would go later takes a new slot instead), so the
posts reaching Slack in any span of ``w`` seconds were slotted within ``w + LATE_SECONDS + transit``:
at most ``3 + (w + 0.5 + transit) / 1.25``, within Slack's ``4 + w`` (a burst of four, then one a
second, the pace the emulator's stand-in plays) for every ``w`` while the request's way to Slack
takes at most 0.75 s. It holds only if every post takes a slot and goes in it: Notify User, Handoff
Notice and the follow-ups. Issue 38's 429 was a follow-up without a slot, landing on posts that went
up to a second after their slots (a Wait ending at the next whole second) right behind a burst.
The rules here hold no AWS client; the caller hands its DynamoDB table to ``reserve_slot_on``.
"""

from __future__ import annotations

import hashlib
import json
import math
from decimal import Decimal
from typing import Any

# A little slower than Slack's "about one a second", and a smaller burst than Slack allows: the room
# left takes the posts that arrive a little after their slots (see above). A burst of three posts a
# round's first three users at once (its Map notifies three at a time).
INTERVAL_SECONDS = 1.25
BURST = 3
# How late a post may still go in its slot; a call later than this (throttled, retried after Slack
# refused the post) takes a new slot. Less than the notifier's request timeout, so the retry of a
# post Slack may have taken (a timeout) never goes in its slot again.
LATE_SECONDS = 0.5
# A slot at most this far off is slept out by the caller, so that the post goes in it; a farther one
# is waited for outside the function (the machine's Wait, a one-time schedule), which wakes the
# caller 1 to 2 s before it (wake_at): Step Functions and EventBridge Scheduler keep whole seconds.
SLEEP_AT_MOST_SECONDS = 2.0
# The pace item goes once its webhook has been idle this long (the table's TTL).
IDLE_EXPIRY_SECONDS = 3600


class SlackChannelBusy(Exception):
    """This notification's slot is more than SLEEP_AT_MOST_SECONDS off: the machine waits for it (a
    Wait costs nothing while it waits; a function asleep holds one of the account's concurrent
    executions) and calls again with it.

    The message is JSON, {"slot_at": slot, "spent": events}, which the state machine's Catch merges
    into the next call's input: its Wait ends at ``wake_at(slot)``, and the call sleeps out the rest.
    ``spent`` counts the history events the notification's calls and Waits have taken (see may_wait)."""

    def __init__(self, slot_at: float, spent: int) -> None:
        super().__init__(json.dumps({"slot_at": slot_at, "spent": spent}))


class SlackSlotMissed(Exception):
    """The notification missed its slot once more than its share of the history allows: not posted."""


# Attempts of Notify User the machine's retriers allow in one entry of the state (1 + their
# MaxAttempts), which the history guard counts (alert_config_logic.NOTIFY_MAX_ATTEMPTS; a test pins
# the three together).
NOTIFY_USER_ATTEMPTS = 15
# History events of one entry of Notify User with every attempt (entered and exited, 3 per attempt),
# and of a Wait.
CALL_EVENTS_AT_MOST = 2 + 3 * NOTIFY_USER_ATTEMPTS
WAIT_EVENTS = 2


def spent_through_wait(spent: int, attempt: int) -> int:
    """The events a notification's calls and Waits will have taken once the Wait about to start ends:
    those before this entry of Notify User (``spent``), this entry's ``attempt`` attempts, the Wait."""
    return spent + 2 + 3 * attempt + WAIT_EVENTS


def may_wait(spent: int) -> bool:
    """Whether a notification may wait for a slot once more, ``spent`` counted through that Wait.

    The history guard (alert_config_logic.worst_case_history_events) counts each notification's
    calls as two entries of every attempt around one Wait. A notification that missed its slot and
    waits again (throttled after its Wait, or refused by Slack) stays within that while its entries
    and Waits so far leave a full entry's events: at most one entry's and one Wait's before the last."""
    return spent <= CALL_EVENTS_AT_MOST + WAIT_EVENTS


def wake_at(slot_at: float) -> int:
    """The whole second at which a caller waiting for ``slot_at`` outside the function is woken: 1 to
    2 s before it, so that the call, however long it takes to start, sleeps out the rest and posts
    in the slot (a Wait or a schedule at the next whole second would post up to a second late)."""
    return math.floor(slot_at) - 1


def missed(slot_at: float, now: float) -> bool:
    """Whether a post in ``slot_at`` is too late to go now: it takes a new slot instead (see LATE_SECONDS)."""
    return now - slot_at > LATE_SECONDS


def pace_key(webhook_url: str) -> dict[str, str]:
    """The pace item's key: one per webhook (its URL hashed: the URL is a credential)."""
    return {"id": "slack-pace#" + hashlib.sha256(webhook_url.encode()).hexdigest()[:32]}


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

"""Handoff notices: which one-time schedules to arm, what each notice says, and the record that it was posted.

Each handoff (an instant at which a schedule's person on call changes to someone) gets an EventBridge
Scheduler one-time schedule of its own, ``at(<UTC time>)`` in UTC, named from the schedule and the
instant, deleted by Scheduler after it fires (``ActionAfterCompletion: DELETE``). A re-arm, hourly
and after a deploy or a cover, creates the schedules of every handoff in the next ``ARM_AHEAD``; one
that exists already is left as it is, so a re-arm never moves a notice that is due. Handoffs fall on
whole minutes (every time in a schedule is ``HH:MM``), within Scheduler's minute precision.

Nothing here holds an AWS client: the handler makes the calls with the arguments built here.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from patterns_common.oncall import Schedule, local_text
from patterns_common.one_time_schedules import at_expression
from patterns_common.slack_pace import wake_at

# How far ahead handoffs are armed. The re-arm runs every hour (stacks/alert_notification/on_call.py), so two days is the margin for 47
# missed re-arms (a broken deploy, a throttled account) before a notice is lost, while a schedule
# changed later leaves at most two days of stale one-time schedules: each fires, finds no handoff
# at its instant in the changed schedule, and posts nothing.
ARM_AHEAD = timedelta(days=2)
# How long the record of a posted notice is kept (the table's TTL): well past Lambda's longest
# asynchronous retry (six hours) and any deferral for Slack's pace (minutes).
RECORD_KEPT = timedelta(days=2)
# A claim to post a notice lapses after the function's timeout: a later attempt may then post it.
CLAIM_SECONDS = 30
# EventBridge Scheduler names: 1 to 64 of [0-9a-zA-Z-_.] (API Reference, CreateSchedule, Name), the
# characters a schedule id is made of (patterns_common.oncall.SCHEDULE_ID): its start goes in as it is.
_SLUG = 16
_UNTIL_SHOWN = timedelta(days=28)
_BEFORE = timedelta(microseconds=1)
_RECORD_PREFIX = "handoff-notice#"


@dataclass(frozen=True)
class Notice:
    schedule_id: str
    member: str
    text: str


@dataclass(frozen=True)
class Arming:
    """A one-time schedule: ``name``, firing at ``expression`` in UTC, invoking Handoff Notice with ``input``."""

    name: str
    expression: str
    input: dict[str, Any]


def notice(schedule: Schedule, at: datetime) -> Notice | None:
    """The notice of ``schedule`` at the instant ``at``: None unless its person on call changes then to someone."""
    incoming = schedule.on_call(at)
    if incoming is None or incoming == schedule.on_call(at - _BEFORE):
        return None
    # The first shift from ``at`` is the incoming person's: its end, unless it lasts past what is shown.
    until = schedule.shifts(at, at + _UNTIL_SHOWN)[0].end
    ends = f" until {local_text(until, schedule.zone)}" if until < at + _UNTIL_SHOWN else ""
    return Notice(
        schedule.schedule_id,
        incoming,
        f"<@{incoming}> your on-call shift for *{schedule.schedule_id}* starts now, "
        f"{local_text(at, schedule.zone)}{ends}.",
    )


def handoffs(schedule: Schedule, after: datetime, until: datetime) -> list[datetime]:
    """The instants (UTC) after ``after`` and before ``until`` at which ``schedule`` hands off to someone."""
    return [shift.start.astimezone(timezone.utc) for shift in schedule.shifts(after, until)[1:] if shift.member is not None]


def to_arm(schedules: list[Schedule], now: datetime) -> list[Arming]:
    """The one-time schedule of every handoff of ``schedules`` after ``now`` and within ``ARM_AHEAD``."""
    return [
        Arming(schedule_name(schedule.schedule_id, at), at_expression(at),
               {"schedule_id": schedule.schedule_id, "handoff_at": at.isoformat()})
        for schedule in schedules
        for at in handoffs(schedule, now, now + ARM_AHEAD)
    ]


def deferral(schedule_id: str, handoff_at: datetime, slot_at: float) -> Arming:
    """The one-time schedule that posts a notice in its slot on Slack's pace, woken a second or two
    before it (slack_pace.wake_at: a schedule keeps whole seconds)."""
    slot = datetime.fromtimestamp(wake_at(slot_at), timezone.utc)
    return Arming(f"{schedule_name(schedule_id, handoff_at)}-p{slot:%H%M%S}", at_expression(slot),
                  {"schedule_id": schedule_id, "handoff_at": handoff_at.isoformat(), "slot_at": slot_at})


def schedule_name(schedule_id: str, at: datetime) -> str:
    """``handoff-<id, shortened>-<hash of the id>-<UTC minute>``: at most 50 characters, one per schedule and instant.

    The hash tells apart two ids that shorten alike; the id's start is there for a person reading a listing.
    """
    slug = schedule_id[:_SLUG]
    digest = hashlib.sha256(schedule_id.encode()).hexdigest()[:10]
    return f"handoff-{slug}-{digest}-{at.astimezone(timezone.utc):%Y%m%dT%H%MZ}"


def record_key(schedule_id: str, handoff_at: datetime) -> dict[str, str]:
    """The posted record's key: a prefix no Powertools idempotency record or Slack pace item has."""
    return {"id": f"{_RECORD_PREFIX}{schedule_id}#{handoff_at.astimezone(timezone.utc).isoformat()}"}


def claim(schedule_id: str, handoff_at: datetime, now: float) -> dict[str, Any]:
    """PutItem arguments claiming the post: refused while another attempt's claim holds or once it was posted."""
    return {
        "Item": {**record_key(schedule_id, handoff_at), "state": "posting", "claimed_until": int(now) + CLAIM_SECONDS,
                 "expiration": int(handoff_at.timestamp() + RECORD_KEPT.total_seconds())},
        "ConditionExpression": "attribute_not_exists(id) OR (#state = :posting AND claimed_until < :now)",
        "ExpressionAttributeNames": {"#state": "state"},
        "ExpressionAttributeValues": {":posting": "posting", ":now": int(now)},
    }


def posted(schedule_id: str, handoff_at: datetime) -> dict[str, Any]:
    """UpdateItem arguments recording that the notice was posted: no later attempt posts it."""
    return {
        "Key": record_key(schedule_id, handoff_at),
        "UpdateExpression": "SET #state = :posted REMOVE claimed_until",
        "ExpressionAttributeNames": {"#state": "state"},
        "ExpressionAttributeValues": {":posted": "posted"},
    }


def released(schedule_id: str, handoff_at: datetime) -> dict[str, Any]:
    """DeleteItem arguments giving a claim back after Slack refused the post: the retry may post it."""
    return {
        "Key": record_key(schedule_id, handoff_at),
        "ConditionExpression": "#state = :posting",
        "ExpressionAttributeNames": {"#state": "state"},
        "ExpressionAttributeValues": {":posting": "posting"},
    }

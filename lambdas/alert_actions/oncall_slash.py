"""Answers the /oncall slash command (already verified as Slack's): reads the on-call table, writes a cover.

Slack wants the answer within 3 s: one Scan of the table (a schedule per item, a few at most) and,
for a cover, one conditional UpdateItem.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from functools import cache
from typing import Any

import boto3
from oncall_command import CommandRefused, cover, covered_text, listing, parse_cover, slack_reply

from patterns_common.observability import logger
from patterns_common.oncall import InvalidSchedule, parse_schedule


@cache
def on_call_table() -> Any:
    """Made on the first /oncall, not at import: the endpoint's other requests never need it."""
    return boto3.resource("dynamodb").Table(os.environ["ON_CALL_TABLE_NAME"])


def answer(fields: dict[str, str], now: float) -> dict[str, Any]:
    at = datetime.fromtimestamp(now, timezone.utc)
    text = fields.get("text", "").strip()
    try:
        if not text or text == "list":
            return slack_reply(listing(_readable_schedules(), at))
        schedule_id, start, end = parse_cover(text)
        item = on_call_table().get_item(Key={"schedule_id": schedule_id}, ConsistentRead=True).get("Item")
        if item is None:
            raise CommandRefused(f"There is no schedule {schedule_id!r}.")
        try:
            done = cover(item, fields.get("user_id", ""), at, start, end)
        except InvalidSchedule as invalid:
            raise CommandRefused(f"Schedule {schedule_id!r} cannot be read: {invalid}.") from invalid
        _write(done)
        _rearm_handoff_notice()
        logger.info("Covered", extra={"schedule_id": schedule_id, "override": done.override})
        return slack_reply(covered_text(done, item["time_zone"]))
    except CommandRefused as refused:
        return slack_reply(str(refused))


def _rearm_handoff_notice() -> None:
    """A cover can move the next handoff: Handoff Notice (asynchronously, within Slack's 3 s) arms it again."""
    name = os.environ.get("HANDOFF_FUNCTION_NAME")  # absent without a Slack webhook: no notices to arm
    if name:
        boto3.client("lambda").invoke(FunctionName=name, InvocationType="Event", Payload=b"{}")


def _readable_schedules() -> list:
    schedules = []
    for item in _scan():
        try:
            schedules.append(parse_schedule(item))
        except InvalidSchedule as invalid:
            logger.warning("Unreadable schedule", extra={"problem": str(invalid)})
    return schedules


def _scan() -> list[dict[str, Any]]:
    items, page = [], {}
    while True:
        found = on_call_table().scan(ConsistentRead=True, **page)
        items.extend(found["Items"])
        if "LastEvaluatedKey" not in found:
            return items
        page = {"ExclusiveStartKey": found["LastEvaluatedKey"]}


def _write(done) -> None:
    try:
        on_call_table().update_item(
            Key={"schedule_id": done.schedule_id},
            UpdateExpression="SET overrides = list_append(if_not_exists(overrides, :none), :new)",
            # Only over the overrides the check saw: a cover written meanwhile is checked again by its author.
            ConditionExpression="attribute_exists(schedule_id) AND "
            + ("attribute_not_exists(overrides)" if done.overrides_before == 0 else "size(overrides) = :count"),
            ExpressionAttributeValues={
                ":none": [],
                ":new": [done.override],
                **({":count": done.overrides_before} if done.overrides_before else {}),
            },
        )
    except on_call_table().meta.client.exceptions.ConditionalCheckFailedException:
        raise CommandRefused("The schedule changed while you typed; run the command again.") from None

"""Answers the /oncall slash command (already verified as Slack's): reads the on-call table, writes a cover;
a person's own contact methods and rules (/oncall contact|rules|rule) are people_slash's.

Slack wants the answer within 3 s: one Scan of the table (a schedule per item, a few at most) or, for
a cover or an uncover, one GetItem and one conditional UpdateItem; what the channel is told goes to the
follow-up function, handed off asynchronously as a click's follow-up is.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timezone
from functools import cache
from typing import Any

import boto3
import people_slash
from oncall_command import Change, CommandRefused, check_workspace, cover, listing, parse_command, slack_reply, uncover
from people_command import is_people_command

from patterns_common.observability import logger


@cache
def on_call_table() -> Any:
    """Made on the first /oncall, not at import: the endpoint's other requests never need it."""
    return boto3.resource("dynamodb").Table(os.environ["ON_CALL_TABLE_NAME"])


def answer(fields: dict[str, str], now: float, tell: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """``tell`` hands the channel's post to the follow-up function (the endpoint's ``hand_off``)."""
    at = datetime.fromtimestamp(now, timezone.utc)
    try:
        # Unset, SLACK_TEAM_ID refuses every workspace (docs/on-call-schedules.md).
        check_workspace(fields.get("team_id"), os.environ.get("SLACK_TEAM_ID"))
        if is_people_command(fields.get("text", "")):
            return people_slash.answer(fields, now)
        command = parse_command(fields.get("text", ""))
        if command.verb == "list":
            return slack_reply(listing(_scan(), at))
        item = on_call_table().get_item(Key={"schedule_id": command.schedule_id}, ConsistentRead=True).get("Item")
        if item is None:
            raise CommandRefused(f"There is no schedule {command.schedule_id!r}.")
        member = fields.get("user_id", "")
        if command.verb == "cover":
            change = cover(item, member, at, command.start, command.end)
        else:
            change = uncover(item, member, at)
        _write(change)
        tell({"text": change.told, "response_url": None, "replacement": None})
        _rearm_handoff_notice()
        logger.info("Overrides changed", extra={"schedule_id": change.schedule_id, "command": command.verb})
        return slack_reply(change.told)
    except CommandRefused as refused:
        return slack_reply(str(refused))


def _rearm_handoff_notice() -> None:
    """A cover can move the next handoff: Handoff Notice (asynchronously, within Slack's 3 s) arms it again."""
    name = os.environ.get("HANDOFF_FUNCTION_NAME")  # absent without a Slack webhook: no notices to arm
    if name:
        boto3.client("lambda").invoke(FunctionName=name, InvocationType="Event", Payload=b"{}")


def _scan() -> list[dict[str, Any]]:
    items, page = [], {}
    while True:
        found = on_call_table().scan(ConsistentRead=True, **page)
        items.extend(found["Items"])
        if "LastEvaluatedKey" not in found:
            return items
        page = {"ExclusiveStartKey": found["LastEvaluatedKey"]}


def _write(change: Change) -> None:
    """The new overrides, only over the ones the change was worked out from: DynamoDB compares lists
    whole (API Reference, Condition: "EQ is supported for all data types, including lists and maps"), so
    a cover or uncover written meanwhile is never lost, and is checked again by its author's retry."""
    unchanged = "overrides = :before"
    if not change.before:  # an item without overrides, or with an empty list, both as the check saw them
        unchanged = f"(attribute_not_exists(overrides) OR {unchanged})"
    try:
        on_call_table().update_item(
            Key={"schedule_id": change.schedule_id},
            UpdateExpression="SET overrides = :after",
            ConditionExpression=f"attribute_exists(schedule_id) AND {unchanged}",
            ExpressionAttributeValues={":before": change.before, ":after": change.after},
        )
    except on_call_table().meta.client.exceptions.ConditionalCheckFailedException:
        raise CommandRefused("The schedule changed while you typed; run the command again.") from None

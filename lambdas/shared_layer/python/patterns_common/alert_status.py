"""How an alert item's status changes, and what the channel is told: the rules, with no AWS client.

An alert is ``active`` (or has no status) while its escalation runs. A person acknowledges it
(``acknowledged``: "I am on it", notifications stop) or resolves it (``resolved``: it is over); a
resolution is also accepted on an acknowledged alert, since the one who acknowledged is usually the
one who fixes it. Its CloudWatch alarm raises it again (``active``, a new occurrence from ``raised_at``) and
resolves it when it returns to OK. A link sent before the alert was raised again belongs to an
earlier occurrence: it is refused, in the browser and from Slack, with a page that says so.

Every change is one conditional UpdateItem, so two clicks, a click and an alarm, or a redelivered
alarm event cannot both win: the loser reads why from the item DynamoDB returns with the refusal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from patterns_common.alert_executions import CLAIM_ATTRIBUTE, CLAIM_EXPIRY_ATTRIBUTE

ACTIVE, ACKNOWLEDGED, RESOLVED = "active", "acknowledged", "resolved"
# The alarm states an item records (alarm_state): whether its alarm is in an occurrence (ALARM) or not.
ALARM, OK = "ALARM", "OK"
# The status each action sets (also the prefix of its _by/_at fields) and the statuses it acts on.
SETS = {"acknowledge": ACKNOWLEDGED, "resolve": RESOLVED}
_ACTS_ON = {"acknowledge": (ACTIVE,), "resolve": (ACTIVE, ACKNOWLEDGED)}
# Fields that belong to one occurrence: cleared when the alarm raises the alert again.
_OCCURRENCE_FIELDS = ("acknowledged_by", "acknowledged_at", "resolved_by", "resolved_at")
_SLACK_MEMBER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")


def timestamp(epoch_seconds: float) -> str:
    """The item's time format: ISO 8601 UTC to the second, which also sorts as text."""
    return datetime.fromtimestamp(int(epoch_seconds), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_of(item: Mapping[str, Any]) -> Any:
    """The item's status as the machine reads it: absent means active."""
    return item.get("status", ACTIVE)


def act_update(alert_id: str, action: str, *, by: str, at: str, occurrence: str | None) -> dict[str, Any]:
    """UpdateItem arguments (no TableName) for a person's ``action`` through a link made for ``occurrence``.

    Acts only if the item exists, its status allows the action, and the alert was not raised again
    since the link was made: a link acts only on the occurrence its message was about.
    """
    allowed = _ACTS_ON[action]
    values: dict[str, Any] = {":new": SETS[action], ":by": by, ":at": at}
    values.update({f":allowed{index}": status for index, status in enumerate(allowed)})
    condition = (
        "attribute_exists(alert_id)"
        f" AND (attribute_not_exists(#status) OR #status IN ({', '.join(f':allowed{i}' for i in range(len(allowed)))}))"
        " AND (attribute_not_exists(raised_at)"
    )
    if occurrence is not None:
        values[":occurrence"] = occurrence
        condition += " OR raised_at = :occurrence"
    field = SETS[action]
    return {
        "Key": {"alert_id": alert_id},
        "UpdateExpression": f"SET #status = :new, {field}_by = :by, {field}_at = :at",
        "ConditionExpression": condition + ")",
        "ExpressionAttributeNames": {"#status": "status"},
        "ExpressionAttributeValues": values,
    }


@dataclass(frozen=True)
class Outcome:
    """Why an action did or did not change the item, for the page and the answer's status code."""

    kind: str  # acted | already | earlier_occurrence | not_found | not_actionable
    status: Any = None
    by: str | None = None
    at: str | None = None


def raised_again(item: Mapping[str, Any] | None, occurrence: str | None) -> str | None:
    """When the alert was raised again after the link's ``occurrence`` began, if it was."""
    raised_at = item.get("raised_at") if item is not None else None
    return raised_at if isinstance(raised_at, str) and raised_at != occurrence else None


def outcome_of_refusal(item: Mapping[str, Any] | None, occurrence: str | None) -> Outcome:
    """What a refused act_update means, read from the item as it was (None: there is no item)."""
    if item is None:
        return Outcome("not_found")
    status = status_of(item)
    if raised_at := raised_again(item, occurrence):
        return Outcome("earlier_occurrence", status, at=raised_at)
    if status in (ACKNOWLEDGED, RESOLVED):
        by, at = item.get(f"{status}_by"), item.get(f"{status}_at")
        return Outcome("already", status, by if isinstance(by, str) else None, at if isinstance(at, str) else None)
    return Outcome("not_actionable", status)


def outcome_for_page(item: Mapping[str, Any] | None, action: str, occurrence: str | None) -> Outcome | None:
    """What GET shows instead of the button: None while the link's action can still be taken."""
    if item is not None and status_of(item) in _ACTS_ON[action] and raised_again(item, occurrence) is None:
        return None
    return outcome_of_refusal(item, occurrence)


def raise_update(
    alert_id: str, *, state_at: str, now: str, execution_arn: str, claim_expires_at: int, reopen: bool
) -> dict[str, Any]:
    """UpdateItem arguments for the alarm entering ALARM at ``state_at`` (its state timestamp): a new occurrence.

    The state timestamp orders the alarm's events: a redelivered or late event (not newer than the
    last one applied) changes nothing, so it cannot undo an acknowledgement made since. Unless
    ``reopen`` (the alarm came from OK, so its last occurrence is over whatever the item says), an
    alert whose alarm is still in its occurrence (ALARM, then INSUFFICIENT_DATA, then ALARM) is left
    as it is. The same write hands the escalation claim to ``execution_arn``, the execution about to
    be started: there is no moment in which the new occurrence is raised and nobody may escalate it.
    """
    condition = "attribute_exists(alert_id) AND (attribute_not_exists(alarm_state_at) OR alarm_state_at < :state_at)"
    if not reopen:
        condition += " AND (attribute_not_exists(alarm_state) OR alarm_state <> :alarm)"
    return {
        "Key": {"alert_id": alert_id},
        "UpdateExpression": "SET #status = :active, raised_at = :now, alarm_state = :alarm, alarm_state_at = :state_at, "
        "#claim = :execution, #expires = :expires REMOVE " + ", ".join(_OCCURRENCE_FIELDS),
        "ConditionExpression": condition,
        "ExpressionAttributeNames": {"#status": "status", "#claim": CLAIM_ATTRIBUTE, "#expires": CLAIM_EXPIRY_ATTRIBUTE},
        "ExpressionAttributeValues": {
            ":active": ACTIVE,
            ":now": now,
            ":alarm": ALARM,
            ":state_at": state_at,
            ":execution": execution_arn,
            ":expires": claim_expires_at,
        },
    }


def alarm_resolver(alarm_name: str) -> str:
    """``resolved_by`` of an alert its alarm resolved."""
    return f"CloudWatch alarm {alarm_name}"


def resolve_by_alarm_update(alert_id: str, *, alarm_name: str, state_at: str, now: str) -> dict[str, Any]:
    """UpdateItem arguments for the alarm returning to OK at ``state_at``: resolves an active or acknowledged alert."""
    return {
        "Key": {"alert_id": alert_id},
        "UpdateExpression": "SET #status = :resolved, resolved_by = :by, resolved_at = :now, alarm_state = :ok, "
        "alarm_state_at = :state_at",
        "ConditionExpression": "attribute_exists(alert_id)"
        " AND (attribute_not_exists(alarm_state_at) OR alarm_state_at < :state_at)"
        " AND (attribute_not_exists(#status) OR #status IN (:active, :acknowledged))",
        "ExpressionAttributeNames": {"#status": "status"},
        "ExpressionAttributeValues": {
            ":resolved": RESOLVED,
            ":active": ACTIVE,
            ":acknowledged": ACKNOWLEDGED,
            ":by": alarm_resolver(alarm_name),
            ":now": now,
            ":ok": OK,
            ":state_at": state_at,
        },
    }


def alarm_ok_update(alert_id: str, *, state_at: str) -> dict[str, Any]:
    """UpdateItem arguments for the alarm returning to OK on an alert a person resolved already: the
    occurrence is over (the next ALARM raises a new one), and who resolved it stays as it is."""
    return {
        "Key": {"alert_id": alert_id},
        "UpdateExpression": "SET alarm_state = :ok, alarm_state_at = :state_at",
        "ConditionExpression": "attribute_exists(alert_id)"
        " AND (attribute_not_exists(alarm_state_at) OR alarm_state_at < :state_at)",
        "ExpressionAttributeValues": {":ok": OK, ":state_at": state_at},
    }


def mention(account: str) -> str:
    """An account as Slack message text: a member ID is mentioned (Slack notifies them), anything else named."""
    return f"<@{account}>" if _SLACK_MEMBER_ID.match(account) else slack_escape(account)


def slack_escape(text: str) -> str:
    # Slack reads &, < and > as control characters in message text.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def followup_text(alert_id: str, status: str, *, by: str, at: str) -> str:
    """The channel's follow-up once an alert is acknowledged or resolved: who, and when."""
    # Equivalent mutants: mention() names anything with a space as slack_escape() does.
    who = slack_escape(by) if by.startswith("CloudWatch alarm ") else mention(by)  # pragma: no mutate
    return f"Alert {slack_escape(alert_id)} was {status} by {who} at {at}."

"""Validates an alert item and turns it into the loop config the state machine runs on.

Everything an execution will carry or record is bounded here, at fetch time, so that no accepted
config can later hit the 256 KiB payload limit or the 25,000-event history limit half-way through.
The worst cases are computed from the same retry budgets the ASL declares (a test pins them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from decimal import Decimal
from typing import Any

DEFAULT_INTERVAL_SECONDS = 300
MAX_TOTAL_WAIT_SECONDS = 86_400  # the machine's TimeoutSeconds (2 days) keeps a day for the work itself
MAX_ALERT_ID_LENGTH = 256
MAX_USER_LENGTH = 254  # longest e-mail address
MAX_MESSAGE_LENGTH = 4_000  # Slack's recommended upper bound for a message's text
STATUSES = ("active", "acknowledged", "resolved")

MAX_PAYLOAD_BYTES = 256 * 1024
MAX_HISTORY_EVENTS = 25_000

# Attempts per task: 1 + the sum of MaxAttempts over the task's retriers in the ASL.
FETCH_MAX_ATTEMPTS = 4
READ_STATUS_MAX_ATTEMPTS = 4
NOTIFY_MAX_ATTEMPTS = 8
# History events: a state is entered and exited (2); a task attempt is scheduled, started and ends (3).
_FIXED_EVENTS = 2 + (2 + 3 * FETCH_MAX_ATTEMPTS) + 2  # execution, fetch, the final state
_EVENTS_PER_ROUND = 2 + (2 + 3 * READ_STATUS_MAX_ATTEMPTS) + 2  # wait, read, the loop Choice that ends the round
_EVENTS_PER_USER = 2 + (2 + 3 * NOTIFY_MAX_ATTEMPTS)  # the loop Choice, notify

# Payload: the largest value an execution holds is the failure list (a variable, then the output)
# beside the config; a Catch briefly holds a caught error whose Cause can be 32 KiB.
STATE_OVERHEAD_BYTES = 4_096
CAUGHT_CAUSE_BYTES = 32_768
MAX_ERROR_NAME_LENGTH = 64  # error names a notification can fail with (ours, Lambda.*, States.*)


class AlertNotFound(Exception):
    """The alert table has no item for the alert id."""


class InvalidAlertConfig(Exception):
    """The alert item (or the execution input) cannot be run; the message starts with the field."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")


@dataclass(frozen=True)
class AlertConfig:
    alert_id: str
    message: str
    users: list[str]
    user_count: int
    rounds: int
    interval_seconds: int

    def to_state(self) -> dict[str, Any]:
        return asdict(self)


def read_alert_id(event: Mapping[str, Any]) -> str:
    alert_id = event.get("alert_id") if isinstance(event, Mapping) else None
    if not isinstance(alert_id, str) or not alert_id.strip() or len(alert_id) > MAX_ALERT_ID_LENGTH:
        raise InvalidAlertConfig(
            "alert_id", f"the execution input must be {{\"alert_id\": \"...\"}} with 1 to {MAX_ALERT_ID_LENGTH} characters"
        )
    unknown = sorted(set(event) - {"alert_id"})
    if unknown:
        # Someone passing {"alert_id": ..., "notification_count": 1} expects it to count; it would not.
        raise InvalidAlertConfig(
            unknown[0], "is not an input field: the execution input is {\"alert_id\": \"...\"} and the rest of "
            "the config lives in the alert item"
        )
    return alert_id


def parse_alert_config(item: Mapping[str, Any]) -> AlertConfig:
    """Return the validated config of an alert item as read from DynamoDB (numbers as Decimal)."""
    alert_id = item["alert_id"]
    _check_status(item.get("status"))
    users = _user_list(item.get("user_accounts"))
    rounds = _integer(item, "notification_count", default=None, low=1, high=None)
    interval = _integer(item, "interval_seconds", default=DEFAULT_INTERVAL_SECONDS, low=0, high=MAX_TOTAL_WAIT_SECONDS)
    message = item.get("message", f"Alert {alert_id} is active")
    if not isinstance(message, str) or not message.strip() or len(message) > MAX_MESSAGE_LENGTH:
        raise InvalidAlertConfig("message", f"must be a non-empty string of at most {MAX_MESSAGE_LENGTH} characters")
    config = AlertConfig(alert_id, message, users, len(users), rounds, interval)
    _check_limits(config)
    if (rounds - 1) * interval > MAX_TOTAL_WAIT_SECONDS:
        raise InvalidAlertConfig(
            "interval_seconds",
            f"{rounds - 1} waits of {interval} s add up to more than the {MAX_TOTAL_WAIT_SECONDS} s an alert may wait",
        )
    return config


def _check_status(status: Any) -> None:
    if status is not None and status not in STATUSES:
        raise InvalidAlertConfig("status", f"must be one of {', '.join(STATUSES)} (or absent, meaning active)")


def _integer(item: Mapping[str, Any], field: str, *, default: int | None, low: int, high: int | None) -> int:
    value = item.get(field, default)
    bounds = f"from {low} to {high}" if high is not None else f"of at least {low}"
    if value is None:
        raise InvalidAlertConfig(field, f"is required (an integer {bounds})")
    # bool is an int in Python and a distinct type in DynamoDB: reject it explicitly.
    integral = isinstance(value, (int, Decimal)) and not isinstance(value, bool) and value == int(value)
    if not integral or value < low or (high is not None and value > high):
        raise InvalidAlertConfig(field, f"must be an integer {bounds}, got {_shown(value)}")
    return int(value)


def _shown(value: Any) -> str:
    """A value as the person who wrote the item sees it: DynamoDB numbers arrive as Decimal."""
    return format(value.normalize(), "f") if isinstance(value, Decimal) else repr(value)


def _user_list(accounts: Any) -> list[str]:
    if accounts is None:
        raise InvalidAlertConfig("user_accounts", "is required (a list, or a map such as {\"1\": \"foo@example.com\"})")
    if isinstance(accounts, Mapping):
        labelled = [(f"user_accounts[{key!r}]", accounts[key]) for key in sorted(accounts, key=_map_key_order)]
    elif isinstance(accounts, list):
        labelled = [(f"user_accounts[{index}]", user) for index, user in enumerate(accounts)]
    else:
        # A DynamoDB string set arrives as a Python set: it has no order to notify in.
        raise InvalidAlertConfig("user_accounts", f"must be a list or a map, not a {type(accounts).__name__}")
    if not labelled:
        raise InvalidAlertConfig("user_accounts", "must name at least one user")
    users: list[str] = []
    for label, user in labelled:
        if not isinstance(user, str) or not user.strip() or len(user) > MAX_USER_LENGTH:
            raise InvalidAlertConfig(label, f"must be a non-empty string of at most {MAX_USER_LENGTH} characters")
        if user in users:
            raise InvalidAlertConfig(label, f"{user!r} is listed twice")
        users.append(user)
    return users


def _map_key_order(key: str) -> tuple[int, int, str]:
    """The seed's map form {"1": ..., "2": ..., "10": ...}: numeric keys in numeric order, then the rest."""
    return (0, int(key), key) if key.isascii() and key.isdigit() else (1, 0, key)


def worst_case_history_events(rounds: int, user_count: int) -> int:
    return _FIXED_EVENTS + rounds * (_EVENTS_PER_ROUND + user_count * _EVENTS_PER_USER)


def worst_case_state_bytes(config: AlertConfig) -> int:
    """Largest state the execution can hold: every notification of every round failed."""
    failed_entries = config.rounds * sum(_failure_entry_bytes(config.rounds, user) for user in config.users)
    return STATE_OVERHEAD_BYTES + CAUGHT_CAUSE_BYTES + _json_bytes(config.to_state()) + _json_bytes(config.alert_id) + failed_entries


def _failure_entry_bytes(round_: int, user: str) -> int:
    entry = {"round": round_, "user": user, "error": "E" * MAX_ERROR_NAME_LENGTH}
    return _json_bytes(entry) + 1  # and the comma between list entries


def _json_bytes(value: Any) -> int:
    # ensure_ascii over-counts non-ASCII text (6 bytes per \\uXXXX instead of 2-4): a safe upper bound.
    return len(json.dumps(value, separators=(",", ":")))


def _check_limits(config: AlertConfig) -> None:
    limits: list[tuple[str, Callable[[AlertConfig], bool]]] = [
        (
            f"{MAX_HISTORY_EVENTS:,} history events",
            lambda c: worst_case_history_events(c.rounds, c.user_count) <= MAX_HISTORY_EVENTS,
        ),
        (f"the {MAX_PAYLOAD_BYTES // 1024} KiB payload limit", lambda c: worst_case_state_bytes(c) <= MAX_PAYLOAD_BYTES),
    ]
    for limit, fits in limits:
        if not fits(replace(config, rounds=1)):
            raise InvalidAlertConfig(
                "user_accounts", f"{config.user_count} users cannot be notified within {limit} even in one round"
            )
        if not fits(config):
            raise InvalidAlertConfig(
                "notification_count",
                f"at most {_most_rounds(config, fits)} rounds of {config.user_count} users fit within {limit}, "
                f"got {config.rounds}",
            )


def _most_rounds(config: AlertConfig, fits: Callable[[AlertConfig], bool]) -> int:
    """Largest round count that fits (binary search: cost grows with rounds, counts can be huge)."""
    low, high = 1, config.rounds  # fits(low) and not fits(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(replace(config, rounds=middle)) else (low, middle)
    return low

"""Validates an alert item and turns it into the loop config the state machine runs on.

Everything an execution will carry or record is bounded here, at fetch time, so that no accepted
config can later hit the 256 KiB payload limit or the 25,000-event history limit half-way through.
The worst cases are computed from the same retry budgets the ASL declares (a test pins them, and
another compares the history model with a real worst-case execution in the emulator).

It also decides, from the alert item alone, whether another execution may hold the alert's
one-escalation claim (the handler asks Step Functions whether that execution still runs).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from decimal import Decimal
from typing import Any

from patterns_common.alert_action_links import LINK_LIFETIME_SECONDS, links_for
from patterns_common.alert_executions import CLAIM_ATTRIBUTE, CLAIM_EXPIRY_ATTRIBUTE
from patterns_common.oncall import SCHEDULE_ID, SCHEDULE_PREFIX, schedule_id_of

DEFAULT_INTERVAL_SECONDS = 300
MAX_TOTAL_WAIT_SECONDS = 86_400  # the machine's TimeoutSeconds (2 days) keeps a day for the work itself
# The dispatcher spreads its starts over at most this long (a start delay is a wait like the others).
MAX_START_DELAY_SECONDS = 900
MAX_ALERT_ID_LENGTH = 256
MAX_USER_LENGTH = 254  # longest e-mail address
# The account of MAX_USER_LENGTH characters that takes the most bytes in JSON: a control character is
# written \u0000, 6 bytes, more than any character takes in UTF-8. Find Who Is On Call pages accounts
# that schedules name, unknown at fetch: the limits count each as this one, links included.
LARGEST_ACCOUNT = "\x00" * MAX_USER_LENGTH
MAX_MESSAGE_LENGTH = 4_000  # Slack's recommended upper bound for a message's text
STATUSES = ("active", "acknowledged", "resolved")
INPUT_FIELDS = ("alert_id", "start_delay_seconds")
# An alert item's fields, the one list tools.alert and Fetch Alert Config check against: those a
# person writes and the app reads (alarm_name: the alarm handler and the dispatcher), then those the
# app writes itself (patterns_common.alert_status, the claim below), so an item read back and put
# again is accepted. Any other field would be ignored: `interval_secs: 60` would run the default.
WRITTEN_BY_PEOPLE = (
    "alert_id", "status", "message", "user_accounts", "escalation", "notification_count", "interval_seconds",
    "alarm_name",
)
WRITTEN_BY_THE_APP = (
    "raised_at", "alarm_state", "alarm_state_at", "acknowledged_by", "acknowledged_at", "resolved_by", "resolved_at",
    CLAIM_ATTRIBUTE, CLAIM_EXPIRY_ATTRIBUTE,
)
ITEM_FIELDS = WRITTEN_BY_PEOPLE + WRITTEN_BY_THE_APP
# A target meant as a schedule but spelled otherwise (case, plural, spaces) would be posted as a
# person of that name, mentioning nobody.
_SCHEDULE_LIKE = re.compile(r"\s*schedules?\s*:", re.IGNORECASE)

MAX_PAYLOAD_BYTES = 256 * 1024
MAX_HISTORY_EVENTS = 25_000

# Attempts per task: 1 + the sum of MaxAttempts over the task's retriers in the ASL.
FETCH_MAX_ATTEMPTS = 11
READ_STATUS_MAX_ATTEMPTS = 4
FIND_ON_CALL_MAX_ATTEMPTS = 11
NOTIFY_MAX_ATTEMPTS = 15
RELEASE_MAX_ATTEMPTS = 4
# History events: a state is entered and exited (2); a task attempt is scheduled, started and ends
# (3); a Map state also starts and ends (2), each iteration starts and ends (2); a Fail state is
# only entered (1); the execution starts and ends (2).
_STATE = 2
_MAP = 2 * _STATE


def _task(attempts: int) -> int:
    return _STATE + 3 * attempts


# Payload: the largest value an execution holds is the failure list (a variable, then the output)
# beside the config and one round's Map results; a Catch briefly holds a caught error whose Cause
# can be 32 KiB.
STATE_OVERHEAD_BYTES = 4_096
CAUGHT_CAUSE_BYTES = 32_768
# A round's note on one schedule (its id and why it had nobody to page; a reason names a field).
PAGING_NOTE_BYTES = 512
MAX_ERROR_NAME_LENGTH = 64  # error names a notification can fail with (ours, Lambda.*, States.*)


class AlertNotFound(Exception):
    """The alert table has no item for the alert id."""


class InvalidAlertConfig(Exception):
    """The alert item (or the execution input) cannot be run; the message starts with the field."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")


class AlertAlreadyRunning(Exception):
    """Another execution is escalating this alert; the message is that execution's ARN."""


@dataclass(frozen=True)
class ExecutionInput:
    alert_id: str
    start_delay_seconds: int = 0


@dataclass(frozen=True)
class AlertConfig:
    alert_id: str
    message: str
    # The accounts each round notifies: round k the level k, the last level for every later round.
    levels: list[list[str]]
    rounds: int
    interval_seconds: int
    start_delay_seconds: int = 0
    # Per account, its signed action links {"acknowledge": url, "resolve": url}.
    links: dict[str, dict[str, str]] = field(default_factory=dict)
    # The on-call schedules the levels name (schedule:<id>): each round that has one finds who is
    # on call when it notifies.
    schedules: list[str] = field(default_factory=list)
    # The occurrence the links are for (the item's raised_at): Find Who Is On Call signs its links for it too.
    occurrence: str | None = None
    # The JSON bytes of LARGEST_ACCOUNT's links: what the limits count for the links of each on-call member
    # Find Who Is On Call pages. Not part of the state.
    paged_links_bytes: int = 0

    @property
    def users(self) -> list[str]:
        """Every account the alert can notify, each once, in the order first notified (schedules not included)."""
        return list(dict.fromkeys(user for level in self.levels for user in level if schedule_id_of(user) is None))

    def level_sizes(self) -> list[int]:
        """Most accounts each round can notify: a schedule with nobody on call adds the next level's."""
        return [len(self.targets_reached(min(r, len(self.levels) - 1))) for r in range(self.rounds)]

    def targets_reached(self, index: int) -> list[str]:
        """The targets a round of level ``index`` can page: its own, and the next level's when it names a
        schedule (a gap there pages the next level too), and so on."""
        level = self.levels[index]
        falls_through = index + 1 < len(self.levels) and any(schedule_id_of(user) for user in level)
        return level + (self.targets_reached(index + 1) if falls_through else [])

    def to_state(self) -> dict[str, Any]:
        state = asdict(self)
        del state["paged_links_bytes"]
        return state


def read_input(event: Any) -> ExecutionInput:
    alert_id = event.get("alert_id") if isinstance(event, Mapping) else None
    if not isinstance(alert_id, str) or not alert_id.strip() or len(alert_id) > MAX_ALERT_ID_LENGTH:
        raise InvalidAlertConfig(
            "alert_id", f"the execution input must be {{\"alert_id\": \"...\"}} with 1 to {MAX_ALERT_ID_LENGTH} characters"
        )
    unknown = sorted(set(event) - set(INPUT_FIELDS))
    if unknown:
        # Someone passing {"alert_id": ..., "notification_count": 1} expects it to count; it would not.
        raise InvalidAlertConfig(
            unknown[0], "is not an input field: the execution input is {\"alert_id\": \"...\"} (and optionally "
            "\"start_delay_seconds\") and the rest of the config lives in the alert item"
        )
    delay = _integer(event, "start_delay_seconds", default=0, low=0, high=MAX_START_DELAY_SECONDS)
    return ExecutionInput(alert_id, delay)


def parse_alert_config(
    item: Mapping[str, Any],
    *,
    start_delay_seconds: int = 0,
    links_for: Callable[[str, int], dict[str, str]] | None = None,
) -> AlertConfig:
    """Return the validated config of an alert item as read from DynamoDB (numbers as Decimal).

    ``links_for(user, seconds)`` signs a user's action links for notifications sent up to ``seconds``
    after the start; the links are part of what the limits bound.
    """
    alert_id = item["alert_id"]
    _check_fields(item)
    _check_status(item.get("status"))
    levels, field_name = _levels(item)
    rounds = _integer(item, "notification_count", default=None, low=1, high=None)
    interval = _integer(item, "interval_seconds", default=DEFAULT_INTERVAL_SECONDS, low=0, high=MAX_TOTAL_WAIT_SECONDS)
    message = item.get("message", f"Alert {alert_id} is active")
    if not isinstance(message, str) or not message.strip() or len(message) > MAX_MESSAGE_LENGTH:
        raise InvalidAlertConfig("message", f"must be a non-empty string of at most {MAX_MESSAGE_LENGTH} characters")
    schedules = list(dict.fromkeys(s for level in levels for user in level if (s := schedule_id_of(user))))
    config = AlertConfig(alert_id, message, levels, rounds, interval, start_delay_seconds, schedules=schedules)
    if links_for is not None:
        notifying_for = start_delay_seconds + (rounds - 1) * interval
        config = replace(
            config,
            links={user: links_for(user, notifying_for) for user in config.users},
            paged_links_bytes=_json_bytes(links_for(LARGEST_ACCOUNT, notifying_for)),
        )
    _check_limits(config, field_name)
    if (rounds - 1) * interval > MAX_TOTAL_WAIT_SECONDS:
        raise InvalidAlertConfig(
            "interval_seconds",
            f"{rounds - 1} waits of {interval} s add up to more than the {MAX_TOTAL_WAIT_SECONDS} s an alert may wait",
        )
    return config


def fetched_config(
    item: Mapping[str, Any], *, start_delay_seconds: int, key: bytes, actions_url: str, now: float
) -> AlertConfig:
    """What Fetch Alert Config returns for an item: its validated config with each user's links
    (``tools.alert`` checks an item with this before writing it)."""
    alert_id = item["alert_id"]
    # The occurrence the links are for, so the endpoint refuses them once the alarm raises the alert again
    occurrence = item.get("raised_at") if isinstance(item.get("raised_at"), str) else None
    config = parse_alert_config(
        item,
        start_delay_seconds=start_delay_seconds,
        # A link stays valid for a day after the last round that can send it.
        links_for=lambda user, notifying_for: links_for(
            key,
            actions_url,
            alert_id=alert_id,
            user=user,
            expires_at=int(now) + notifying_for + LINK_LIFETIME_SECONDS,
            occurrence=occurrence,
        ),
    )
    return replace(config, occurrence=occurrence)


def status_of(item: Mapping[str, Any]) -> str:
    """The status the machine steers on: an item without one is active."""
    return item.get("status", "active")


def _check_fields(item: Mapping[str, Any]) -> None:
    unknown = sorted(set(item) - set(ITEM_FIELDS))
    if unknown:
        close = difflib.get_close_matches(unknown[0], WRITTEN_BY_PEOPLE, n=1)
        raise InvalidAlertConfig(
            unknown[0],
            "is not a field of an alert item, and would be ignored"
            + (f" (did you mean {close[0]}?)" if close else "")
            + f": a person writes {', '.join(WRITTEN_BY_PEOPLE)}",
        )


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
    # "F" differs from "f" only for NaN and Infinity, which DynamoDB cannot store: an equivalent mutant.
    return format(value.normalize(), "f") if isinstance(value, Decimal) else repr(value)  # pragma: no mutate


def _levels(item: Mapping[str, Any]) -> tuple[list[list[str]], str]:
    """The escalation levels and the field they came from: ``escalation``, or ``user_accounts`` as one level."""
    escalation, accounts = item.get("escalation"), item.get("user_accounts")
    if escalation is not None and accounts is not None:
        raise InvalidAlertConfig(
            "escalation", "give either escalation (a list of levels) or user_accounts (one level), not both"
        )
    if escalation is None:
        return [_user_list(accounts)], "user_accounts"
    if not isinstance(escalation, list) or not escalation:
        raise InvalidAlertConfig(
            "escalation", "must be a non-empty list of levels, each a list of accounts such as [[\"foo@example.com\"]]"
        )
    levels = []
    for index, level in enumerate(escalation):
        label = f"escalation[{index}]"
        if not isinstance(level, list) or not level:
            raise InvalidAlertConfig(label, "must be a non-empty list of accounts (a level notifies at least one)")
        levels.append(_accounts([(f"{label}[{position}]", user) for position, user in enumerate(level)]))
    return levels, "escalation"


def _user_list(accounts: Any) -> list[str]:
    if accounts is None:
        raise InvalidAlertConfig(
            "user_accounts", "is required (a list, or a map such as {\"1\": \"foo@example.com\"}), unless escalation is given"
        )
    if isinstance(accounts, Mapping):
        labelled = [(f"user_accounts[{key!r}]", accounts[key]) for key in sorted(accounts, key=_map_key_order)]
    elif isinstance(accounts, list):
        labelled = [(f"user_accounts[{index}]", user) for index, user in enumerate(accounts)]
    else:
        # A DynamoDB string set arrives as a Python set: it has no order to notify in.
        raise InvalidAlertConfig("user_accounts", f"must be a list or a map, not a {type(accounts).__name__}")
    if not labelled:
        raise InvalidAlertConfig("user_accounts", "must name at least one user")
    return _accounts(labelled)


def _accounts(labelled: list[tuple[str, Any]]) -> list[str]:
    users: dict[str, str] = {}  # account -> where it is first listed
    for label, user in labelled:
        if not isinstance(user, str) or not user.strip() or len(user) > MAX_USER_LENGTH:
            raise InvalidAlertConfig(label, f"must be a non-empty string of at most {MAX_USER_LENGTH} characters")
        if user in users:
            # Named by position, not by account: the error lands in logs, traces and execution history.
            raise InvalidAlertConfig(label, f"is listed twice (also {users[user]})")
        schedule_id = schedule_id_of(user)
        if schedule_id is None and _SCHEDULE_LIKE.match(user):
            raise InvalidAlertConfig(
                label, f"looks like an on-call schedule but is not spelled {SCHEDULE_PREFIX}<id> (lower case, no space), "
                # The explanation's wording only: the field and its refusal are tested.
                "so it would be posted as a person's name and mention nobody",  # pragma: no mutate
            )
        if schedule_id is not None and not SCHEDULE_ID.fullmatch(schedule_id):
            raise InvalidAlertConfig(
                label, f"{SCHEDULE_PREFIX}<id> names an on-call schedule: 1 to 64 letters, digits, '.', '_' or '-'"
            )
        users[user] = label
    return list(users)


def _map_key_order(key: str) -> tuple[int, int, str]:
    """The seed's map form {"1": ..., "2": ..., "10": ...}: numeric keys in numeric order, then the rest."""
    # Equivalent mutants: any other constants after the 0 keep the other keys after the numbers, in key order.
    return (0, int(key), key) if key.isascii() and key.isdigit() else (1, 0, key)  # pragma: no mutate


def history_events(
    level_sizes: list[int],
    *,
    fetch_attempts: int,
    read_attempts: int,
    notify_attempts: int,
    release_attempts: int,
    delayed: bool,
    notifications_failed: bool,
    released: bool,
    deferred: bool = False,
    find_on_call_attempts: int = 0,
) -> int:
    """Events of an execution that notified ``level_sizes[k]`` users in round k, each with
    ``notify_attempts`` attempts (the other tasks likewise) that all ended in failure when
    ``notifications_failed``; that waited before its first round when ``delayed``; that looked up
    who is on call before every round (``find_on_call_attempts``, 0 for an alert naming no schedule);
    that ended by releasing its claim (``released``) or in a Fail state; and whose every notification
    first waited for its slot on the webhook's pace (``deferred``: Notify User run twice, around one Wait)."""
    rounds = len(level_sizes)
    # The Map iteration, the notification's attempts, and the Catch's Pass state for a failure.
    notify_user = 2 + _task(notify_attempts) + (_STATE if notifications_failed else 0)
    if deferred:  # Notify User's attempts until one ends in SlackChannelBusy (caught: the state is
        # left; any attempt without a slot may be it, after throttles or a 429), "Wait For The
        # Channel's Turn", then Notify User entered again, its retries counted afresh
        notify_user += _task(notify_attempts) + _STATE
    events = 2 + _task(fetch_attempts) + _STATE  # the execution, the fetch, the first Choice
    events += rounds * (_MAP + _STATE)  # each round's Map and the Choice after it
    events += (rounds - 1 + delayed) * (_STATE + _task(read_attempts) + _STATE)  # wait, status read, Choice
    events += sum(level_sizes) * notify_user
    if find_on_call_attempts:
        events += rounds * _task(find_on_call_attempts)
    return events + (_task(release_attempts) if released else 1)


def worst_case_history_events(level_sizes: list[int], *, schedules: bool = False) -> int:
    """Events of an execution whose every notification failed after every retry (one entry per round)."""
    return (
        history_events(
            level_sizes,
            fetch_attempts=FETCH_MAX_ATTEMPTS,
            read_attempts=READ_STATUS_MAX_ATTEMPTS,
            notify_attempts=NOTIFY_MAX_ATTEMPTS,
            release_attempts=RELEASE_MAX_ATTEMPTS,
            delayed=True,
            notifications_failed=True,
            released=True,
            deferred=True,
            find_on_call_attempts=FIND_ON_CALL_MAX_ATTEMPTS if schedules else 0,
        )
        + _STATE  # the release's Catch ends in a Succeed state when the claim was taken over
    )


def worst_case_state_bytes(config: AlertConfig) -> int:
    """Largest state the execution can hold: every notification of every round failed."""
    failures = [_failure_entry_bytes(round_, user) for round_ in range(1, config.rounds + 1) for user in _level(config, round_)]
    largest_round = max(
        sum(_failure_entry_bytes(round_, user) for user in level) for round_, level in enumerate(config.levels, start=1)
    )
    return (
        STATE_OVERHEAD_BYTES
        + CAUGHT_CAUSE_BYTES
        + _json_bytes(config.to_state())
        + _json_bytes(config.alert_id)
        + sum(failures)
        + largest_round
        + _paging_bytes(config)
    )


def _paging_bytes(config: AlertConfig) -> int:
    """$paging, for an alert naming schedules: the people of the round that can page the most bytes of
    them, and its message with a note per schedule."""
    if not config.schedules:
        return 0
    levels_reached = range(min(config.rounds, len(config.levels)))
    people = max(sum(_person_bytes(config, target) for target in config.targets_reached(index)) for index in levels_reached)
    notes = len(config.schedules) * PAGING_NOTE_BYTES
    return _json_bytes(config.message) + notes + people


def _person_bytes(config: AlertConfig, user: str) -> int:
    """One person in "users" (the account, a comma) and in "links" (the account, a colon, its links, a
    comma); a schedule's on-call member as LARGEST_ACCOUNT."""
    if schedule_id_of(user) is not None:
        return 2 * (_json_bytes(LARGEST_ACCOUNT) + 1) + config.paged_links_bytes + 1
    return 2 * (_json_bytes(user) + 1) + _json_bytes(config.links.get(user, {})) + 1


def _level(config: AlertConfig, round_: int) -> list[str]:
    return config.levels[min(round_, len(config.levels)) - 1]


def _failure_entry_bytes(round_: int, user: str) -> int:
    # Only the entry's length counts: a key or letter changed to another of the same length is an equivalent mutant.
    entry = {"round": round_, "user": user, "error": "E" * MAX_ERROR_NAME_LENGTH}  # pragma: no mutate
    return _json_bytes(entry) + 1  # and the comma between list entries


def _json_bytes(value: Any) -> int:
    # ensure_ascii over-counts non-ASCII text (6 bytes per \\uXXXX instead of 2-4): a safe upper bound.
    return len(json.dumps(value, separators=(",", ":")))


def _check_limits(config: AlertConfig, field_name: str) -> None:
    limits: list[tuple[str, Callable[[AlertConfig], bool]]] = [
        (
            f"{MAX_HISTORY_EVENTS:,} history events",
            lambda c: worst_case_history_events(c.level_sizes(), schedules=bool(c.schedules)) <= MAX_HISTORY_EVENTS,
        ),
        (f"the {MAX_PAYLOAD_BYTES // 1024} KiB payload limit", lambda c: worst_case_state_bytes(c) <= MAX_PAYLOAD_BYTES),
    ]
    for limit, fits in limits:
        if not fits(replace(config, rounds=min(config.rounds, len(config.levels)))):
            once = "in one round" if len(config.levels) == 1 else "once through the levels"
            raise InvalidAlertConfig(
                field_name, f"{_who(config)} cannot be notified within {limit} even {once}"
            )
        if not fits(config):
            raise InvalidAlertConfig(
                "notification_count",
                f"at most {_most_rounds(config, fits)} rounds of {_who(config)} fit within {limit}, "
                f"got {config.rounds}",
            )


def _who(config: AlertConfig) -> str:
    """Whom the alert notifies, as a refusal names them: "9 users", "3 users and 1 schedule", "99 schedules"."""
    counts = ((len(config.users), "user"), (len(config.schedules), "schedule"))
    return " and ".join(f"{count} {noun}{'s' if count != 1 else ''}" for count, noun in counts if count)


def _most_rounds(config: AlertConfig, fits: Callable[[AlertConfig], bool]) -> int:
    """Largest round count that fits (binary search: cost grows with rounds, counts can be huge)."""
    low, high = min(config.rounds, len(config.levels)), config.rounds  # fits(low) and not fits(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(replace(config, rounds=middle)) else (low, middle)
    return low


def _machine_of(execution_arn: str) -> str:
    """arn:aws:states:<region>:<account>:execution:<machine> of an execution's ARN (a name has no ':')."""
    return execution_arn.rsplit(":", 1)[0]


def claim_to_check(item: Mapping[str, Any], *, me: str, now: float) -> str | None:
    """The execution that may still hold the alert's claim and must be asked whether it runs.

    None when the alert is free for ``me``: no claim, ``me``'s own (a retried fetch), a claim
    whose execution has ended for certain (past its expiry, the machine's timeout), or one of another
    machine's execution: only this machine escalates this table's alerts, so it is a deleted
    deployment's, left in the table a new deployment adopted (and this function may not ask about it).
    """
    holder = item.get(CLAIM_ATTRIBUTE)
    if not isinstance(holder, str) or holder == me or _machine_of(holder) != _machine_of(me):
        return None
    expires_at = item.get(CLAIM_EXPIRY_ATTRIBUTE)
    if isinstance(expires_at, (int, Decimal)) and not isinstance(expires_at, bool) and expires_at <= now:
        return None
    return holder

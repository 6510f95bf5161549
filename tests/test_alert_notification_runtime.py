"""Alert notification functions: config validation, Slack posting, dispatch planning, and their handlers."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from types import ModuleType

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from botocore.exceptions import ClientError
from moto import mock_aws

from emulator.slack import SlackStandIn
from patterns_common import alert_executions
from patterns_common import slack_pace as pace_rules
from patterns_common.alert_executions import execution_name
from stacks.common.definitions import definition_path
from tests.emf import emf_metrics
from tests.lambda_loader import load_lambda_module

ASL = json.loads(definition_path("alert_notification").read_text())
WEBHOOK_SECRET = "alert-notifier/slack-webhook"


@dataclass
class FakeLambdaContext:
    function_name: str = "alert-function"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:alert-function"
    aws_request_id: str = "00000000-0000-0000-0000-000000000000"

    def get_remaining_time_in_millis(self) -> int:
        return 20_000


def alert_item(**overrides):
    """An alert item as boto3's resource API reads it from DynamoDB (numbers are Decimal)."""
    item = {
        "alert_id": "disk-full-web-1",
        "notification_count": Decimal(3),
        "user_accounts": ["foo@example.com", "bar@example.com", "baz@example.com"],
        "status": "active",
        "interval_seconds": Decimal(300),
        "message": "Disk above 90% on web-1",
    }
    item.update(overrides)
    return {key: value for key, value in item.items() if value is not None}


def asl_state(name: str, states: dict | None = None) -> dict:
    """A state of the machine by name, at the top level or inside a Map's ItemProcessor."""
    for state_name, state in (states or ASL["States"]).items():
        if state_name == name:
            return state
        if "ItemProcessor" in state:
            found = asl_state(name, state["ItemProcessor"]["States"])
            if found:
                return found
    return {}


def retry_attempts(state: str) -> int:
    """Most attempts a task can make: the first plus every retrier's MaxAttempts."""
    return 1 + sum(retrier.get("MaxAttempts", 3) for retrier in asl_state(state).get("Retry", []))


LINK_KEY = b"k" * 64
# As long as a Lambda function URL: https://<32-character url-id>.lambda-url.<region>.on.aws/
ACTIONS_URL = "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-east-1.on.aws/"


def signed_links(user: str, notifying_for: int) -> dict[str, str]:
    from patterns_common.alert_action_links import links_for

    return links_for(LINK_KEY, ACTIONS_URL, alert_id="disk-full-web-1", user=user, expires_at=2_000_000_000 + notifying_for)


# --------------------------------------------------------------------------------------------------
# Fetch Alert Config: validation (pure)
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def config_logic() -> ModuleType:
    return load_lambda_module("alert_config", "alert_config_logic")


def test_config_of_a_complete_item_is_what_the_machine_loops_on(config_logic):
    # When
    config = config_logic.parse_alert_config(alert_item())
    # Then
    assert config.to_state() == {
        "alert_id": "disk-full-web-1",
        "message": "Disk above 90% on web-1",
        "levels": [["foo@example.com", "bar@example.com", "baz@example.com"]],
        "rounds": 3,
        "interval_seconds": 300,
        "start_delay_seconds": 0,
        "links": {},
        "schedules": [],
        "occurrence": None,  # no alarm raised it (no raised_at)
    }
    assert all(type(value) is int for value in (config.rounds, config.interval_seconds))


def test_escalation_levels_notify_level_k_in_round_k_and_the_last_level_after(config_logic):
    # Given: three levels, five rounds
    levels = [["oncall@example.com"], ["oncall@example.com", "lead@example.com"], ["U012AB3CD"]]
    item = alert_item(user_accounts=None, escalation=levels, notification_count=Decimal(5))
    # When
    config = config_logic.parse_alert_config(item)
    # Then: round k notifies level k; rounds 4 and 5 repeat the last level
    assert config.levels == levels
    assert config.level_sizes() == [1, 2, 1, 1, 1]
    assert config.users == ["oncall@example.com", "lead@example.com", "U012AB3CD"]


def test_each_user_gets_signed_links_valid_a_day_after_the_last_round(config_logic):
    # Given: 3 rounds 300 s apart, started 60 s late
    from patterns_common.alert_action_links import LINK_LIFETIME_SECONDS, verify

    signed = []
    # When
    config = config_logic.parse_alert_config(
        alert_item(), start_delay_seconds=60, links_for=lambda user, span: signed.append(span) or signed_links(user, span)
    )
    # Then: one pair per user, each verifying for that user and action
    assert sorted(config.links) == sorted(config.users)
    assert set(signed) == {60 + 2 * 300}
    for user, links in config.links.items():
        for action, url in links.items():
            claim = verify(LINK_KEY, url.split("?t=", 1)[1], now=0)
            assert (claim.alert_id, claim.user, claim.action) == ("disk-full-web-1", user, action)
    assert LINK_LIFETIME_SECONDS == 24 * 3600


def test_config_defaults_interval_message_and_status(config_logic):
    # Given: only the required attributes
    item = alert_item(interval_seconds=None, message=None, status=None)
    # When
    config = config_logic.parse_alert_config(item)
    # Then
    assert config.interval_seconds == 300
    assert config.message == "Alert disk-full-web-1 is active"


def test_map_form_user_accounts_are_notified_in_numeric_key_order(config_logic):
    # Given: the seed's map form; "10" sorts before "2" as text but not as a number
    accounts = {"10": "j@example.com", "2": "b@example.com", "1": "a@example.com", "backup": "z@example.com"}
    # When
    config = config_logic.parse_alert_config(alert_item(user_accounts=accounts))
    # Then: numbers in numeric order, then any other keys
    assert config.users == ["a@example.com", "b@example.com", "j@example.com", "z@example.com"]
    assert config.levels == [config.users]


@pytest.mark.parametrize(
    "overrides, field, problem",
    [
        ({"user_accounts": None}, "user_accounts", "is required"),
        ({"user_accounts": []}, "user_accounts", "at least one user"),
        ({"user_accounts": {}}, "user_accounts", "at least one user"),
        ({"user_accounts": "foo@example.com"}, "user_accounts", "must be a list or a map"),
        ({"user_accounts": {"foo@example.com"}}, "user_accounts", "not a set"),
        ({"user_accounts": ["a@example.com", Decimal(7)]}, "user_accounts[1]", "non-empty string"),
        ({"user_accounts": ["a@example.com", "  "]}, "user_accounts[1]", "non-empty string"),
        ({"user_accounts": ["x" * 255]}, "user_accounts[0]", "at most 254"),
        ({"user_accounts": {"1": "a@example.com", "2": ""}}, "user_accounts['2']", "non-empty string"),
        ({"user_accounts": ["a@example.com", "a@example.com"]}, "user_accounts[1]", "is listed twice (also user_accounts[0])"),
        ({"notification_count": None}, "notification_count", "is required"),
        ({"notification_count": Decimal(0)}, "notification_count", "must be an integer of at least 1"),
        ({"notification_count": Decimal("1.5")}, "notification_count", "must be an integer"),
        ({"notification_count": True}, "notification_count", "must be an integer"),
        ({"notification_count": "3"}, "notification_count", "must be an integer"),
        ({"interval_seconds": Decimal(-1)}, "interval_seconds", "from 0 to 86400"),
        ({"interval_seconds": Decimal(86_401)}, "interval_seconds", "from 0 to 86400"),
        ({"interval_seconds": "300"}, "interval_seconds", "must be an integer"),
        ({"notification_count": Decimal(3), "interval_seconds": Decimal(50_000)}, "interval_seconds", "2 waits"),
        ({"message": ""}, "message", "non-empty string"),
        ({"message": "x" * 4001}, "message", "at most 4000"),
        ({"message": Decimal(1)}, "message", "non-empty string"),
        ({"status": "snoozed"}, "status", "must be one of active, acknowledged, resolved"),
        ({"status": Decimal(1)}, "status", "must be one of"),
        ({"escalation": [["a@example.com"]]}, "escalation", "not both"),
        ({"user_accounts": None, "escalation": []}, "escalation", "non-empty list of levels"),
        ({"user_accounts": None, "escalation": "a@example.com"}, "escalation", "non-empty list of levels"),
        ({"user_accounts": None, "escalation": [["a@example.com"], []]}, "escalation[1]", "non-empty list"),
        ({"user_accounts": None, "escalation": [["a@example.com"], "b@example.com"]}, "escalation[1]", "non-empty list"),
        ({"user_accounts": None, "escalation": [["a@example.com", ""]]}, "escalation[0][1]", "non-empty string"),
        ({"user_accounts": None, "escalation": [["a@example.com", "a@example.com"]]}, "escalation[0][1]", "is listed twice (also escalation[0][0])"),
        # issue 40: a field the alert does not read would be ignored (the default interval run instead)
        ({"interval_secs": Decimal(60)}, "interval_secs", "is not a field of an alert item, and would be ignored (did you mean interval_seconds?)"),
        ({"team": "payments"}, "team", "is not a field of an alert item, and would be ignored: a person writes alert_id, "),
        # issue 40: a schedule spelled otherwise would be posted as a person of that name, mentioning nobody
        ({"user_accounts": ["a@example.com", "Schedule:primary"]}, "user_accounts[1]", "not spelled schedule:<id>"),
        ({"user_accounts": None, "escalation": [["schedules:primary"]]}, "escalation[0][0]", "not spelled schedule:<id>"),
        ({"user_accounts": None, "escalation": [["a@example.com"], ["schedule :primary"]]}, "escalation[1][0]", "not spelled"),
        ({"user_accounts": ["SCHEDULE: primary"]}, "user_accounts[0]", "not spelled schedule:<id>"),
        ({"user_accounts": ["a@example.com", " schedule:primary"]}, "user_accounts[1]", "not spelled schedule:<id>"),
        ({"user_accounts": ["schedule: primary"]}, "user_accounts[0]", "schedule:<id> names an on-call schedule: 1 to 64 letters"),
    ],
)
def test_invalid_config_names_the_field_and_the_problem(config_logic, overrides, field, problem):
    # When
    with pytest.raises(config_logic.InvalidAlertConfig) as raised:
        config_logic.parse_alert_config(alert_item(**overrides))
    # Then: the message (the execution's cause) starts with the field
    assert str(raised.value).startswith(f"{field}: ")
    assert problem in str(raised.value)


@pytest.mark.parametrize("event", [{}, {"alert_id": ""}, {"alert_id": "  "}, {"alert_id": 7}, {"alert_id": "x" * 257}, ["x"]])
def test_execution_input_without_a_usable_alert_id_is_rejected(config_logic, event):
    with pytest.raises(config_logic.InvalidAlertConfig, match=r"^alert_id: "):
        config_logic.read_input(event)


@pytest.mark.parametrize("delay, accepted", [(0, True), (900, True), (901, False), (-1, False), ("5", False), (True, False)])
def test_a_start_delay_in_the_input_is_bounded(config_logic, delay, accepted):
    event = {"alert_id": "disk-full-web-1", "start_delay_seconds": delay}
    if accepted:
        assert config_logic.read_input(event).start_delay_seconds == delay
    else:
        with pytest.raises(config_logic.InvalidAlertConfig, match=r"^start_delay_seconds: "):
            config_logic.read_input(event)


@pytest.mark.parametrize(
    ("value", "shown"),
    [(Decimal(0), "got 0"), (Decimal("-3"), "got -3"), (Decimal("2.50"), "got 2.5"), ("3", "got '3'"), (Decimal("-1E+5"), "got -100000")],
)
def test_a_bad_count_is_quoted_as_written_in_the_item(config_logic, value, shown):
    # DynamoDB hands numbers over as Decimal; the message shows 0, not Decimal('0').
    with pytest.raises(config_logic.InvalidAlertConfig, match=rf"^notification_count: must be an integer of at least 1, {shown}$"):
        config_logic.parse_alert_config(alert_item(notification_count=value))


def test_execution_input_with_another_field_is_rejected_naming_it(config_logic):
    # The config lives in the item; a count in the input would be silently ignored.
    with pytest.raises(config_logic.InvalidAlertConfig, match=r"^notification_count: is not an input field"):
        config_logic.read_input({"alert_id": "disk-full-web-1", "notification_count": 1})


def test_rounds_that_could_exceed_the_history_limit_are_rejected_with_the_largest_that_fits(config_logic):
    # Given: 60 users; every attempt of every notification may fail and be retried
    users = [f"user{i}@example.com" for i in range(60)]
    item = alert_item(user_accounts=users, notification_count=Decimal(1000), interval_seconds=Decimal(0))
    # When
    with pytest.raises(config_logic.InvalidAlertConfig) as raised:
        config_logic.parse_alert_config(item)
    # Then: the largest round count named in the message is accepted, one more is not
    message = str(raised.value)
    assert message.startswith("notification_count: ") and "25,000 history events" in message
    most = int(re.search(r"at most (\d+) rounds", message).group(1))
    assert (
        config_logic.worst_case_history_events([60] * most) <= 25_000 < config_logic.worst_case_history_events([60] * (most + 1))
    )
    assert config_logic.parse_alert_config({**item, "notification_count": Decimal(most)}).rounds == most


def test_too_many_users_for_one_round_are_rejected_on_user_accounts(config_logic):
    # Given
    users = [f"user{i}@example.com" for i in range(1000)]
    # Then
    with pytest.raises(config_logic.InvalidAlertConfig, match=r"^user_accounts: 1000 users .* even in one round"):
        config_logic.parse_alert_config(alert_item(user_accounts=users, notification_count=Decimal(1)))


def test_long_user_names_are_bounded_by_the_payload_limit(config_logic):
    # Given: few enough users for the history limit, but 254-character names fill the payload
    users = [f"{i:04d}" + "u" * 250 for i in range(249)]
    item = alert_item(user_accounts=users, notification_count=Decimal(1), interval_seconds=Decimal(0))
    # Then
    assert config_logic.worst_case_history_events([249]) <= 25_000
    with pytest.raises(config_logic.InvalidAlertConfig, match=r"^user_accounts: .*256 KiB payload limit"):
        config_logic.parse_alert_config(item)


def test_the_worst_case_state_estimate_bounds_the_state_the_machine_builds(config_logic):
    # Given: an accepted config at its limit (two levels, each user with signed links), every
    # notification failed with a long error name
    users = [f"{i:03d}-\u00e9\"<{'u' * 200}" for i in range(40)]
    item = alert_item(
        user_accounts=None, escalation=[users[:10], users], interval_seconds=Decimal(0), notification_count=Decimal(1000)
    )
    config = _largest_accepted(config_logic, item, links_for=signed_links)
    most = config.rounds
    failures = [
        {"round": r, "user": u, "error": "E" * config_logic.MAX_ERROR_NAME_LENGTH}
        for r in range(1, most + 1)
        for u in config.levels[min(r, 2) - 1]
    ]
    # When: what the execution holds when the last round's Map ends: its variables, that round's
    # results, and a caught error inside it
    state = {
        "variables": {
            "config": {**config.to_state(), "status": "active", "acknowledged_by": None, "resolved_by": None},
            "status": "active",
            "acted_by": {},
            "outcome": {"stopped_reason": "count_reached"},
            "rounds_done": most,
            "due": False,
            "sent": 0,
            "failed": failures,
        },
        "result": failures[-len(users):],
        "errorOutput": {"Error": "E" * 64, "Cause": "c" * 32_000},
    }
    # Then
    actual = len(json.dumps(state, ensure_ascii=False).encode())
    assert actual <= config_logic.worst_case_state_bytes(config) <= config_logic.MAX_PAYLOAD_BYTES


def test_the_worst_case_state_estimate_counts_the_people_a_schedule_round_pages(config_logic):
    # Given: an accepted config at its limit whose first level names a schedule (a gap there pages the
    # next level too), links signed for an occurrence, the longest message
    from patterns_common.alert_action_links import links_for

    def occurrence_links(user: str, notifying_for: int) -> dict[str, str]:
        return links_for(LINK_KEY, ACTIONS_URL, alert_id="disk-full-web-1", user=user,
                         expires_at=2_000_000_000 + notifying_for, occurrence="2026-03-04T18:55:00.000Z")

    users = [f"{i:03d}-\u00e9\"<{'u' * 200}" for i in range(40)]
    item = alert_item(
        user_accounts=None, escalation=[["schedule:primary", *users[:9]], users], interval_seconds=Decimal(0),
        notification_count=Decimal(1000), message="m" * config_logic.MAX_MESSAGE_LENGTH,
    )
    config = _largest_accepted(config_logic, item, links_for=occurrence_links)
    most = config.rounds
    failures = [
        {"round": r, "user": u, "error": "E" * config_logic.MAX_ERROR_NAME_LENGTH}
        for r in range(1, most + 1)
        for u in config.levels[min(r, 2) - 1]
    ]
    # When: Find Who Is On Call's answer for a round that pages an on-call member with the longest
    # account, everyone else in the first level and the whole second one, with a note on the schedule
    member = "m" * config_logic.MAX_USER_LENGTH
    paged = [member, *users]
    paging = {
        "users": paged,
        "links": {user: occurrence_links(user, 0) for user in paged},
        "message": f"{config.message}\nSchedule primary could not be read (the on-call table has no such schedule). "
        "The next escalation level is paged in its place.",
        "failed": [],
    }
    state = {
        "variables": {
            "config": {**config.to_state(), "status": "active", "acknowledged_by": None, "resolved_by": None},
            "status": "active",
            "acted_by": {},
            "outcome": {"stopped_reason": "count_reached"},
            "rounds_done": most,
            "due": False,
            "sent": 0,
            "failed": failures,
            "paging": paging,
        },
        "result": failures[-len(users):],
        "errorOutput": {"Error": "E" * 64, "Cause": "c" * 32_000},
    }
    # Then
    actual = len(json.dumps(state, ensure_ascii=False).encode())
    assert actual <= config_logic.worst_case_state_bytes(config) <= config_logic.MAX_PAYLOAD_BYTES


def _largest_accepted(config_logic, item, **kwargs):
    """Lower notification_count to what each rejection names as the most, until the config is accepted."""
    while True:
        try:
            return config_logic.parse_alert_config(item, **kwargs)
        except config_logic.InvalidAlertConfig as rejected:
            most = re.search(r"at most (\d+) rounds", str(rejected))
            assert most and int(most.group(1)) < item["notification_count"], rejected
            item = {**item, "notification_count": Decimal(most.group(1))}


@pytest.mark.parametrize(
    "constant, state",
    [
        ("FETCH_MAX_ATTEMPTS", "Fetch Alert Config"),
        ("READ_STATUS_MAX_ATTEMPTS", "Read Alert Status"),
        ("NOTIFY_MAX_ATTEMPTS", "Notify User"),
        ("RELEASE_MAX_ATTEMPTS", "End Escalation"),
        ("FIND_ON_CALL_MAX_ATTEMPTS", "Find Who Is On Call"),
    ],
)
def test_history_budget_uses_the_retry_budgets_the_asl_declares(config_logic, constant, state):
    assert getattr(config_logic, constant) == retry_attempts(state)


def test_the_longest_accepted_wait_fits_in_the_machine_timeout(config_logic):
    assert ASL["TimeoutSeconds"] >= 2 * config_logic.MAX_TOTAL_WAIT_SECONDS


# Boundaries of every documented range: the last value inside is accepted, the first outside is not.
@pytest.mark.parametrize(
    "overrides, accepted",
    [
        ({"notification_count": Decimal(1)}, True),
        ({"interval_seconds": Decimal(0)}, True),
        ({"interval_seconds": Decimal(86_400), "notification_count": Decimal(2)}, True),
        ({"interval_seconds": Decimal(86_400), "notification_count": Decimal(3)}, False),  # 2 waits of a day
        ({"interval_seconds": Decimal(43_200), "notification_count": Decimal(3)}, True),  # exactly a day of waits
        ({"interval_seconds": Decimal(43_201), "notification_count": Decimal(3)}, False),
        ({"message": "x" * 4000}, True),
        ({"message": "x" * 4001}, False),
        ({"user_accounts": ["x" * 254]}, True),
        ({"user_accounts": ["x" * 255]}, False),
        ({"alert_id": "x" * 256}, True),
    ],
)
def test_every_documented_range_includes_its_bounds(config_logic, overrides, accepted):
    item = alert_item(**overrides)
    if accepted:
        config = config_logic.parse_alert_config(item)
        assert config.rounds == int(item["notification_count"])
        assert config.interval_seconds == int(item["interval_seconds"])
    else:
        with pytest.raises(config_logic.InvalidAlertConfig):
            config_logic.parse_alert_config(item)


def test_an_alert_id_of_the_longest_length_is_a_valid_input(config_logic):
    assert config_logic.read_input({"alert_id": "x" * 256}).alert_id == "x" * 256
    assert config_logic.read_input({"alert_id": "disk-full-web-1"}) == config_logic.ExecutionInput("disk-full-web-1", 0)


@pytest.mark.parametrize(
    "event, message",
    [
        ({}, 'alert_id: the execution input must be {"alert_id": "..."} with 1 to 256 characters'),
        (
            {"alert_id": "a", "rounds": 2},
            'rounds: is not an input field: the execution input is {"alert_id": "..."} (and optionally '
            '"start_delay_seconds") and the rest of the config lives in the alert item',
        ),
        ({"alert_id": "a", "start_delay_seconds": 901}, "start_delay_seconds: must be an integer from 0 to 900, got 901"),
    ],
)
def test_a_rejected_execution_input_says_what_the_input_may_hold(config_logic, event, message):
    # The message is the execution's cause: the person who started it reads it in the console.
    with pytest.raises(config_logic.InvalidAlertConfig) as raised:
        config_logic.read_input(event)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"notification_count": None}, "notification_count: is required (an integer of at least 1)"),
        ({"interval_seconds": Decimal("0.5")}, "interval_seconds: must be an integer from 0 to 86400, got 0.5"),
        ({"status": "snoozed"}, "status: must be one of active, acknowledged, resolved (or absent, meaning active)"),
        ({"message": ""}, "message: must be a non-empty string of at most 4000 characters"),
        # Named by position, not by account: the message is the execution's cause, and no log holds an account
        ({"user_accounts": ["a@example.com", "a@example.com"]}, "user_accounts[1]: is listed twice (also user_accounts[0])"),
        ({"user_accounts": {"a@example.com"}}, "user_accounts: must be a list or a map, not a set"),
        ({"user_accounts": [""]}, "user_accounts[0]: must be a non-empty string of at most 254 characters"),
        ({"user_accounts": []}, "user_accounts: must name at least one user"),
        (
            {"user_accounts": None},
            'user_accounts: is required (a list, or a map such as {"1": "foo@example.com"}), unless escalation is given',
        ),
        (
            {"escalation": [["a@example.com"]]},
            "escalation: give either escalation (a list of levels) or user_accounts (one level), not both",
        ),
        (
            {"user_accounts": None, "escalation": []},
            'escalation: must be a non-empty list of levels, each a list of accounts such as [["foo@example.com"]]',
        ),
        (
            {"user_accounts": None, "escalation": [["a@example.com"], []]},
            "escalation[1]: must be a non-empty list of accounts (a level notifies at least one)",
        ),
        (
            {"notification_count": Decimal(3), "interval_seconds": Decimal(50_000)},
            "interval_seconds: 2 waits of 50000 s add up to more than the 86400 s an alert may wait",
        ),
    ],
)
def test_a_rejected_item_says_exactly_what_to_fix(config_logic, overrides, message):
    with pytest.raises(config_logic.InvalidAlertConfig) as raised:
        config_logic.parse_alert_config(alert_item(**overrides))
    assert str(raised.value) == message


def test_the_dispatchers_start_delay_is_carried_in_the_config(config_logic):
    # Given: the dispatcher spread this start by 900 s (the most it spreads)
    # When
    config = config_logic.parse_alert_config(alert_item(), start_delay_seconds=900)
    # Then: the machine's first wait reads it from the config
    assert config.start_delay_seconds == 900
    assert config.to_state()["start_delay_seconds"] == 900


@pytest.mark.parametrize("raised_at, occurrence", [("2026-03-04T18:55:00.000Z", "2026-03-04T18:55:00.000Z"), (None, None), (7, None)])
def test_fetched_links_are_signed_for_the_occurrence_the_alarm_raised_and_last_a_day_past_the_last_round(
    config_logic, raised_at, occurrence
):
    # docs/alert-lifecycle.md: a link acts only on the occurrence its message was about (the item's raised_at,
    # a text; none when no alarm raised it), and stays valid a day after the last round that can send it
    from urllib.parse import parse_qs, urlparse

    from patterns_common.alert_action_links import TOKEN_PARAMETER, verify

    # Given: 3 rounds 300 s apart after a 30 s start delay: the last round goes at 630 s
    item = alert_item(raised_at=raised_at)
    # When
    config = config_logic.fetched_config(item, start_delay_seconds=30, key=LINK_KEY, actions_url=ACTIONS_URL, now=1_900_000_000.7)
    # Then
    assert config.occurrence == occurrence
    claims = [verify(LINK_KEY, parse_qs(urlparse(url).query)[TOKEN_PARAMETER][0], now=1_900_000_000)
              for links in config.links.values() for url in links.values()]
    assert len(claims) == 6 and {claim.occurrence for claim in claims} == {occurrence}
    assert {claim.expires_at for claim in claims} == {1_900_000_000 + 630 + 24 * 3600}


def test_an_item_without_a_status_is_active(config_logic):
    assert config_logic.status_of({"alert_id": "a"}) == "active"
    assert config_logic.status_of({"alert_id": "a", "status": "resolved"}) == "resolved"


# The history an execution records, event by event, as the Step Functions API names them
# (https://docs.aws.amazon.com/step-functions/latest/apireference/API_HistoryEvent.html): the model
# the estimate must agree with, written out path by path through the machine's states.
def _task_events(attempts: int, failed: bool) -> list[str]:
    outcome = "TaskFailed" if failed else "TaskSucceeded"
    return ["TaskStateEntered", *(["TaskScheduled", "TaskStarted", outcome] * attempts), "TaskStateExited"]


def _execution_history(
    level_sizes, *, fetch, read, notify, release, delayed, notifications_failed, released, deferred=False, find=0
) -> list[str]:
    choice = ["ChoiceStateEntered", "ChoiceStateExited"]
    between_rounds = ["WaitStateEntered", "WaitStateExited", *_task_events(read, False), *choice]
    events = ["ExecutionStarted", *_task_events(fetch, False), *choice]
    if delayed:
        events += between_rounds
    for round_, users in enumerate(level_sizes):
        if round_:
            events += between_rounds
        if find:  # an alert naming a schedule: "Find Who Is On Call" before the round's Map, ``find`` attempts
            events += _task_events(find, False)
        events += ["MapStateEntered", "MapStateStarted"]
        for _ in range(users):
            events += ["MapIterationStarted"]
            if deferred:  # every attempt until SlackChannelBusy, caught into "Wait For The Channel's Turn",
                # then Notify User again (its retries counted afresh: RetryCount is the state entry's)
                events += [*_task_events(notify, True), "WaitStateEntered", "WaitStateExited"]
            events += _task_events(notify, notifications_failed)
            if notifications_failed:
                events += ["PassStateEntered", "PassStateExited"]  # User Was Not Notified
            events += ["MapIterationSucceeded"]
        events += ["MapStateSucceeded", "MapStateExited", *choice]
    if released:
        events += [*_task_events(release, False), "ExecutionSucceeded"]
    else:
        events += ["FailStateEntered", "ExecutionFailed"]
    return events


@pytest.mark.parametrize("level_sizes", [[1], [3], [1, 2, 5], [60] * 4])
@pytest.mark.parametrize("fetch, read, notify, release", [(1, 1, 1, 1), (4, 4, 8, 4), (2, 3, 5, 7)])
@pytest.mark.parametrize("delayed", [False, True])
@pytest.mark.parametrize("notifications_failed, released", [(False, True), (True, False), (True, True)])
def test_the_history_estimate_counts_every_event_of_the_execution(
    config_logic, level_sizes, fetch, read, notify, release, delayed, notifications_failed, released
):
    # Given: the events of that execution, listed one by one
    expected = _execution_history(
        level_sizes,
        fetch=fetch,
        read=read,
        notify=notify,
        release=release,
        delayed=delayed,
        notifications_failed=notifications_failed,
        released=released,
    )
    # Then
    assert (
        config_logic.history_events(
            level_sizes,
            fetch_attempts=fetch,
            read_attempts=read,
            notify_attempts=notify,
            release_attempts=release,
            delayed=delayed,
            notifications_failed=notifications_failed,
            released=released,
        )
        == len(expected)
    )


def _worst_history(level_sizes, schedules: bool = False) -> list[str]:
    """The worst path: a start delay, every attempt the ASL allows, every notification deferred once
    by the webhook's pace then failed, and the release's Catch going to the Succeed state "Escalation Ended";
    for an alert naming schedules, every attempt of "Find Who Is On Call" before each round too."""
    events = _execution_history(
        level_sizes,
        fetch=retry_attempts("Fetch Alert Config"),
        read=retry_attempts("Read Alert Status"),
        notify=retry_attempts("Notify User"),
        release=retry_attempts("End Escalation"),
        delayed=True,
        notifications_failed=True,
        released=True,
        deferred=True,
        find=retry_attempts("Find Who Is On Call") if schedules else 0,
    )
    events[-1:-1] = ["SucceedStateEntered", "SucceedStateExited"]
    return events


@pytest.mark.parametrize("level_sizes", [[1], [1, 2, 5], [60] * 4])
@pytest.mark.parametrize("schedules", [False, True])
def test_the_worst_case_is_every_retry_failing_and_the_release_caught(config_logic, level_sizes, schedules):
    # Given: the worst path
    expected = _worst_history(level_sizes, schedules)
    # Then
    assert config_logic.worst_case_history_events(level_sizes, schedules=schedules) == len(expected)


@pytest.mark.parametrize("level_sizes, find", [([1], 1), ([1, 2, 5], 3), ([60] * 4, 11)])
def test_the_history_estimate_counts_find_who_is_on_call_before_every_round(config_logic, level_sizes, find):
    attempts = {"fetch": 2, "read": 3, "notify": 5, "release": 4}
    expected = _execution_history(level_sizes, **attempts, delayed=True, notifications_failed=True, released=True, find=find)
    assert config_logic.history_events(
        level_sizes, fetch_attempts=2, read_attempts=3, notify_attempts=5, release_attempts=4, delayed=True,
        notifications_failed=True, released=True, find_on_call_attempts=find) == len(expected)


def test_an_alert_naming_a_schedule_fits_the_rounds_whose_history_with_find_who_is_on_call_fits(config_logic):
    # Given: one level, a schedule (its one member) and 9 people: 10 paged a round, a lookup before each
    most = max(r for r in range(1, 200) if len(_worst_history([10] * r, schedules=True)) <= 25_000)
    assert most < max(r for r in range(1, 200) if len(_worst_history([10] * r)) <= 25_000)  # the lookups cost rounds
    users = [f"u{i}@example.com" for i in range(9)]
    item = alert_item(user_accounts=None, escalation=[["schedule:primary", *users]], notification_count=Decimal(most + 1),
                      interval_seconds=Decimal(0))
    # When
    with pytest.raises(config_logic.InvalidAlertConfig) as raised:
        config_logic.parse_alert_config(item)
    # Then
    assert str(raised.value) == f"notification_count: at most {most} rounds of 9 users and 1 schedule fit within 25,000 history events, got {most + 1}"
    assert config_logic.parse_alert_config({**item, "notification_count": Decimal(most)}).rounds == most


def test_the_most_rounds_that_fit_25000_events_is_the_model_s(config_logic):
    # Given: 10 users a round, the worst path; the most rounds whose history the model keeps under the limit
    most = max(r for r in range(1, 200) if len(_worst_history([10] * r)) <= 25_000)
    item = alert_item(
        user_accounts=[f"u{i}@example.com" for i in range(10)], notification_count=Decimal(most + 1), interval_seconds=Decimal(0)
    )
    # When
    with pytest.raises(config_logic.InvalidAlertConfig) as raised:
        config_logic.parse_alert_config(item)
    # Then
    assert str(raised.value) == f"notification_count: at most {most} rounds of 10 users fit within 25,000 history events, got {most + 1}"
    assert config_logic.parse_alert_config({**item, "notification_count": Decimal(most)}).rounds == most


def test_too_many_users_for_one_pass_through_the_levels_are_rejected_on_escalation(config_logic):
    # Given: two levels whose single pass already exceeds the history limit
    levels = [[f"a{i}@example.com" for i in range(500)], [f"b{i}@example.com" for i in range(500)]]
    # Then
    with pytest.raises(config_logic.InvalidAlertConfig) as raised:
        config_logic.parse_alert_config(alert_item(user_accounts=None, escalation=levels, notification_count=Decimal(2)))
    assert str(raised.value) == "escalation: 1000 users cannot be notified within 25,000 history events even once through the levels"
    with pytest.raises(config_logic.InvalidAlertConfig) as raised:
        config_logic.parse_alert_config(alert_item(user_accounts=levels[0] + levels[1], notification_count=Decimal(1)))
    assert str(raised.value) == "user_accounts: 1000 users cannot be notified within 25,000 history events even in one round"


def _state_bytes(value) -> int:
    return len(json.dumps(value, separators=(",", ":")))


def _allowances_config_and_failures(config_logic, config, failed, largest_round: int) -> int:
    """The estimate without $paging: the fixed allowances, the config and the alert id, the failure list
    and the largest round's results (``largest_round``, each list counted without its brackets, with a
    comma after every entry)."""
    return (
        config_logic.STATE_OVERHEAD_BYTES
        + config_logic.CAUGHT_CAUSE_BYTES
        + _state_bytes(config.to_state())
        + _state_bytes(config.alert_id)
        + _state_bytes(failed) - 1
        + largest_round - 1
    )


@pytest.mark.parametrize("rounds", [1, 2, 5])
def test_the_payload_estimate_holds_every_failure_of_every_round(config_logic, rounds):
    # Given: two levels, so rounds after the second repeat the last level
    levels = [["first@example.com"], [f"user{i:02d}@example.com" for i in range(12)]]
    config = config_logic.parse_alert_config(
        alert_item(user_accounts=None, escalation=levels, notification_count=Decimal(rounds), interval_seconds=Decimal(0))
    )
    error = "E" * config_logic.MAX_ERROR_NAME_LENGTH
    failed = [
        {"round": r, "user": u, "error": error} for r in range(1, rounds + 1) for u in levels[min(r, len(levels)) - 1]
    ]
    largest_round = max(
        _state_bytes([{"round": r, "user": u, "error": error} for u in level]) for r, level in enumerate(levels, start=1)
    )
    # Then: the fixed allowances, the config and the alert id, the failure list and the largest round's
    # results (each list counted without its brackets, with a comma after every entry)
    assert config_logic.worst_case_state_bytes(config) == _allowances_config_and_failures(config_logic, config, failed, largest_round)
    assert config_logic.STATE_OVERHEAD_BYTES == 4096 and config_logic.CAUGHT_CAUSE_BYTES == 32 * 1024


def test_a_worst_history_of_exactly_25000_events_fits(config_logic):
    # Step Functions keeps up to 25,000 history events per execution (Step Functions quotas, "Maximum
    # execution history size"): an alert whose worst case is exactly that many is accepted.
    # Given: one person, then a schedule beside three people (a schedule on the last level falls through
    # to nobody): 55 rounds page 1 + 54 x 4 accounts, with a lookup before each round
    sizes = [1] + [4] * 54
    assert len(_worst_history(sizes, schedules=True)) == 25_000
    item = alert_item(user_accounts=None, escalation=[["u0@example.com"], ["schedule:primary", "u1@example.com", "u2@example.com",
                      "u3@example.com"]], notification_count=Decimal(55), interval_seconds=Decimal(0))
    # Then
    config = config_logic.parse_alert_config(item)
    assert config.level_sizes() == sizes and config.rounds == 55
    with pytest.raises(config_logic.InvalidAlertConfig, match="^notification_count: at most 55 rounds"):
        config_logic.parse_alert_config({**item, "notification_count": Decimal(56)})


def test_the_largest_round_whose_worst_history_fits_is_accepted_and_one_more_user_is_not(config_logic):
    # Given: by hand, the worst one-round path: the execution's start and end (2), Fetch Alert Config
    # (2 + 3 x 11 attempts), the first Choice (2), the start delay's Wait, status read (2 + 3 x 4) and
    # Choice (18), the Map (4) and the Choice after it (2), the release (2 + 3 x 4) and its Catch's
    # Succeed (2): 79; and per user 100: the iteration (2), Notify User twice around the channel's
    # Wait (2 x (2 + 3 x 15) + 2) and the Pass of its failure (2). 249 users: 24,979 events; 250: 25,079
    assert len(_worst_history([249])) == 79 + 249 * 100 == 24_979
    item = alert_item(user_accounts=[f"u{i:03d}@example.com" for i in range(250)], interval_seconds=Decimal(0))
    # Then
    assert config_logic.parse_alert_config({**item, "user_accounts": item["user_accounts"][:249], "notification_count": Decimal(1)}).rounds == 1
    with pytest.raises(config_logic.InvalidAlertConfig) as raised:
        config_logic.parse_alert_config({**item, "notification_count": Decimal(1)})
    assert str(raised.value) == "user_accounts: 250 users cannot be notified within 25,000 history events even in one round"


def test_a_config_whose_worst_state_is_exactly_256_kib_is_accepted(config_logic):
    # Given: as many long names as fit, and a message whose length brings the estimate to exactly 256 KiB
    def item_of(count):
        return alert_item(user_accounts=[f"{i:03d}" + "u" * 251 for i in range(count)], notification_count=Decimal(1), message="m")

    def estimate(item):
        return config_logic.worst_case_state_bytes(config_logic.AlertConfig("disk-full-web-1", item["message"], [item["user_accounts"]], 1, 300))

    count = next(n for n in range(225, 300) if estimate(item_of(n + 1)) > 256 * 1024)
    item = item_of(count)
    short = estimate(item)
    exact = {**item, "message": "m" * (1 + 256 * 1024 - short)}
    # Then
    assert config_logic.worst_case_state_bytes(config_logic.parse_alert_config(exact)) == 256 * 1024
    with pytest.raises(config_logic.InvalidAlertConfig, match=rf"^user_accounts: {count} users cannot be notified within the 256 KiB payload limit even in one round$"):
        config_logic.parse_alert_config({**exact, "message": exact["message"] + "m"})


@pytest.mark.parametrize("largest", [9, 10])
def test_the_payload_estimate_numbers_each_level_s_round_from_one(config_logic, largest):
    # Given: ten levels, the largest being the ninth (round 9, one digit) or the tenth (round 10, two)
    levels = [[f"l{level}u{u}@example.com" for u in range(5 if level == largest else 1)] for level in range(1, 11)]
    config = config_logic.parse_alert_config(
        alert_item(user_accounts=None, escalation=levels, notification_count=Decimal(10), interval_seconds=Decimal(0))
    )
    error = "E" * config_logic.MAX_ERROR_NAME_LENGTH
    failed = [{"round": r, "user": u, "error": error} for r in range(1, 11) for u in levels[r - 1]]
    largest_round = _state_bytes([{"round": largest, "user": u, "error": error} for u in levels[largest - 1]])
    assert config_logic.worst_case_state_bytes(config) == _allowances_config_and_failures(config_logic, config, failed, largest_round)


def test_the_payload_estimate_adds_a_schedule_round_s_people_their_links_its_message_and_a_note_per_schedule(config_logic):
    # Given: two schedules, the first beside one person (a gap there pages the next level too: round 1
    # pages both schedules' members and a, b, c), every user with signed links
    levels = [["schedule:primary", "a@example.com"], ["schedule:backup", "b@example.com", "c@example.com"]]
    config = config_logic.parse_alert_config(
        alert_item(user_accounts=None, escalation=levels, notification_count=Decimal(2), interval_seconds=Decimal(0)),
        links_for=signed_links,
    )
    assert config.level_sizes() == [5, 3] and config.schedules == ["primary", "backup"]
    error = "E" * config_logic.MAX_ERROR_NAME_LENGTH
    failed = [{"round": r, "user": u, "error": error} for r in (1, 2) for u in levels[r - 1]]
    largest_round = max(_state_bytes([{"round": r, "user": u, "error": error} for u in level]) for r, level in enumerate(levels, start=1))
    # $paging, Find Who Is On Call's answer: each person paged in "users" (quoted, a comma) and as the key
    # of their links (quoted, a colon), their links, a comma. An on-call member is unknown at fetch: counted
    # as 254 control characters, each written \u0000 in JSON (RFC 8259, section 7), 6 bytes, more than any
    # character takes in UTF-8, links signed for that account included. Then the round's message, and a
    # note on each schedule of PAGING_NOTE_BYTES
    largest = "\x00" * 254
    assert _state_bytes(largest) == 6 * 254 + 2

    def person(account, links):
        return (_state_bytes(account) + 1) + (_state_bytes(account) + 1) + _state_bytes(links) + 1

    on_call = person(largest, signed_links(largest, 300))
    round_1 = 2 * on_call + sum(person(u, config.links[u]) for u in ("a@example.com", "b@example.com", "c@example.com"))
    paging = round_1 + _state_bytes(config.message) + 2 * config_logic.PAGING_NOTE_BYTES
    # Then
    assert config_logic.worst_case_state_bytes(config) == _allowances_config_and_failures(config_logic, config, failed, largest_round) + paging


def test_an_alert_whose_levels_name_only_schedules_is_accepted_only_as_far_as_its_round_fits_the_payload_limit(config_logic):
    # Given: alerts of schedules alone in one level, the longest id, message and occurrence, links signed
    # for the occurrence (Find Who Is On Call signs the on-call members' links for it too)
    from patterns_common.alert_action_links import links_for

    alert_id = "a" * config_logic.MAX_ALERT_ID_LENGTH

    def occurrence_links(user: str, notifying_for: int) -> dict[str, str]:
        return links_for(LINK_KEY, ACTIONS_URL, alert_id=alert_id, user=user,
                         expires_at=2_000_000_000 + notifying_for, occurrence="2026-03-04T18:55:00.000Z")

    def accepted(schedules: int):
        item = alert_item(alert_id=alert_id, user_accounts=None, notification_count=Decimal(1),
                          escalation=[[f"schedule:{i:02d}" + "s" * 62 for i in range(schedules)]],
                          message="m" * config_logic.MAX_MESSAGE_LENGTH)
        try:
            return config_logic.parse_alert_config(item, links_for=occurrence_links)
        except config_logic.InvalidAlertConfig as refused:
            assert str(refused) == f"escalation: {schedules} schedules cannot be notified within the 256 KiB payload limit even in one round"
            return None

    # When: as many schedules as one level may name (99, as a person can list them) and the most accepted
    assert accepted(99) is None
    most = max(n for n in range(1, 99) if accepted(n) is not None)
    config = accepted(most)
    # Then: the round pages one member per schedule, each of the longest account in JSON (254 control
    # characters, \u0000 each: RFC 8259, section 7) with their links, and a note on every schedule; the state
    # it reaches is within the estimate, and the estimate within the limit
    members = [f"{i:02d}" + "\x00" * 252 for i in range(most)]
    note = "Schedule {} could not be read (the on-call table has no such schedule). The next escalation level is paged in its place."
    paging = {
        "users": members,
        "links": {member: occurrence_links(member, 0) for member in members},
        "message": config.message + "".join("\n" + note.format(s) for s in config.schedules),
        "failed": [],
    }
    state = {"variables": {"config": config.to_state(), "status": "active", "paging": paging, "failed": []},
             "errorOutput": {"Error": "E" * 64, "Cause": "c" * 32_000}}
    actual = len(json.dumps(state, ensure_ascii=False).encode())
    assert actual <= config_logic.worst_case_state_bytes(config) <= config_logic.MAX_PAYLOAD_BYTES


# --------------------------------------------------------------------------------------------------
# Fetch Alert Config: handler with moto
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def alert_table(monkeypatch):
    monkeypatch.setenv("ALERT_TABLE_NAME", "alerts")
    with mock_aws():
        secret = boto3.client("secretsmanager").create_secret(Name="action-link-key", SecretString=LINK_KEY.decode())
        monkeypatch.setenv("ACTION_LINK_KEY_SECRET_ARN", secret["ARN"])
        parameters.clear_caches()
        table = boto3.resource("dynamodb").create_table(
            TableName="alerts",
            KeySchema=[{"AttributeName": "alert_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "alert_id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield table
    parameters.clear_caches()


@pytest.fixture
def executions():
    """Start executions of a machine in moto (they stay RUNNING until stopped): claim holders."""
    stepfunctions = boto3.client("stepfunctions")
    machine = stepfunctions.create_state_machine(
        name="alerts", definition='{"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}',
        roleArn="arn:aws:iam::123456789012:role/sfn",
    )["stateMachineArn"]
    return lambda name: stepfunctions.start_execution(stateMachineArn=machine, name=name)["executionArn"]


def fetch_event(alert_id: str, execution_arn: str = "arn:aws:states:us-east-1:123456789012:execution:alerts:me") -> dict:
    """What Fetch Alert Config's task sends: the execution input, the execution's ARN, the endpoint's URL."""
    return {"input": {"alert_id": alert_id}, "execution_arn": execution_arn, "actions_url": ACTIONS_URL}


def test_fetch_handler_returns_the_config_of_a_map_form_item_with_signed_links(alert_table):
    # Given: the item as the seed stores it
    from patterns_common.alert_action_links import verify

    alert_table.put_item(
        Item={
            "alert_id": "cpu-high",
            "notification_count": 2,
            "user_accounts": {"2": "bar@example.com", "1": "foo@example.com"},
        }
    )
    handler = load_lambda_module("alert_config", "handler")
    # When
    result = handler.lambda_handler(fetch_event("cpu-high"), FakeLambdaContext())
    # Then: JSON-ready (no Decimal), ordered, defaults applied, the item's status for the first round
    links = result.pop("links")
    assert json.loads(json.dumps(result)) == {
        "alert_id": "cpu-high",
        "message": "Alert cpu-high is active",
        "levels": [["foo@example.com", "bar@example.com"]],
        "rounds": 2,
        "interval_seconds": 300,
        "start_delay_seconds": 0,
        "schedules": [],
        "occurrence": None,  # no alarm raised it (no raised_at)
        "status": "active",
        "acknowledged_by": None,
        "resolved_by": None,
    }
    # Then: each user's two links carry a token the stack's key verifies, for that user and action
    for user in ("foo@example.com", "bar@example.com"):
        assert set(links[user]) == {"acknowledge", "resolve"}
        for action, url in links[user].items():
            assert url.startswith(ACTIONS_URL + "?t=")
            claim = verify(LINK_KEY, url.split("?t=", 1)[1], now=0)
            assert (claim.alert_id, claim.user, claim.action) == ("cpu-high", user, action)


def test_fetch_handler_raises_alert_not_found_for_a_missing_item(alert_table):
    handler = load_lambda_module("alert_config", "handler")
    with pytest.raises(handler.AlertNotFound, match=r"^alert_id: .*'no-such-alert'"):
        handler.lambda_handler(fetch_event("no-such-alert"), FakeLambdaContext())


def test_fetch_handler_raises_invalid_alert_config_for_a_bad_item(alert_table):
    # Given
    alert_table.put_item(Item={"alert_id": "broken", "notification_count": 0, "user_accounts": ["a@example.com"]})
    handler = load_lambda_module("alert_config", "handler")
    # When
    with pytest.raises(Exception) as raised:
        handler.lambda_handler(fetch_event("broken"), FakeLambdaContext())
    # Then: the class name is the error name the execution fails with, and nothing was claimed
    assert type(raised.value).__name__ == "InvalidAlertConfig"
    assert str(raised.value).startswith("notification_count: ")
    assert "escalation_execution_arn" not in alert_table.get_item(Key={"alert_id": "broken"})["Item"]


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"alert_id": "misspelled", "notification_count": 1, "escalation": [["Schedule:primary"]]}, "escalation[0][0]"),
        ({"alert_id": "unread", "notification_count": 1, "user_accounts": ["a@example.com"], "interval_secs": 60}, "interval_secs"),
    ],
    ids=lambda value: value["alert_id"] if isinstance(value, dict) else value,
)
def test_fetch_handler_refuses_a_misspelled_schedule_and_a_field_it_would_ignore(alert_table, item, field):
    # Given: issue 40's items, which ran as if valid (posted to a person named "Schedule:primary",
    # SUCCEEDED, nobody mentioned; or the default interval instead of 60 s)
    alert_table.put_item(Item=item)
    handler = load_lambda_module("alert_config", "handler")
    # When
    with pytest.raises(Exception) as raised:
        handler.lambda_handler(fetch_event(item["alert_id"]), FakeLambdaContext())
    # Then: the execution fails with InvalidAlertConfig naming the field, and claims nothing
    assert type(raised.value).__name__ == "InvalidAlertConfig"
    assert str(raised.value).startswith(f"{field}: ")
    assert "escalation_execution_arn" not in alert_table.get_item(Key={"alert_id": item["alert_id"]})["Item"]


def test_an_item_as_the_app_leaves_it_is_still_accepted_and_every_field_it_writes_is_listed(alert_table, config_logic):
    # Given: a person's item, then every write the app makes to it with the app's own updates: raised
    # by its alarm, claimed by an execution, acknowledged from a link, resolved by the alarm
    from patterns_common import alert_status

    alert_table.put_item(Item={"alert_id": "db", "alarm_name": "db-cpu", "notification_count": 1,
                               "user_accounts": ["a@example.com"], "interval_seconds": 60, "message": "DB CPU"})
    alert_table.update_item(**alert_status.raise_update(
        "db", state_at="2026-11-28T08:00:00.000+0000", now="2026-11-28T08:00:01Z", execution_arn="arn:e",
        claim_expires_at=1, reopen=True))
    handler = load_lambda_module("alert_config", "handler")
    handler.lambda_handler(fetch_event("db"), FakeLambdaContext())
    alert_table.update_item(**alert_status.act_update("db", "acknowledge", by="U0123ABCD", at="2026-11-28T08:01:00Z",
                                                      occurrence="2026-11-28T08:00:01Z"))
    alert_table.update_item(**alert_status.resolve_by_alarm_update(
        "db", alarm_name="db-cpu", state_at="2026-11-28T08:05:00.000+0000", now="2026-11-28T08:05:01Z"))
    item = alert_table.get_item(Key={"alert_id": "db"})["Item"]
    # Then: every field the app wrote is one the check allows (so the lists cannot drift), and the
    # item, read back and put again as tools.alert would, is accepted
    assert set(item) == set(config_logic.ITEM_FIELDS) - {"escalation"}  # the item lists user_accounts instead
    assert handler.lambda_handler(fetch_event("db"), FakeLambdaContext())["status"] == "resolved"


def test_fetch_handler_records_no_link_token_or_account_in_its_trace_or_logs(alert_table, recorded):
    # Given: two people to notify. Powertools' Tracer records a handler's response as trace metadata
    # unless told not to (https://docs.powertools.aws.dev/lambda/python/latest/core/tracer/), and this
    # response is every person's account and signed links.
    alert_table.put_item(Item={"alert_id": "cpu-high", "notification_count": 2,
                               "user_accounts": ["foo@example.com", "U0123ABCD"]})
    handler = load_lambda_module("alert_config", "handler")
    # When
    result = handler.lambda_handler(fetch_event("cpu-high"), FakeLambdaContext())
    # Then: the handler was traced, and nothing it recorded or logged holds an account, link or token
    assert len(recorded.handler_subsegments()) == 1 and "ColdStart" in recorded.handler_subsegments()[0].annotations
    secrets = ["foo@example.com", "U0123ABCD"] + [
        url.split("?t=", 1)[1] for links in result["links"].values() for url in links.values()
    ]
    assert len(secrets) == 6
    text = recorded.everything()
    assert '"Alert config"' in text  # its log line was captured
    assert [secret for secret in secrets if secret in text] == []


def test_a_refused_item_is_traced_with_its_field_never_with_an_account(alert_table, recorded):
    # Given: an account listed twice
    alert_table.put_item(Item={"alert_id": "twice", "notification_count": 1,
                               "user_accounts": ["dup@example.com", "dup@example.com"]})
    handler = load_lambda_module("alert_config", "handler")
    # When
    with pytest.raises(Exception, match=r"^user_accounts\[1\]: is listed twice \(also user_accounts\[0\]\)$"):
        handler.lambda_handler(fetch_event("twice"), FakeLambdaContext())
    # Then: the error is in the trace (it says which field to fix) and the account is nowhere
    text = recorded.everything()
    assert "listed twice" in recorded.trace.recorded_text()
    assert "dup@example.com" not in text


def _claim_of(table, alert_id: str) -> str | None:
    return table.get_item(Key={"alert_id": alert_id}, ConsistentRead=True)["Item"].get("escalation_execution_arn")


def test_fetch_claims_the_alert_and_a_second_execution_finds_it_running(alert_table, executions):
    # Given: an alert, and two executions for it
    alert_table.put_item(Item={"alert_id": "cpu-high", "notification_count": 1, "user_accounts": ["a@example.com"]})
    handler = load_lambda_module("alert_config", "handler")
    first, second = executions("first"), executions("second")
    # When
    handler.lambda_handler(fetch_event("cpu-high", first), FakeLambdaContext())
    with pytest.raises(Exception) as raised:
        handler.lambda_handler(fetch_event("cpu-high", second), FakeLambdaContext())
    # Then: the second ends with the first's ARN; the claim stays the first's
    assert type(raised.value).__name__ == "AlertAlreadyRunning"
    assert str(raised.value) == first
    assert _claim_of(alert_table, "cpu-high") == first
    # Then: a retried fetch of the first (a lost response) still runs
    assert handler.lambda_handler(fetch_event("cpu-high", first), FakeLambdaContext())["alert_id"] == "cpu-high"


def test_a_claim_whose_execution_ended_is_taken_over(alert_table, executions):
    # Given: the alert claimed by an execution that was stopped (its end never released the claim)
    import boto3 as aws

    alert_table.put_item(Item={"alert_id": "cpu-high", "notification_count": 1, "user_accounts": ["a@example.com"]})
    handler = load_lambda_module("alert_config", "handler")
    stopped, later = executions("stopped"), executions("later")
    handler.lambda_handler(fetch_event("cpu-high", stopped), FakeLambdaContext())
    aws.client("stepfunctions").stop_execution(executionArn=stopped)
    # When
    handler.lambda_handler(fetch_event("cpu-high", later), FakeLambdaContext())
    # Then
    assert _claim_of(alert_table, "cpu-high") == later


@pytest.mark.parametrize(
    "holder, expires_at",
    [
        ("arn:aws:states:us-east-1:123456789012:execution:alerts:gone", 4_000_000_000),  # no such execution
        ("arn:aws:states:us-east-1:123456789012:execution:alerts:long-ago", 1),  # past the machine timeout
    ],
    ids=["execution-does-not-exist", "claim-expired"],
)
def test_a_claim_that_cannot_be_running_never_blocks(alert_table, executions, holder, expires_at):
    # Given: a claim left behind (a deleted machine's execution, or one older than any execution lives)
    alert_table.put_item(
        Item={
            "alert_id": "cpu-high",
            "notification_count": 1,
            "user_accounts": ["a@example.com"],
            "escalation_execution_arn": holder,
            "escalation_claim_expires_at": expires_at,
        }
    )
    handler = load_lambda_module("alert_config", "handler")
    me = executions("me")
    # When
    handler.lambda_handler(fetch_event("cpu-high", me), FakeLambdaContext())
    # Then
    assert _claim_of(alert_table, "cpu-high") == me


def test_a_claim_expires_only_after_the_machine_timeout(config_logic):
    # The claim may be ignored once its execution cannot be running any more: the machine's timeout.
    assert alert_executions.MACHINE_TIMEOUT_SECONDS == ASL["TimeoutSeconds"]
    item = {"escalation_execution_arn": "arn:other", "escalation_claim_expires_at": Decimal(alert_executions.claim_expiry(1000))}
    assert config_logic.claim_to_check(item, me="arn:me", now=1000 + ASL["TimeoutSeconds"] - 1) == "arn:other"
    assert config_logic.claim_to_check(item, me="arn:me", now=1000 + ASL["TimeoutSeconds"]) is None


def test_a_claim_of_another_machines_execution_never_blocks(config_logic):
    # Given: an alert table adopted from a deleted deployment (docs/deploying.md): its claim names an
    # execution of the deleted machine, which this function's role may not describe (its grant names
    # this machine's executions only), within the claim's 48 hours
    old = "arn:aws:states:us-east-1:123456789012:execution:MachineStateMachineOLD-abc:alert-1"
    me = "arn:aws:states:us-east-1:123456789012:execution:MachineStateMachineNEW-def:alert-2"
    item = {"escalation_execution_arn": old, "escalation_claim_expires_at": Decimal(alert_executions.claim_expiry(1000))}
    # Then: the alert is free for this machine's execution; one of this machine is still asked about
    assert config_logic.claim_to_check(item, me=me, now=1001) is None
    sibling = me.replace("alert-2", "alert-1")
    assert config_logic.claim_to_check({**item, "escalation_execution_arn": sibling}, me=me, now=1001) == sibling


# --------------------------------------------------------------------------------------------------
# Notify Next User: Slack webhook client against the real HTTP stand-in
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def slack_webhook() -> ModuleType:
    return load_lambda_module("alert_notifier", "slack_webhook")


@pytest.fixture
def slack():
    with SlackStandIn() as stand_in:
        yield stand_in


LINKS = {"acknowledge": "https://actions.example/?t=ack-token", "resolve": "https://actions.example/?t=res-token"}


def test_notification_text_names_the_user_and_the_message_escaped_for_slack(slack_webhook):
    notification = slack_webhook.Notification(
        alert_id="db<1>", message="CPU > 90% & rising", round=2, user="foo@example.com", links=LINKS
    )
    assert notification.text() == (
        "foo@example.com: alert db&lt;1&gt; is active (notification round 2). CPU &gt; 90% &amp; rising"
    )


@pytest.mark.parametrize(
    "user, addressed",
    [("U012AB3CD", "<@U012AB3CD>"), ("W012AB3CD", "<@W012AB3CD>"), ("foo@example.com", "foo@example.com"), ("ops", "ops")],
)
def test_a_slack_member_id_is_mentioned_and_anything_else_named(slack_webhook, user, addressed):
    # Slack notifies a member mentioned as <@ID> (https://api.slack.com/reference/surfaces/formatting#mentioning-users);
    # member IDs start with U (or W in Enterprise Grid).
    notification = slack_webhook.Notification(alert_id="db-1", message="m", round=1, user=user, links=LINKS)
    assert notification.text().startswith(f"{addressed}: alert db-1 is active")


def test_every_notification_is_block_kit_with_acknowledge_and_resolve_link_buttons(slack_webhook):
    # Given
    notification = slack_webhook.Notification(alert_id="db-1", message="Disk full", round=3, user="U012AB3CD", links=LINKS)
    # When
    payload = notification.payload()
    # Then: a section, then the two buttons opening the user's links; the text as the fallback; no
    # unfurling (https://api.slack.com/reference/block-kit/block-elements#button,
    # https://api.slack.com/messaging/webhooks, https://api.slack.com/reference/messaging/link-unfurling)
    assert payload["text"] == notification.text()
    section, actions = payload["blocks"]
    assert section["type"] == "section" and "<@U012AB3CD>" in section["text"]["text"]
    assert "Disk full" in section["text"]["text"] and "round 3" in section["text"]["text"]
    assert actions["type"] == "actions"
    assert [(b["type"], b["text"]["type"], b["text"]["text"], b["url"]) for b in actions["elements"]] == [
        ("button", "plain_text", "Acknowledge", LINKS["acknowledge"]),
        ("button", "plain_text", "Resolve", LINKS["resolve"]),
    ]
    assert payload["unfurl_links"] is False


def test_a_long_message_fits_the_section_block_and_stays_whole_in_the_fallback(slack_webhook):
    # A section's text holds at most 3,000 characters (https://api.slack.com/reference/block-kit/blocks#section).
    notification = slack_webhook.Notification(alert_id="db-1", message="x" * 4000, round=1, user="u@example.com", links=LINKS)
    payload = notification.payload()
    assert len(payload["blocks"][0]["text"]["text"]) == 3000
    assert payload["text"].endswith("x" * 4000)


def test_post_message_sends_the_json_payload_to_the_webhook(slack_webhook, slack):
    # When
    status = slack_webhook.post_message(slack.url, {"text": "hello foo@example.com", "unfurl_links": False})
    # Then
    assert status == 200
    [post] = slack.posts
    assert post.body == {"text": "hello foo@example.com", "unfurl_links": False}
    assert post.path == "/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"
    assert post.headers["Content-Type"].startswith("application/json")


@pytest.mark.parametrize("status", [500, 502, 503])
def test_server_errors_are_transient(slack_webhook, slack, status):
    slack.fail_next(1, status=status)
    with pytest.raises(slack_webhook.SlackTransientError, match=str(status)):
        slack_webhook.post_message(slack.url, {"text": "hi"})


@pytest.mark.parametrize("status", [400, 403, 404, 410])
def test_client_errors_are_permanent(slack_webhook, slack, status):
    slack.fail_next(1, status=status)
    with pytest.raises(slack_webhook.SlackRejectedError, match=str(status)):
        slack_webhook.post_message(slack.url, {"text": "hi"})


@pytest.mark.parametrize("retry_after", [1, 120, None])
def test_a_rate_limit_is_transient_at_once_and_never_waited_out_in_the_function(slack_webhook, slack, retry_after):
    # Given: Slack asks for a pause (https://api.slack.com/docs/rate-limits: 429 with Retry-After)
    slack.fail_next(1, status=429, retry_after=retry_after)
    # Then: the function does not sleep through it (asleep, it would hold one of the account's
    # concurrent executions); the machine's retry takes a new slot on the webhook's pace
    with pytest.raises(slack_webhook.SlackTransientError, match=rf"429 \(Retry-After: {retry_after}\)"):
        slack_webhook.post_message(slack.url, {"text": "hi"})
    assert [post.status for post in slack.posts] == [429]


def test_a_hanging_webhook_is_a_transient_timeout(slack_webhook, slack):
    slack.hang_next(seconds=5)
    with pytest.raises(slack_webhook.SlackTransientError, match="did not answer"):
        slack_webhook.post_message(slack.url, {"text": "hi"}, timeout=0.2)


def test_a_webhook_that_is_not_listening_is_transient(slack_webhook):
    with SlackStandIn() as gone:
        url = gone.url
    with pytest.raises(slack_webhook.SlackTransientError):
        slack_webhook.post_message(url, {"text": "hi"}, timeout=1)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "not a url", ""])
def test_a_secret_that_is_not_an_http_url_is_rejected_without_a_request(slack_webhook, url):
    with pytest.raises(slack_webhook.SlackRejectedError, match="http"):
        slack_webhook.post_message(url, {"text": "hi"})


def test_stand_in_fails_every_post_mentioning_a_user_and_numbers_posts(slack_webhook, slack):
    # Given
    slack.fail_for("bar@example.com", status=503)
    # When
    results = []
    for user in ("foo@example.com", "bar@example.com", "baz@example.com"):
        try:
            results.append(slack_webhook.post_message(slack.url, {"text": f"{user}: disk full"}))
        except slack_webhook.SlackTransientError:
            results.append("transient")
    # Then
    assert results == [200, "transient", 200]
    assert [(post.seq, post.status) for post in slack.posts] == [(1, 200), (2, 503), (3, 200)]
    assert [post.body["text"] for post in slack.delivered] == ["foo@example.com: disk full", "baz@example.com: disk full"]


# --------------------------------------------------------------------------------------------------
# Notify Next User: handler with moto (secret, idempotency table) and the HTTP stand-in
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def notifier(monkeypatch, slack):
    monkeypatch.setenv("IDEMPOTENCY_TABLE_NAME", "idempotency")
    monkeypatch.setenv("SLACK_WEBHOOK_SECRET_NAME", WEBHOOK_SECRET)
    monkeypatch.setenv("PEOPLE_TABLE_NAME", "people")  # empty: nobody here has rules of their own
    with mock_aws():
        boto3.client("dynamodb").create_table(
            TableName="idempotency",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        boto3.client("dynamodb").create_table(
            TableName="people",
            KeySchema=[{"AttributeName": "member", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "member", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        boto3.client("secretsmanager").create_secret(Name=WEBHOOK_SECRET, SecretString=slack.url)
        parameters.clear_caches()  # the cached secret of an earlier test points at another port
        yield load_lambda_module("alert_notifier", "handler")
    parameters.clear_caches()


def notification_event(round_: int = 1, user: str = "foo@example.com") -> dict:
    return {
        "execution_id": "arn:aws:states:us-east-1:123456789012:execution:AlertMachine:run-1",
        "alert_id": "disk-full-web-1",
        "message": "Disk above 90% on web-1",
        "round": round_,
        "user": user,
        "links": LINKS,
    }


def test_notifier_posts_one_message_naming_the_user_and_the_alert_message(notifier, slack):
    # When
    result = notifier.lambda_handler(notification_event(), FakeLambdaContext())
    # Then
    assert result == {"user": "foo@example.com", "round": 1, "status": 200}
    [post] = slack.posts
    assert "foo@example.com" in post.body["text"] and "Disk above 90% on web-1" in post.body["text"]
    assert [button["url"] for button in post.body["blocks"][1]["elements"]] == [LINKS["acknowledge"], LINKS["resolve"]]


def test_notifier_records_no_account_or_link_in_its_trace_logs_or_metrics(notifier, slack, recorded):
    # Given: a Slack member to notify, then one Slack refuses (a revoked webhook answers 404)
    links = signed_links("U0123ABCD", 300)
    # When
    notifier.lambda_handler({**notification_event(user="U0123ABCD"), "links": links}, FakeLambdaContext())
    slack.fail_next(1, status=404)
    with pytest.raises(Exception) as raised:
        notifier.lambda_handler({**notification_event(user="lead@example.com"), "links": links}, FakeLambdaContext())
    # Then: both invocations were traced, the error with Slack's answer (so the trace says what failed),
    # and no account, link or token is in the trace, the logs or the metrics
    assert type(raised.value).__name__ == "SlackRejectedError"
    assert len(recorded.handler_subsegments()) == 2
    assert "404" in recorded.trace.recorded_text()
    text = recorded.everything()
    assert '"Notified"' in text and "NotificationsSent" in text and "NotificationsFailed" in text
    secrets = ["U0123ABCD", "lead@example.com", *links.values(), *(url.split("?t=", 1)[1] for url in links.values())]
    assert [secret for secret in secrets if secret in text] == []


def test_the_tracer_traces_aws_calls_and_not_the_slack_webhook_url(tmp_path):
    # X-Ray's http.client patch, part of the patch_all Tracer applies by default, records the URL of every
    # request (aws_xray_sdk.ext.httplib); a webhook URL is the webhook's secret. Imported as in Lambda,
    # with tracing on (LAMBDA_TASK_ROOT set), the shared tracer patches the AWS SDK only.
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    env = {key: value for key, value in os.environ.items() if key != "POWERTOOLS_TRACE_DISABLED"}
    env.update(LAMBDA_TASK_ROOT=str(tmp_path), PYTHONPATH=str(ROOT / "lambdas" / "shared_layer" / "python"))
    probe = (
        "import patterns_common.observability, aws_xray_sdk.core.patcher as p; "
        "print(sorted(p._PATCHED_MODULES))"
    )
    patched = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert patched.stdout.split() == ["['botocore']"]


def test_a_repeated_notification_does_not_post_again(notifier, slack):
    # Given
    first = notifier.lambda_handler(notification_event(), FakeLambdaContext())
    # When: the same (execution, round, user) arrives again, as a retried task would
    again = notifier.lambda_handler(notification_event(), FakeLambdaContext())
    # Then
    assert again == first
    assert len(slack.posts) == 1


def test_the_same_user_in_another_round_is_notified_again(notifier, slack):
    notifier.lambda_handler(notification_event(round_=1), FakeLambdaContext())
    notifier.lambda_handler(notification_event(round_=2), FakeLambdaContext())
    assert [post.body["text"].count("round 2") for post in slack.posts] == [0, 1]


def test_slack_500_then_success_posts_once_the_retry_comes(notifier, slack):
    # Given
    slack.fail_next(1, status=500)
    # When: the first attempt fails with the error name the state machine retries on
    with pytest.raises(Exception) as raised:
        notifier.lambda_handler(notification_event(), FakeLambdaContext())
    assert type(raised.value).__name__ == "SlackTransientError"
    retried = notifier.lambda_handler(notification_event(), FakeLambdaContext())
    notifier.lambda_handler(notification_event(), FakeLambdaContext())  # a further retry changes nothing
    # Then
    assert retried["status"] == 200
    assert [post.status for post in slack.posts] == [500, 200]


def test_a_rejected_notification_is_not_retryable(notifier, slack):
    slack.fail_next(1, status=404)
    with pytest.raises(Exception) as raised:
        notifier.lambda_handler(notification_event(), FakeLambdaContext())
    assert type(raised.value).__name__ == "SlackRejectedError"
    retry_names = {name for retrier in asl_state("Notify User")["Retry"] for name in retrier["ErrorEquals"]}
    assert "SlackRejectedError" not in retry_names and "SlackTransientError" in retry_names


def test_a_delivered_notification_counts_as_sent_once_with_the_alert_id_as_a_property_not_a_dimension(
    notifier, slack, capsys
):
    # When: delivered, then replayed by a retried task
    notifier.lambda_handler(notification_event(), FakeLambdaContext())
    notifier.lambda_handler(notification_event(), FakeLambdaContext())
    # Then: one count; its only dimension is the function's service (a dimension value per alert would
    # be a custom metric each), and the alert id is a property of the EMF document
    # (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html)
    output = capsys.readouterr().out
    metrics = emf_metrics(output)
    assert [m.get("NotificationsSent") for m in metrics] == [[1.0]]
    [document] = [json.loads(line) for line in output.splitlines() if '"NotificationsSent"' in line and '"_aws"' in line]
    assert [dimensions for d in document["_aws"]["CloudWatchMetrics"] for dimensions in d["Dimensions"]] == [["service"]]
    assert document["alert_id"] == "disk-full-web-1"


@pytest.mark.parametrize(
    "status, attempt, counted",
    [(404, 1, True), (500, 1, False), (500, "last", True)],
    ids=["rejected", "transient-then-retried", "transient-on-the-last-attempt"],
)
def test_a_notification_counts_as_failed_once_the_machine_gives_up_on_it(notifier, slack, capsys, status, attempt, counted):
    # Given: the attempt number the machine passes ($states.context.State.RetryCount + 1)
    slack_retrier = next(r for r in asl_state("Notify User")["Retry"] if "SlackTransientError" in r["ErrorEquals"])
    event = {**notification_event(), "attempt": 1 + slack_retrier["MaxAttempts"] if attempt == "last" else attempt}
    slack.fail_next(1, status=status)
    # When
    with pytest.raises(Exception):
        notifier.lambda_handler(event, FakeLambdaContext())
    # Then
    failed = [m["NotificationsFailed"] for m in emf_metrics(capsys.readouterr().out) if "NotificationsFailed" in m]
    assert failed == ([[1.0]] if counted else [])


def test_the_notifier_knows_how_many_attempts_the_machine_gives_a_transient_failure():
    slack_webhook = load_lambda_module("alert_notifier", "slack_webhook")
    [retrier] = [r for r in asl_state("Notify User")["Retry"] if "SlackTransientError" in r["ErrorEquals"]]
    assert slack_webhook.SLACK_MAX_ATTEMPTS == 1 + retrier["MaxAttempts"]


# --------------------------------------------------------------------------------------------------
# Scheduled dispatcher: planning (pure) and handler with moto
# --------------------------------------------------------------------------------------------------


@pytest.fixture
def dispatch_logic() -> ModuleType:
    return load_lambda_module("alert_dispatcher", "alert_dispatcher_logic")


SLOT = datetime(2026, 11, 22, 5, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("alert_id", ["disk-full-web-1", "a/b c:d", "\u00e9t\u00e9", "x" * 300, "---"])
def test_execution_names_are_valid_deterministic_and_name_the_alert(dispatch_logic, alert_id):
    # When
    name = execution_name(alert_id, SLOT)
    # Then
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,80}", name)
    assert name == execution_name(alert_id, SLOT)
    assert name.endswith("-20261122T050000Z")
    assert name != execution_name(alert_id, datetime(2026, 11, 22, 6, 0, tzinfo=timezone.utc))


def test_execution_name_keeps_the_readable_alert_id_and_separates_look_alikes(dispatch_logic):
    assert execution_name("disk-full-web-1", SLOT).startswith("disk-full-web-1-")
    assert execution_name("a/b", SLOT) != execution_name("a:b", SLOT)


def test_scheduled_time_is_the_event_time_or_now(dispatch_logic):
    assert dispatch_logic.scheduled_time({"time": "2026-11-22T05:00:00Z"}) == SLOT
    assert dispatch_logic.scheduled_time({}, now=SLOT) == SLOT
    # an invocation whose event is not an object (a hand-made test event) is dispatched now, not failed
    assert dispatch_logic.scheduled_time(["x"], now=SLOT) == SLOT


def test_scheduled_time_is_in_utc_whatever_the_machines_zone(dispatch_logic, machine_zone_not_utc):
    # The slot names the executions (...-20261122T050000Z): 05:00 UTC, never the machine's 10:30
    berlin = datetime.fromisoformat("2026-11-22T06:00:00+01:00")
    for slot in (dispatch_logic.scheduled_time({"time": "2026-11-22T05:00:00Z"}), dispatch_logic.scheduled_time({}, now=berlin)):
        assert slot.isoformat() == "2026-11-22T05:00:00+00:00"


@pytest.mark.parametrize(
    "execution_input, alert_id",
    [('{"alert_id": "a"}', "a"), ('{"alert_id": 1}', None), ("[1]", None), ("not json", None), (None, None)],
)
def test_alert_id_of_a_running_execution_is_read_defensively(dispatch_logic, execution_input, alert_id):
    assert dispatch_logic.alert_id_of(execution_input) == alert_id


def test_plan_starts_only_alerts_without_a_running_execution(dispatch_logic):
    plan = dispatch_logic.plan_dispatch(["b", "a", "c", "a"], {"c", "zombie"})
    assert plan.to_start == ["a", "b"]
    assert plan.already_running == ["c"]
    assert plan.alarm_ok == []


def test_plan_leaves_out_every_alert_whose_alarm_is_ok(dispatch_logic):
    # Given: alerts linked to alarms in each of CloudWatch's three states, to a missing alarm, and none.
    # INSUFFICIENT_DATA says nothing about what is watched (docs/alert-lifecycle.md): the item decides.
    linked = {"ok": "db-ok", "ok-running": "db-ok", "alarming": "db-alarm", "no-data": "db-new", "gone": "deleted"}
    states = {"db-ok": "OK", "db-alarm": "ALARM", "db-new": "INSUFFICIENT_DATA"}
    # When
    quiet = dispatch_logic.alarm_ok_alert_ids(linked, states)
    plan = dispatch_logic.plan_dispatch([*linked, "unlinked"], {"ok-running", "alarming"}, quiet)
    # Then
    assert plan.alarm_ok == ["ok", "ok-running"]
    assert plan.to_start == ["gone", "no-data", "unlinked"]
    assert plan.already_running == ["alarming"]


def test_only_a_name_an_alarm_can_have_is_looked_up(dispatch_logic):
    # AlarmName: 1 to 255 characters (CloudWatch API Reference, PutMetricAlarm and DescribeAlarms)
    assert dispatch_logic.alarm_name_of({"alarm_name": "a" * 255}) == "a" * 255
    assert dispatch_logic.alarm_name_of({"alarm_name": "a"}) == "a"
    for item in ({}, {"alarm_name": ""}, {"alarm_name": "a" * 256}, {"alarm_name": 7}):
        assert dispatch_logic.alarm_name_of(item) is None


def test_alarm_names_are_described_a_hundred_at_a_time(dispatch_logic):
    # DescribeAlarms takes at most 100 AlarmNames (CloudWatch API Reference, DescribeAlarms)
    names = [f"alarm-{n:03d}" for n in range(250)] + ["alarm-000"]
    assert [len(batch) for batch in dispatch_logic.batches(names)] == [100, 100, 50]


@pytest.fixture
def dispatcher(alert_table, monkeypatch):
    stepfunctions = boto3.client("stepfunctions")
    machine_arn = stepfunctions.create_state_machine(
        name="AlertMachine",
        definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
        roleArn="arn:aws:iam::123456789012:role/AlertMachineRole",
    )["stateMachineArn"]
    monkeypatch.setenv("STATE_MACHINE_ARN", machine_arn)
    return load_lambda_module("alert_dispatcher", "handler"), stepfunctions, machine_arn


def test_dispatcher_starts_one_execution_per_active_alert_and_none_twice(dispatcher, alert_table):
    handler, stepfunctions, machine_arn = dispatcher
    # Given: items big enough that a scan page (1 MB) holds only two of them
    padding = "p" * 350_000
    for alert_id, status in (("a-active", "active"), ("b-no-status", None), ("c-resolved", "resolved"), ("d-running", "active")):
        alert_table.put_item(Item={"alert_id": alert_id, "padding": padding, **({"status": status} if status else {})})
    # ...and an execution for d started by hand, under a name the dispatcher does not use
    stepfunctions.start_execution(stateMachineArn=machine_arn, name="by-hand", input='{"alert_id": "d-running"}')
    event = {"time": "2026-11-22T05:00:00Z", "detail-type": "Scheduled Event"}
    # When
    result = handler.lambda_handler(event, FakeLambdaContext())
    # Then
    assert result == {
        "started": ["a-active", "b-no-status"], "already_running": ["d-running"], "already_started": [], "alarm_ok": []
    }
    executions = stepfunctions.list_executions(stateMachineArn=machine_arn)["executions"]
    started = {e["name"]: json.loads(stepfunctions.describe_execution(executionArn=e["executionArn"])["input"]) for e in executions}
    assert started.pop("by-hand") == {"alert_id": "d-running"}
    assert sorted(started.values(), key=lambda i: i["alert_id"]) == [{"alert_id": "a-active"}, {"alert_id": "b-no-status"}]
    assert all(name.endswith("-20261122T050000Z") for name in started)

    # When: the next run finds them all still running
    again = handler.lambda_handler({"time": "2026-11-22T06:00:00Z"}, FakeLambdaContext())
    # Then
    assert again["started"] == []
    assert again["already_running"] == ["a-active", "b-no-status", "d-running"]
    assert len(stepfunctions.list_executions(stateMachineArn=machine_arn)["executions"]) == 3


def put_alarm(name: str, state: str) -> None:
    """A metric alarm in ``state``, always set: CloudWatch starts a new alarm INSUFFICIENT_DATA, moto OK."""
    cloudwatch = boto3.client("cloudwatch")
    cloudwatch.put_metric_alarm(
        AlarmName=name, Namespace="AWS/RDS", MetricName="CPUUtilization", Statistic="Average", Period=60,
        EvaluationPeriods=3, Threshold=90, ComparisonOperator="GreaterThanThreshold",
    )
    cloudwatch.set_alarm_state(AlarmName=name, StateValue=state, StateReason="test")


def test_an_alert_whose_alarm_is_ok_is_not_paged_whatever_its_item_says(dispatcher, alert_table):
    handler, stepfunctions, machine_arn = dispatcher
    # Given: alerts written without a status (active) or active, linked to alarms in each state
    put_alarm("db-ok", "OK")
    put_alarm("db-alarm", "ALARM")
    put_alarm("db-new", "INSUFFICIENT_DATA")
    for alert_id, alarm, status in (
        ("ok-no-status", "db-ok", None), ("ok-active", "db-ok", "active"), ("alarming", "db-alarm", None),
        ("no-data", "db-new", "active"), ("alarm-deleted", "no-such-alarm", None), ("unlinked", None, None),
    ):
        alert_table.put_item(Item={"alert_id": alert_id, **({"alarm_name": alarm} if alarm else {}),
                                   **({"status": status} if status else {})})
    calls: list[str] = []
    handler.cloudwatch.meta.events.register("before-call.cloudwatch.*", lambda model, **_: calls.append(model.name))
    # When
    result = handler.lambda_handler({"time": "2026-11-22T05:00:00Z"}, FakeLambdaContext())
    # Then: the two alerts whose alarm is OK are not started; the others are, as their items say
    assert result["alarm_ok"] == ["ok-active", "ok-no-status"]
    assert result["started"] == ["alarm-deleted", "alarming", "no-data", "unlinked"]
    started = {json.loads(stepfunctions.describe_execution(executionArn=e["executionArn"])["input"])["alert_id"]
               for e in stepfunctions.list_executions(stateMachineArn=machine_arn)["executions"]}
    assert started == set(result["started"])
    assert calls == ["DescribeAlarms"]  # the four alarm names in one call


def test_the_dispatch_describes_the_alarms_a_hundred_names_a_call(dispatcher, alert_table):
    handler, _, _ = dispatcher
    # Given: 150 alerts, each linked to its own alarm, all OK
    for n in range(150):
        put_alarm(f"alarm-{n:03d}", "OK")
        alert_table.put_item(Item={"alert_id": f"alert-{n:03d}", "alarm_name": f"alarm-{n:03d}"})
    calls: list[str] = []
    handler.cloudwatch.meta.events.register("before-call.cloudwatch.*", lambda model, **_: calls.append(model.name))
    # When
    result = handler.lambda_handler({"time": "2026-11-22T05:00:00Z"}, FakeLambdaContext())
    # Then
    assert len(result["alarm_ok"]) == 150 and result["started"] == []
    assert calls == ["DescribeAlarms", "DescribeAlarms"]


def test_a_redelivered_schedule_event_starts_nothing_new(dispatcher, alert_table):
    handler, stepfunctions, machine_arn = dispatcher
    # Given: the slot's execution already ran and ended
    alert_table.put_item(Item={"alert_id": "a-active"})
    event = {"time": "2026-11-22T05:00:00Z"}
    handler.lambda_handler(event, FakeLambdaContext())
    [execution] = stepfunctions.list_executions(stateMachineArn=machine_arn)["executions"]
    stepfunctions.stop_execution(executionArn=execution["executionArn"])
    # When: EventBridge delivers the same event again
    result = handler.lambda_handler(event, FakeLambdaContext())
    # Then
    assert result == {"started": [], "already_running": [], "already_started": ["a-active"], "alarm_ok": []}
    assert len(stepfunctions.list_executions(stateMachineArn=machine_arn)["executions"]) == 1


def test_running_executions_are_matched_to_alerts_by_name_and_only_others_are_left_to_describe(dispatch_logic):
    # Given: two dispatched executions (one for an alert no longer active) and one started by hand
    running = {
        execution_name("a/b", SLOT): "arn:a",
        execution_name("gone", SLOT): "arn:gone",
        "by-hand": "arn:by-hand",
    }
    # When
    found, to_describe = dispatch_logic.running_alert_ids(["a/b", "a:b", "c"], running)
    # Then
    assert found == {"a/b"} and to_describe == ["arn:by-hand"]


def test_a_dispatch_spreads_its_starts_a_few_at_once_then_seconds_apart_within_a_quarter_hour(dispatch_logic):
    # Slack takes about one message per second per channel, with short bursts
    # (https://api.slack.com/docs/rate-limits): a few alerts start at once, then they are spread.
    assert dispatch_logic.start_delays(0) == []
    assert dispatch_logic.start_delays(3) == [0, 0, 0]
    assert dispatch_logic.start_delays(4) == [0, 0, 0, 5]
    assert dispatch_logic.start_delays(5) == [0, 0, 0, 5, 10]
    many = dispatch_logic.start_delays(1000)
    assert many == sorted(many) and many[-1] <= 900 and len(set(many)) > 900
    # the machine accepts every delay the dispatcher gives
    config_logic = load_lambda_module("alert_config", "alert_config_logic")
    assert max(many) <= config_logic.MAX_START_DELAY_SECONDS
    assert dispatch_logic.execution_input("a", 0) == {"alert_id": "a"}
    assert dispatch_logic.execution_input("a", 5) == {"alert_id": "a", "start_delay_seconds": 5}


def test_failure_message_names_every_alert_not_started(dispatch_logic):
    message = dispatch_logic.failure_message({"b": "ThrottlingException", "a": "AccessDeniedException"}, 5)
    assert message == "2 of 5 alerts were not started: a (AccessDeniedException), b (ThrottlingException)"


def test_dispatch_calls_grow_with_the_alerts_to_start_not_with_running_executions(dispatcher, alert_table):
    handler, stepfunctions, machine_arn = dispatcher
    # Given: 30 active alerts, 10 of them already running under the dispatcher's names
    for n in range(30):
        alert_table.put_item(Item={"alert_id": f"alert-{n:02d}"})
    for n in range(10):
        stepfunctions.start_execution(
            stateMachineArn=machine_arn,
            name=handler.execution_name(f"alert-{n:02d}", SLOT),
            input=json.dumps({"alert_id": f"alert-{n:02d}"}),
        )
    calls: list[str] = []
    handler.stepfunctions.meta.events.register("before-call.sfn.*", lambda model, **_: calls.append(model.name))
    # When
    result = handler.lambda_handler({"time": "2026-11-22T06:00:00Z"}, FakeLambdaContext())
    # Then: one list, no describe, one start per alert to start
    assert len(result["started"]) == 20 and len(result["already_running"]) == 10
    assert sorted(set(calls)) == ["ListExecutions", "StartExecution"]
    assert calls.count("ListExecutions") == 1 and calls.count("StartExecution") == 20


def test_a_dispatch_that_fails_for_one_alert_starts_the_others_and_names_the_failed_one(
    dispatcher, alert_table, monkeypatch
):
    handler, stepfunctions, machine_arn = dispatcher
    # Given: three active alerts, and StartExecution refusing the second one whatever the retries
    for alert_id in ("a", "b", "c"):
        alert_table.put_item(Item={"alert_id": alert_id})
    real_start = handler.stepfunctions.start_execution

    def start_execution(**kwargs):
        if json.loads(kwargs["input"])["alert_id"] == "b":
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "StartExecution")
        return real_start(**kwargs)

    monkeypatch.setattr(handler.stepfunctions, "start_execution", start_execution)
    # When
    with pytest.raises(Exception) as raised:
        handler.lambda_handler({"time": "2026-11-22T05:00:00Z"}, FakeLambdaContext())
    # Then: the invocation fails naming b (the on-failure destination records it); a and c started
    assert type(raised.value).__name__ == "DispatchFailed"
    assert str(raised.value) == "1 of 3 alerts were not started: b (ThrottlingException)"
    inputs = [
        json.loads(stepfunctions.describe_execution(executionArn=e["executionArn"])["input"])["alert_id"]
        for e in stepfunctions.list_executions(stateMachineArn=machine_arn)["executions"]
    ]
    assert sorted(inputs) == ["a", "c"]



# --------------------------------------------------------------------------------------------------
# The webhook's pace shared by every execution (issue 30): slots on one DynamoDB item per webhook
# --------------------------------------------------------------------------------------------------
# Slack: an incoming webhook takes about one message a second, short bursts allowed, and answers 429
# with Retry-After beyond it (https://api.slack.com/docs/rate-limits).


def test_the_webhook_pace_gives_a_short_burst_then_one_slot_a_second(notifier, slack):
    # When: six notifications reserve at the same instant, then one after the queue has drained
    slots = [notifier.reserve_slot(slack.url, 1000.0) for _ in range(6)]
    later = notifier.reserve_slot(slack.url, 1008.0)
    # Then: a burst of three at once (a round's Map notifies three at a time), then a little slower
    # than one a second; an idle webhook posts at once again
    assert slots == [1000.0, 1000.0, 1000.0, 1001.25, 1002.5, 1003.75]
    later_still = notifier.reserve_slot(slack.url, 1020.0)
    assert (later, later_still) == (1008.0, 1020.0)


class SteppedClock:
    """The stand-in's clock, moved by the test: Slack's bucket measured at the instants a test names."""

    def __init__(self, now: float) -> None:
        self.at = now

    def __call__(self) -> float:
        return self.at


def test_the_paces_latest_posts_fit_slacks_burst_and_a_post_without_a_slot_does_not(notifier, slack_webhook):
    clock = SteppedClock(1000.0)
    # Given: Slack's pace as the stand-in plays it, a burst of four and one a second
    # (https://api.slack.com/docs/rate-limits: about one a second, short bursts), its bucket full at 1000
    with SlackStandIn(clock) as slack:
        slots = [notifier.reserve_slot(slack.url, 1000.0) for _ in range(6)]
        assert slots == [1000.0, 1000.0, 1000.0, 1001.25, 1002.5, 1003.75]
        # When: the burst's three go as late as the pace lets them, 0.5 s after their slot with 0.75 s
        # more on the way (slack_pace: 1001.25), landing on the post slotted at 1001.25, on time; the
        # later posts on time
        statuses = []
        for at, count in ((1001.25, 4), (1002.5, 1), (1003.75, 1)):
            clock.at = at
            statuses += [slack_webhook.post_message(slack.url, {"text": f"slot {n}"}) for n in range(count)]
        # Then: four at one instant is Slack's burst (4 tokens to 0); 1002.5 finds 1.25 tokens (0.25
        # left), 1003.75 finds 1.5: none refused
        assert statuses == [200] * 6
        # When: one more post without a slot at 1003.75 (0.5 tokens left)
        # Then: Slack refuses it: a post that takes no slot has no room in the pace's worst case
        with pytest.raises(slack_webhook.SlackTransientError, match="429"):
            slack_webhook.post_message(slack.url, {"text": "a follow-up without a slot"})


def test_a_post_goes_at_most_half_a_second_late_in_its_slot_and_a_wait_wakes_it_one_to_two_seconds_before():
    assert not pace_rules.missed(1000.0, 1000.0)
    assert not pace_rules.missed(1000.0, 1000.5)
    assert pace_rules.missed(1000.0, 1000.502)
    # The whole second before the slot's second: Step Functions and EventBridge Scheduler keep whole seconds
    assert [pace_rules.wake_at(slot) for slot in (1001.0, 1001.25, 1001.999)] == [1000, 1000, 1000]


@pytest.fixture
def slept(notifier, monkeypatch):
    """What the notifier slept, which may not pass two seconds: asleep, it holds one of the account's
    concurrent executions. Not slept here: the notifier's clock in these tests is fixed or real."""
    seconds: list[float] = []

    def sleep(duration: float) -> None:
        assert duration <= 2, f"the notifier slept {duration} s"
        seconds.append(duration)

    monkeypatch.setattr(notifier.time, "sleep", sleep)
    return seconds


def test_a_slot_still_to_come_is_handed_to_the_machine_then_used(notifier, slack, slept, monkeypatch):
    import time as real_time

    # The notifier's clock stands still at the real time the test starts (the stand-in paces real
    # posts): a loaded machine may take longer than a slot's half-second lateness between two lines.
    now = real_time.time()
    monkeypatch.setattr(notifier.time, "time", lambda: now)
    # Given: the webhook's queue is about 40 s long (34 slots, 1.25 s apart after a burst of 3)
    for _ in range(34):
        notifier.reserve_slot(slack.url, now)
    # When
    with pytest.raises(Exception) as busy:
        notifier.lambda_handler(notification_event(), FakeLambdaContext())
    # Then: SlackChannelBusy names the slot (the machine's Wait waits until it), nothing posted or slept
    assert type(busy.value).__name__ == "SlackChannelBusy"
    told = json.loads(str(busy.value))
    # (spent: the history events of this entry's one attempt, 2 + 3, and of the Wait, 2)
    assert told == {"slot_at": told["slot_at"], "spent": 7}
    assert now + 35 < told["slot_at"] < now + 41
    assert slack.posts == [] and slept == []
    # When: the machine calls again once the slot has come (here: a slot due now)
    result = notifier.lambda_handler({**notification_event(), "slot_at": now}, FakeLambdaContext())
    # Then: posted at once, without queueing again
    assert result["status"] == 200 and len(slack.posts) == 1 and sum(slept) == 0
    assert notifier.reserve_slot(slack.url, now) < told["slot_at"] + 2  # no slot taken after it


def test_a_slot_within_two_seconds_is_slept_out_and_a_farther_one_handed_to_the_machine(notifier, slack, slept, monkeypatch):
    # Given: three posts took the burst at 1000.2 (tat 1003.95), so the next slots are 1001.45, 1002.7
    for _ in range(3):
        notifier.reserve_slot(slack.url, 1000.2)
    # When: a notification comes at 1000.3, 1.15 s before its slot 1001.45; another at 1000.3, 2.4 s before 1002.7
    monkeypatch.setattr(notifier.time, "time", lambda: 1000.3)
    result = notifier.lambda_handler(notification_event(user="near@example.com"), FakeLambdaContext())
    with pytest.raises(Exception) as busy:
        notifier.lambda_handler(notification_event(user="far@example.com"), FakeLambdaContext())
    # Then: the first slept 1.15 s and posted in its slot; the second is handed to the machine
    assert result["status"] == 200 and len(slack.posts) == 1 and slept == [pytest.approx(1.15)]
    assert type(busy.value).__name__ == "SlackChannelBusy"
    assert json.loads(str(busy.value)) == {"slot_at": 1002.7, "spent": 7}
    # When: the machine's Wait wakes the second at 1001 (wake_at) and it starts at 1001.2
    monkeypatch.setattr(notifier.time, "time", lambda: 1001.2)
    woken = notifier.lambda_handler({**notification_event(user="far@example.com"), "slot_at": 1002.7}, FakeLambdaContext())
    # Then: it sleeps the 1.5 s left and posts in its slot
    assert woken["status"] == 200 and len(slack.posts) == 2 and slept[1:] == [pytest.approx(1.5)]


def test_a_round_of_three_at_an_instant_between_milliseconds_posts_all_three_at_once(notifier, slack, slept, monkeypatch):
    # Given: an idle webhook; three notifications at 1000.2006 s (the pace item keeps milliseconds)
    monkeypatch.setattr(notifier.time, "time", lambda: 1000.2006)
    # When
    results = [notifier.lambda_handler(notification_event(user=f"u{n}@example.com"), FakeLambdaContext()) for n in range(3)]
    # Then: the burst's three slots are now, at most the millisecond's rounding in the future
    assert [r["status"] for r in results] == [200] * 3 and len(slack.posts) == 3
    assert all(seconds < 0.001 for seconds in slept)


@pytest.mark.parametrize("attempt", [1, 2, 5])
def test_any_call_without_a_slot_takes_one_whichever_attempt(notifier, slack, slept, attempt):
    import time as real_time

    # Given: a long queue on the webhook, and an attempt the machine retried (a throttled invocation,
    # which never ran, or a post after a 429)
    for _ in range(34):
        notifier.reserve_slot(slack.url, real_time.time())
    # When
    with pytest.raises(Exception) as busy:
        notifier.lambda_handler({**notification_event(), "attempt": attempt}, FakeLambdaContext())
    # Then: it waits for its turn like any other post
    assert type(busy.value).__name__ == "SlackChannelBusy" and slack.posts == []


def test_the_retry_of_a_post_slack_refused_takes_a_new_slot(notifier, slack, slept, monkeypatch):
    # Given: a first attempt posted in its slot at 1000.0 (the webhook idle: tat 1001.25) and Slack answered 500
    monkeypatch.setattr(notifier.time, "time", lambda: 1000.0)
    slack.fail_next(1, status=500)
    with pytest.raises(Exception) as failed:
        notifier.lambda_handler(notification_event(), FakeLambdaContext())
    assert type(failed.value).__name__ == "SlackTransientError"
    # and meanwhile other notifications queued 34 slots (tat 1001.25 + 34 x 1.25 = 1043.75)
    for _ in range(34):
        notifier.reserve_slot(slack.url, 1000.1)
    # When: the machine retries it at 1000.2 (the Retry sends the same input: no slot in it)
    monkeypatch.setattr(notifier.time, "time", lambda: 1000.2)
    with pytest.raises(Exception) as busy:
        notifier.lambda_handler({**notification_event(), "attempt": 2}, FakeLambdaContext())
    # Then: a new post, a new slot at the end of the queue (1045 - 3 x 1.25 = 1041.25): the refused
    # post's slot is spent, as far as the pace knows
    assert type(busy.value).__name__ == "SlackChannelBusy" and [post.status for post in slack.posts] == [500]
    assert json.loads(str(busy.value)) == {"slot_at": 1041.25, "spent": 2 + 3 * 2 + 2}


def test_a_call_more_than_half_a_second_after_its_slot_takes_a_new_one(notifier, slack, slept, monkeypatch):
    # Given: a queue on the webhook (34 slots from 1000: tat 1000 + 34 x 1.25 = 1042.5), and the call of
    # a notification given its slot 1001.0, made at 1001.51 (throttled, or retried after a 429)
    for _ in range(34):
        notifier.reserve_slot(slack.url, 1000.0)
    monkeypatch.setattr(notifier.time, "time", lambda: 1001.51)
    late = {**notification_event(), "slot_at": 1001.0, "attempt": 2}
    # When
    with pytest.raises(Exception) as busy:
        notifier.lambda_handler(late, FakeLambdaContext())
    # Then: nothing posted; it waits for a new slot at the end of the queue (1043.75 - 3 x 1.25 = 1040),
    # its history events counted through that Wait (this entry's two attempts, 2 + 6, the Wait, 2)
    assert type(busy.value).__name__ == "SlackChannelBusy" and slack.posts == []
    assert json.loads(str(busy.value)) == {"slot_at": 1040.0, "spent": 10}
    # When: the machine wakes it at 1039 (wake_at) with that slot
    monkeypatch.setattr(notifier.time, "time", lambda: 1039.0)
    result = notifier.lambda_handler({**late, "slot_at": 1040.0, "spent": 10, "attempt": 1}, FakeLambdaContext())
    # Then: it sleeps the second left and posts in it
    assert result["status"] == 200 and len(slack.posts) == 1 and slept == [1.0]


def test_a_notification_waits_again_only_while_the_history_guard_counts_allow(notifier, slack, slept, monkeypatch):
    # Given: a queue on the webhook (34 slots from 1009), and calls 10 s after their slot 1000 (a channel
    # that keeps refusing, a function that keeps being throttled) whose earlier entries of Notify User
    # and Waits took 42 and 43 history events
    for _ in range(34):
        notifier.reserve_slot(slack.url, 1009.0)
    monkeypatch.setattr(notifier.time, "time", lambda: 1010.0)
    late = {**notification_event(), "slot_at": 1000.0, "attempt": 1}
    # When
    with pytest.raises(Exception) as waits:
        notifier.lambda_handler({**late, "spent": 42}, FakeLambdaContext())
    with pytest.raises(Exception) as missed:
        notifier.lambda_handler({**late, "spent": 43, "user": "bar@example.com"}, FakeLambdaContext())
    # Then: the guard counts a notification as two entries of every attempt (15: 2 + 3 x 15 = 47
    # events each) around one Wait (2): a Wait is allowed while the events through it, 42 + 5 + 2 = 49,
    # leave a full entry (49 + 47 = 96); at 50 it fails for good (no Retry of the machine's names it:
    # the user is reported not notified), never looping between the Wait and the call
    assert type(waits.value).__name__ == "SlackChannelBusy" and json.loads(str(waits.value))["spent"] == 49
    assert type(missed.value).__name__ == "SlackSlotMissed" and slack.posts == []
    notify_user = ASL["States"]["Notify This Round's Users"]["ItemProcessor"]["States"]["Notify User"]
    assert "SlackSlotMissed" not in json.dumps(notify_user["Retry"])


def test_the_paces_history_share_is_the_guards(config_logic):
    # The notifier's count of Notify User's attempts is the ASL's and the history guard's; a full
    # entry is as many events as the guard's model counts, and a full entry, a Wait and a full entry
    # are the guard's deferred notification
    assert pace_rules.NOTIFY_USER_ATTEMPTS == config_logic.NOTIFY_MAX_ATTEMPTS == retry_attempts("Notify User")
    assert pace_rules.CALL_EVENTS_AT_MOST == len(_task_events(retry_attempts("Notify User"), True)) == 47
    deferred_once = [*_task_events(15, True), "WaitStateEntered", "WaitStateExited", *_task_events(15, True)]
    assert pace_rules.CALL_EVENTS_AT_MOST + pace_rules.WAIT_EVENTS + pace_rules.CALL_EVENTS_AT_MOST == len(deferred_once)


def test_the_machine_wakes_a_waiting_notification_one_to_two_seconds_before_its_slot():
    from emulator.stepfunctions.jsonata import evaluate

    # Given: the Wait's Timestamp, evaluated as the machine evaluates it (JSONata)
    wait = ASL["States"]["Notify This Round's Users"]["ItemProcessor"]["States"]["Wait For The Channel's Turn"]
    expression = wait["Timestamp"].removeprefix("{%").removesuffix("%}")
    # When: slots at 1764000001.0, .25 and .999 (2025-11-24T16:00:01Z and a fraction)
    woken = [evaluate(expression, {"states": {"input": {"slot_at": 1764000001 + f}}}) for f in (0.0, 0.25, 0.999)]
    # Then: each is woken at 16:00:00, the whole second before its second (slack_pace.wake_at); the
    # notifier sleeps out the 1 to 2 s left
    assert woken == ["2025-11-24T16:00:00.000Z"] * 3

"""/oncall, the Slack slash command on the alert action endpoint: signed by Slack or refused, lists, covers, uncovers.

The request is what Slack sends for a slash command: a signed application/x-www-form-urlencoded POST
with team_id, command, text, user_id and response_url (https://api.slack.com/interactivity/slash-commands),
signed with the v0 scheme (https://api.slack.com/authentication/verifying-requests-from-slack);
the answer is HTTP 200 with a JSON message, "ephemeral" shown only to the person who typed it.

Who is on call, and every time, is worked out by hand from the schedules below and the zones'
daylight-saving dates (as tests/test_oncall_runtime.py states them): Europe/Berlin 2026-10-25 03:00 CEST
-> 02:00 CET, so 02:00-03:00 happens twice (00:00-01:00 UTC, then 01:00-02:00 UTC); America/New_York
2026-11-01 02:00 EDT -> 01:00 EST, so 01:00-02:00 happens twice (05:00-06:00 UTC, then 06:00-07:00 UTC).
Mon 2026-11-02 and Sun 2026-10-25 and 2026-11-01 are the weekdays the calendar gives.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime, timezone
from urllib.parse import urlencode

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from emulator.slack import SlackStandIn
from patterns_common.oncall import parse_schedule
from tests.lambda_loader import load_lambda_module
from tests.test_alert_actions_runtime import (
    FOLLOW_UP_FUNCTION,
    SIGNING_SECRET_VALUE,
    WEBHOOK_SECRET,
    AsynchronousInvokes,
    create_pace_table,
    idle_pace,
    url_event,
)
from tests.test_alert_notification_runtime import FakeLambdaContext

command = load_lambda_module("alert_actions", "oncall_command")

SLACK_SIGNING_SECRET = "step-functions-patterns/slack-signing-secret"
TEAM = "T0001ABCD"  # the app's workspace (slackTeamId)
A, B, C, D = "U0AAAAAA1", "U0BBBBBB2", "U0CCCCCC3", "U0DDDDDD4"
# Daily at 09:00 Berlin from Mon 2026-11-02: A, B, A, B, ... (shift 2, Wed 09:00 to Thu 09:00 CET, is A's)
PRIMARY = {"schedule_id": "primary", "time_zone": "Europe/Berlin",
           "layers": [{"members": [A, B], "start": "2026-11-02T09:00", "shift": "P1D"}]}
WED_10 = datetime(2026, 11, 4, 9, 0, tzinfo=timezone.utc)  # Wed 10:00 CET
WED_10H = WED_10.timestamp()
OUTSIDER_REFUSED = "Not covered: only the members of *primary*'s layers and its coverers may cover it: <@U0AAAAAA1>, <@U0BBBBBB2>."


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


# -- the command's logic (no AWS) ------------------------------------------------------------------


def test_only_a_member_of_a_layer_or_a_coverer_may_cover():
    # When C, in no layer and no coverers list, covers
    with pytest.raises(command.CommandRefused) as refused:
        command.cover(PRIMARY, C, WED_10, None, None)
    # Then: refused, naming who may
    assert str(refused.value) == OUTSIDER_REFUSED
    # When the schedule names C among its coverers
    change = command.cover({**PRIMARY, "coverers": [C]}, C, WED_10, None, None)
    # Then C covers A's shift from now to its end, Thu 09:00 CET
    assert change.after == [{"member": C, "start": "2026-11-04T10:00", "end": "2026-11-05T09:00"}]


def test_a_cover_is_told_naming_whom_it_replaces_from_when_to_when_in_the_schedules_zone():
    # When B covers Wed 12:00 to Thu 12:00 CET: A's shift until Thu 09:00, then B's own
    change = command.cover(PRIMARY, B, WED_10, "2026-11-04T12:00", "2026-11-05T12:00")
    assert change.told == (
        "<@U0BBBBBB2> covers <@U0AAAAAA1> on *primary* from Wed 2026-11-04 12:00 CET to Thu 2026-11-05 12:00 CET "
        "(Europe/Berlin)."
    )
    # When A covers Wed 12:00 CET to Sat 09:00: A's own, then B's (Thu), then A's own (Fri)
    assert command.cover(PRIMARY, A, WED_10, "2026-11-04T12:00", "2026-11-07T09:00").told.startswith(
        "<@U0AAAAAA1> covers <@U0BBBBBB2> on *primary* from Wed 2026-11-04 12:00 CET to Sat 2026-11-07 09:00 CET")
    # When B covers Sun 2026-11-01, before the layer starts (Mon 09:00): nobody was on call, then A
    early = {**PRIMARY, "coverers": [C]}
    assert command.cover(early, C, utc("2026-11-01T00:00"), "2026-11-01T12:00", "2026-11-02T12:00").told.startswith(
        "<@U0CCCCCC3> covers a gap and <@U0AAAAAA1> on *primary* from Sun 2026-11-01 12:00 CET")


def test_a_window_already_past_is_refused():
    # When A covers Tue 09:00 to Wed 09:00 CET at Wed 10:00 CET
    with pytest.raises(command.CommandRefused) as refused:
        command.cover(PRIMARY, A, WED_10, "2026-11-03T09:00", "2026-11-04T09:00")
    assert str(refused.value) == "Not covered: the window ended at Wed 2026-11-04 09:00 CET; a cover must end in the future."


def test_a_cover_lasts_at_most_14_days_or_the_schedules_max_cover_days():
    # The window: 2020-01-01 was a Wednesday, 2099-01-01 a Thursday (from Sat 2000-01-01: 99*365
    # days and 25 leap days, 36160 = 5 mod 7)
    with pytest.raises(command.CommandRefused) as refused:
        command.cover(PRIMARY, A, WED_10, "2020-01-01T00:00", "2099-01-01T00:00")
    assert str(refused.value) == (
        "Not covered: a cover of *primary* lasts at most 14 days (its max_cover_days); "
        "Wed 2020-01-01 00:00 CET to Thu 2099-01-01 00:00 CET is longer."
    )
    # Exactly 14 days is accepted, a minute more is not
    assert command.cover(PRIMARY, A, WED_10, "2026-11-05T09:00", "2026-11-19T09:00").after[0]["end"] == "2026-11-19T09:00"
    with pytest.raises(command.CommandRefused, match="at most 14 days"):
        command.cover(PRIMARY, A, WED_10, "2026-11-05T09:00", "2026-11-19T09:01")
    # A schedule's max_cover_days of 2: two days, not three
    short = {**PRIMARY, "max_cover_days": 2}
    assert command.cover(short, A, WED_10, "2026-11-05T09:00", "2026-11-07T09:00").after
    with pytest.raises(command.CommandRefused, match=r"lasts at most 2 days \(its max_cover_days\)"):
        command.cover(short, A, WED_10, "2026-11-05T09:00", "2026-11-08T09:00")


def test_days_of_a_cover_are_counted_on_the_schedules_clocks_across_a_daylight_saving_change():
    # Tue 2026-10-20 09:00 CEST (07:00 UTC) to Tue 2026-11-03 09:00 CET (08:00 UTC) is 14 days on the clock,
    # 14 days and an hour elapsed (the clocks went back on 2026-10-25): accepted, as a day shift counts days
    change = command.cover(PRIMARY, A, utc("2026-10-20T06:00"), "2026-10-20T09:00", "2026-11-03T09:00")
    assert change.after == [{"member": A, "start": "2026-10-20T09:00", "end": "2026-11-03T09:00"}]


def test_the_current_shift_is_cut_to_max_cover_days():
    # Given: a week-long shift, Mon 2026-11-02 09:00 to Mon 11-09 09:00 CET, and covers of at most 2 days
    weekly = {**PRIMARY, "layers": [{"members": [A, B], "start": "2026-11-02T09:00", "shift": "P1W"}], "max_cover_days": 2}
    # When B covers the current shift at Wed 10:00 CET
    change = command.cover(weekly, B, WED_10, None, None)
    # Then: until Fri 10:00 CET, two days on
    assert change.after == [{"member": B, "start": "2026-11-04T10:00", "end": "2026-11-06T10:00"}]


def test_a_cover_ending_in_the_repeated_new_york_hour_ends_in_its_second_occurrence():
    # Given: hourly shifts, A then B, from Sat 2026-10-31 00:30 EDT (04:30 UTC): shift 25 (B) runs
    # 05:30 to 06:30 UTC, 01:30 EDT to 01:30 EST; C may cover
    item = {"schedule_id": "ny", "time_zone": "America/New_York", "coverers": [C],
            "layers": [{"members": [A, B], "start": "2026-10-31T00:30", "shift": "PT1H"}]}
    # When C covers the current shift at 06:00 UTC, 01:00 EST (the second 01:00 of the night)
    change = command.cover(item, C, utc("2026-11-01T06:00"), None, None)
    # Then: stored with the offset naming the second occurrence, start and end
    assert change.after == [{"member": C, "start": "2026-11-01T01:00-05:00", "end": "2026-11-01T01:30-05:00"}]
    assert change.told == (
        "<@U0CCCCCC3> covers <@U0BBBBBB2> on *ny* from Sun 2026-11-01 01:00 EST to Sun 2026-11-01 01:30 EST "
        "(America/New_York)."
    )
    # And: read back, C is on call until 06:30 UTC, not an hour early; B before, in the first 01:45
    covered = parse_schedule({**item, "overrides": change.after})
    assert covered.on_call(utc("2026-11-01T05:45")) == B
    assert covered.on_call(utc("2026-11-01T06:29")) == C
    assert covered.on_call(utc("2026-11-01T06:30")) == A  # shift 26


def test_typed_times_in_the_repeated_berlin_hour_are_stored_unambiguously():
    # Given: daily at 09:00 from Mon 2026-10-19, A then B: Sat 10-24 09:00 CEST to Sun 09:00 CET is shift 5, B's
    item = {**PRIMARY, "layers": [{"members": [A, B], "start": "2026-10-19T09:00", "shift": "P1D"}]}
    # When A, at 02:10 CEST (00:10 UTC), covers from 02:30 (first occurrence, as a time without offset
    # reads) to 02:30+01:00 (the second)
    change = command.cover(item, A, utc("2026-10-25T00:10"), "2026-10-25T02:30", "2026-10-25T02:30+01:00")
    # Then: both stored with their offsets, an hour apart (00:30 to 01:30 UTC)
    assert change.after == [{"member": A, "start": "2026-10-25T02:30+02:00", "end": "2026-10-25T02:30+01:00"}]
    assert change.told == (
        "<@U0AAAAAA1> covers <@U0BBBBBB2> on *primary* from Sun 2026-10-25 02:30 CEST to Sun 2026-10-25 02:30 CET "
        "(Europe/Berlin)."
    )
    covered = parse_schedule({**item, "overrides": change.after})
    assert [covered.on_call(utc(t)) for t in ("2026-10-25T00:29", "2026-10-25T00:30", "2026-10-25T01:29", "2026-10-25T01:30")] == [B, A, A, B]
    # When A uncovers at 01:00 UTC, the second 02:00: the cover in progress ends then, offset written
    ended = command.uncover({**item, "overrides": change.after}, A, utc("2026-10-25T01:00"))
    assert ended.after == [{"member": A, "start": "2026-10-25T02:30+02:00", "end": "2026-10-25T02:00+01:00"}]


def test_uncover_removes_the_callers_covers_not_started_and_ends_the_one_in_progress_now():
    # Given: C's cover ended Monday, C's in progress Wed 08:00-12:00, C's on Friday, and D's on Thursday
    item = {**PRIMARY, "coverers": [C, D], "overrides": [
        {"member": C, "start": "2026-11-02T09:00", "end": "2026-11-03T09:00"},
        {"member": C, "start": "2026-11-04T08:00", "end": "2026-11-04T12:00"},
        {"member": D, "start": "2026-11-05T09:00", "end": "2026-11-05T12:00"},
        {"member": C, "start": "2026-11-06T09:00", "end": "2026-11-07T09:00"},
    ]}
    # When C uncovers at Wed 10:00 CET
    change = command.uncover(item, C, WED_10)
    # Then: Monday's stays as the record, Wednesday's ends at 10:00, D's stays, Friday's is gone
    assert change.after == [
        {"member": C, "start": "2026-11-02T09:00", "end": "2026-11-03T09:00"},
        {"member": C, "start": "2026-11-04T08:00", "end": "2026-11-04T10:00"},
        {"member": D, "start": "2026-11-05T09:00", "end": "2026-11-05T12:00"},
    ]
    assert change.told == (
        "<@U0CCCCCC3> uncovers *primary*: the cover from Wed 2026-11-04 08:00 CET to Wed 2026-11-04 12:00 CET now ends "
        "at Wed 2026-11-04 10:00 CET; the cover from Fri 2026-11-06 09:00 CET to Sat 2026-11-07 09:00 CET is removed "
        "(Europe/Berlin)."
    )
    # And: A is on call again from 10:00 (shift 2)
    assert parse_schedule({**item, "overrides": change.after}).on_call(WED_10) == A


def test_uncover_in_the_minute_a_cover_started_removes_it_and_with_nothing_to_uncover_is_refused():
    item = {**PRIMARY, "overrides": [{"member": B, "start": "2026-11-04T10:00", "end": "2026-11-04T12:00"}]}
    # 10:00:30 CET: ending it at 10:00 would leave nothing, so it goes
    assert command.uncover(item, B, utc("2026-11-04T09:00:30")).after == []
    with pytest.raises(command.CommandRefused) as refused:
        command.uncover(item, A, WED_10)
    assert str(refused.value) == "You have no cover of *primary* that has not ended."


def test_the_workspace_must_be_the_apps_and_without_one_named_every_request_is_refused():
    command.check_workspace(TEAM, TEAM)
    with pytest.raises(command.CommandRefused, match="only from the Slack workspace this app is deployed for"):
        command.check_workspace("T0OTHER99", TEAM)
    with pytest.raises(command.CommandRefused, match="set.* slackTeamId"):
        command.check_workspace(TEAM, None)


def test_the_listing_names_every_schedule_a_broken_one_with_its_error():
    broken = {"schedule_id": "broken", "time_zone": "Mars/Olympus", "layers": PRIMARY["layers"]}
    assert command.listing([PRIMARY, broken], WED_10) == (
        "*broken* cannot be read: schedule 'broken', time_zone: 'Mars/Olympus' is not an IANA time zone "
        "(such as Europe/Berlin or America/New_York)\n"
        "*primary* (Europe/Berlin)\n"
        "• now: <@U0AAAAAA1> until Thu 2026-11-05 09:00 CET\n"
        "• next: <@U0BBBBBB2> from Thu 2026-11-05 09:00 CET until Fri 2026-11-06 09:00 CET"
    )


@pytest.mark.parametrize("text", ["swap primary", "cover", "cover primary 2026-11-05T09:00", "uncover", "uncover a b"])
def test_an_unknown_request_answers_with_the_usage(text):
    with pytest.raises(command.CommandRefused) as refused:
        command.parse_command(text)
    assert str(refused.value) == command.USAGE



# Issue 41: what mutation testing found no fast test checking.
@pytest.mark.parametrize(("text", "parsed"), [
    ("", command.Command("list")),
    ("list", command.Command("list")),
    ("  cover   primary ", command.Command("cover", "primary")),
    ("cover primary 2026-11-05T09:00 2026-11-05T12:00", command.Command("cover", "primary", "2026-11-05T09:00", "2026-11-05T12:00")),
    ("uncover primary", command.Command("uncover", "primary")),
])
def test_a_request_is_read_as_its_verb_and_schedule(text, parsed):
    assert command.parse_command(text) == parsed


def test_without_a_workspace_the_refusal_names_the_context_key_to_set():
    with pytest.raises(command.CommandRefused) as refused:
        command.check_workspace(TEAM, None)
    assert "sets the context key slackTeamId to the workspace's ID (T...) and deploys again." in str(refused.value)


def test_the_listing_of_an_empty_table_says_so():
    assert command.listing([], WED_10) == "There are no on-call schedules yet (the on-call table is empty)."


def test_the_listing_shows_a_gap_as_nobody_and_an_account_that_is_no_slack_member_as_written():
    # "late" starts Tue 2026-12-01, after the two weeks looked at (Wed 11-04 10:00 to Wed 11-18 10:00 CET);
    # "mail" hands off daily at 00:00 UTC from Mon 11-02: Wed is shift 2, its first member's, then A's
    late = {"schedule_id": "late", "time_zone": "Europe/Berlin",
            "layers": [{"members": [A], "start": "2026-12-01T09:00", "shift": "P1D"}]}
    mail = {"schedule_id": "mail", "time_zone": "UTC",
            "layers": [{"members": ["ops@example.com", A], "start": "2026-11-02T00:00", "shift": "P1D"}]}
    assert command.listing([mail, late], WED_10) == (
        "*late* (Europe/Berlin)\n"
        "• now: nobody until Wed 2026-11-18 10:00 CET\n"
        "• next: nobody in the next 14 days\n"
        "*mail* (UTC)\n"
        "• now: ops@example.com until Thu 2026-11-05 00:00 UTC\n"
        "• next: <@U0AAAAAA1> from Thu 2026-11-05 00:00 UTC until Fri 2026-11-06 00:00 UTC"
    )


def test_a_window_ending_exactly_now_is_past():
    # Wed 09:00 to 10:00 CET, asked at Wed 10:00:00 CET: nothing of it is left to cover
    with pytest.raises(command.CommandRefused) as refused:
        command.cover(PRIMARY, A, WED_10, "2026-11-04T09:00", "2026-11-04T10:00")
    assert str(refused.value) == "Not covered: the window ended at Wed 2026-11-04 10:00 CET; a cover must end in the future."


def test_a_schedule_that_cannot_be_read_is_neither_covered_nor_uncovered_and_says_why():
    broken = {**PRIMARY, "time_zone": "Mars/Olympus"}
    why = ("schedule 'primary', time_zone: 'Mars/Olympus' is not an IANA time zone (such as Europe/Berlin or "
           "America/New_York).")
    for change in (lambda: command.cover(broken, A, WED_10, None, None), lambda: command.uncover(broken, A, WED_10)):
        with pytest.raises(command.CommandRefused) as refused:
            change()
        assert str(refused.value) == f"This schedule cannot be read: {why}"


def test_a_typed_time_the_schedule_cannot_read_is_not_covered_naming_the_field():
    with pytest.raises(command.CommandRefused) as refused:
        command.cover(PRIMARY, A, WED_10, "tomorrow", "2026-11-05T12:00")
    assert str(refused.value).startswith("Not covered: schedule 'primary', overrides[0].start: must be a local time ")


def test_a_cover_of_ones_own_shift_and_of_three_in_a_row_are_told_so():
    # A holds shift 2 (Wed 09:00 to Thu 09:00 CET) and covers it from Wed 10:00
    assert command.cover(PRIMARY, A, WED_10, None, None).told == (
        "<@U0AAAAAA1> covers their own shift on *primary* from Wed 2026-11-04 10:00 CET to Thu 2026-11-05 09:00 CET "
        "(Europe/Berlin).")
    # C covers Sun 12:00 to Tue 12:00 CET: nobody until the layer starts Mon 09:00, A until Tue 09:00, then B
    early = {**PRIMARY, "coverers": [C]}
    assert command.cover(early, C, utc("2026-11-01T00:00"), "2026-11-01T12:00", "2026-11-03T12:00").told == (
        "<@U0CCCCCC3> covers a gap, <@U0AAAAAA1> and <@U0BBBBBB2> on *primary* from Sun 2026-11-01 12:00 CET to "
        "Tue 2026-11-03 12:00 CET (Europe/Berlin).")


def test_uncover_with_no_overrides_or_only_one_ending_now_is_refused():
    nothing = "You have no cover of *primary* that has not ended."
    with pytest.raises(command.CommandRefused, match=rf"^{nothing.replace('*', '[*]')}$"):
        command.uncover(PRIMARY, B, WED_10)
    # B's cover ended at Wed 10:00 CET, the instant B uncovers: it has ended, and stays as the record
    ended = {**PRIMARY, "overrides": [{"member": B, "start": "2026-11-04T08:00", "end": "2026-11-04T10:00"}]}
    with pytest.raises(command.CommandRefused, match=rf"^{nothing.replace('*', '[*]')}$"):
        command.uncover(ended, B, WED_10)


def test_uncover_within_the_first_minute_of_a_cover_removes_it_to_the_microsecond():
    # 10:00:00.25 CET is in the minute the cover started: ended at 10:00 it would last nothing, so it goes
    item = {**PRIMARY, "overrides": [{"member": B, "start": "2026-11-04T10:00", "end": "2026-11-04T12:00"}]}
    change = command.uncover(item, B, WED_10.replace(microsecond=250000))
    assert change.after == []
    assert change.told.endswith("the cover from Wed 2026-11-04 10:00 CET to Wed 2026-11-04 12:00 CET is removed (Europe/Berlin).")

# -- the endpoint, on moto, with the follow-up posting to the Slack stand-in ------------------------


@pytest.fixture(scope="module")
def module_endpoint():
    """One moto account, Slack stand-in and loaded handler for the module; ``endpoint`` puts the schedule
    back and empties the channel before each test."""
    with SlackStandIn() as slack, pytest.MonkeyPatch.context() as env, mock_aws():
        env.setenv("ALERT_TABLE_NAME", "alerts")
        env.setenv("ON_CALL_TABLE_NAME", "on-call")
        env.setenv("SLACK_SIGNING_SECRET_NAME", SLACK_SIGNING_SECRET)
        env.setenv("SLACK_WEBHOOK_SECRET_NAME", WEBHOOK_SECRET)
        env.setenv("FOLLOW_UP_FUNCTION_NAME", FOLLOW_UP_FUNCTION)
        env.setenv("SLACK_TEAM_ID", TEAM)
        create_pace_table(env)
        dynamodb = boto3.resource("dynamodb")
        for name, key in (("alerts", "alert_id"), ("on-call", "schedule_id")):
            dynamodb.create_table(TableName=name, KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
                                  AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
                                  BillingMode="PAY_PER_REQUEST")
        secrets = boto3.client("secretsmanager")
        env.setenv("SIGNING_KEY_SECRET_ARN", secrets.create_secret(Name="key", SecretString="k" * 64)["ARN"])
        secrets.create_secret(Name=SLACK_SIGNING_SECRET, SecretString=SIGNING_SECRET_VALUE)
        secrets.create_secret(Name=WEBHOOK_SECRET, SecretString=slack.url)
        parameters.clear_caches()
        handler = load_lambda_module("alert_actions", "handler")
        handler.lambda_client = AsynchronousInvokes(load_lambda_module("alert_followup", "handler"))
        load_lambda_module("alert_actions", "oncall_slash").on_call_table.cache_clear()
        env.setattr(handler.time, "time", lambda: WED_10H)
        yield handler, slack
    parameters.clear_caches()


@pytest.fixture
def endpoint(module_endpoint):
    handler, slack = module_endpoint
    table = boto3.resource("dynamodb").Table("on-call")
    for key in table.scan(ProjectionExpression="schedule_id")["Items"]:
        table.delete_item(Key=key)
    table.put_item(Item=PRIMARY)
    handler.lambda_client.queued.clear()
    slack.reset()
    idle_pace()
    return handler


@pytest.fixture
def slack(module_endpoint, endpoint):
    return module_endpoint[1]


def slash(text: str, *, user_id: str = C, timestamp: float = WED_10H, team_id: str = TEAM) -> dict:
    body = urlencode({
        "token": "legacy-verification-token", "team_id": team_id, "team_domain": "example",
        "channel_id": "C0001", "channel_name": "on-call", "user_id": user_id, "user_name": "jo",
        "command": "/oncall", "text": text, "api_app_id": "A0001",
        "response_url": "https://hooks.slack.com/commands/T0001/1/abc", "trigger_id": "1.2.3",
    })
    stamp = str(int(timestamp))
    signature = "v0=" + hmac.new(SIGNING_SECRET_VALUE.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return url_event("POST", body=body, headers={"content-type": "application/x-www-form-urlencoded",
                                                 "x-slack-request-timestamp": stamp, "x-slack-signature": signature})


def ask(endpoint, text: str, **kwargs) -> str:
    """The ephemeral answer, once what the endpoint handed off has run too."""
    response = endpoint.lambda_handler(slash(text, **kwargs), FakeLambdaContext())
    endpoint.lambda_client.run_queued()
    assert response["statusCode"] == 200
    assert response["headers"]["Content-Type"] == "application/json"
    body = json.loads(response["body"])
    assert body["response_type"] == "ephemeral"
    return body["text"]


def overrides() -> list:
    return boto3.resource("dynamodb").Table("on-call").get_item(Key={"schedule_id": "primary"})["Item"].get("overrides", [])


def channel(slack) -> list[str]:
    return [post.body["text"] for post in slack.delivered]


def test_a_signed_oncall_lists_the_current_and_next_person_in_the_schedules_zone(endpoint):
    assert ask(endpoint, "") == (
        "*primary* (Europe/Berlin)\n"
        "• now: <@U0AAAAAA1> until Thu 2026-11-05 09:00 CET\n"
        "• next: <@U0BBBBBB2> from Thu 2026-11-05 09:00 CET until Fri 2026-11-06 09:00 CET"
    )


def test_the_listing_keeps_a_schedule_it_cannot_read_with_its_error(endpoint):
    # Given: a second item whose shift is months (refused by the parser)
    boto3.resource("dynamodb").Table("on-call").put_item(
        Item={"schedule_id": "monthly", "time_zone": "UTC", "layers": [{"members": [A], "start": "2026-11-02T09:00", "shift": "P1M"}]})
    text = ask(endpoint, "list")
    assert text.startswith(
        "*monthly* cannot be read: schedule 'monthly', layers[0].shift: must be an ISO 8601 duration in hours, days or "
        "weeks (PT12H, P1D, P1W), got 'P1M'\n*primary* (Europe/Berlin)\n")


def test_a_stale_signature_is_refused_and_changes_nothing(endpoint):
    # Signed correctly, but six minutes ago: Slack's guide refuses more than five minutes
    response = endpoint.lambda_handler(slash("cover primary", user_id=B, timestamp=WED_10H - 360), FakeLambdaContext())
    assert response["statusCode"] == 401
    assert overrides() == []


def test_a_member_covers_the_current_shift_and_the_channel_is_told(endpoint, slack):
    # When B covers the current shift at Wed 10:00 CET
    text = ask(endpoint, "cover primary", user_id=B)
    # Then: B holds it from now to A's handoff, Thu 09:00, and the channel is told whom B covers
    told = ("<@U0BBBBBB2> covers <@U0AAAAAA1> on *primary* from Wed 2026-11-04 10:00 CET to Thu 2026-11-05 09:00 CET "
            "(Europe/Berlin).")
    assert text == told
    assert channel(slack) == [told]
    assert overrides() == [{"member": B, "start": "2026-11-04T10:00", "end": "2026-11-05T09:00"}]
    # (and B's own shift follows: B until Fri 09:00)
    assert "• now: <@U0BBBBBB2> until Fri 2026-11-06 09:00 CET" in ask(endpoint, "")


def test_an_outsider_is_refused_and_nothing_is_written_or_told(endpoint, slack):
    assert ask(endpoint, "cover primary 2020-01-01T00:00 2099-01-01T00:00", user_id=C) == OUTSIDER_REFUSED
    assert overrides() == []
    assert channel(slack) == []


def test_a_request_from_another_workspace_is_refused(endpoint, slack):
    text = ask(endpoint, "cover primary", user_id=B, team_id="T0OTHER99")
    assert text == "/oncall takes requests only from the Slack workspace this app is deployed for."
    assert overrides() == []


def test_without_slack_team_id_every_oncall_is_refused(endpoint, slack, monkeypatch):
    # Given: the deployment names no workspace (context key slackTeamId unset: no SLACK_TEAM_ID)
    monkeypatch.delenv("SLACK_TEAM_ID")
    # Then: neither a cover nor the listing is answered with the schedule
    for text in ("cover primary", ""):
        assert ask(endpoint, text, user_id=B).startswith("/oncall is off: this app's deployment names no Slack workspace.")
    assert overrides() == []


def test_an_empty_overrides_list_is_covered_like_a_missing_one(endpoint):
    boto3.resource("dynamodb").Table("on-call").put_item(Item={**PRIMARY, "overrides": []})
    assert ask(endpoint, "cover primary", user_id=B).startswith("<@U0BBBBBB2> covers <@U0AAAAAA1> on *primary*")
    assert overrides() == [{"member": B, "start": "2026-11-04T10:00", "end": "2026-11-05T09:00"}]


def test_an_overlapping_cover_is_refused_naming_the_schedule_and_the_override(endpoint):
    ask(endpoint, "cover primary", user_id=B)
    text = ask(endpoint, "cover primary 2026-11-05T08:00 2026-11-05T12:00", user_id=A)
    assert text == "Not covered: schedule 'primary', overrides[1]: overlaps overrides[0]: two overrides cannot cover the same time."
    assert len(overrides()) == 1


def test_uncover_ends_the_callers_cover_now_and_the_channel_is_told(endpoint, slack):
    # Given: B's cover from Wed 08:00 to Thu 09:00 CET, in progress
    boto3.resource("dynamodb").Table("on-call").put_item(
        Item={**PRIMARY, "overrides": [{"member": B, "start": "2026-11-04T08:00", "end": "2026-11-05T09:00"}]})
    # When B uncovers at Wed 10:00 CET
    text = ask(endpoint, "uncover primary", user_id=B)
    # Then: it ends at 10:00, the channel is told, and A (shift 2) is on call again
    told = ("<@U0BBBBBB2> uncovers *primary*: the cover from Wed 2026-11-04 08:00 CET to Thu 2026-11-05 09:00 CET now "
            "ends at Wed 2026-11-04 10:00 CET (Europe/Berlin).")
    assert text == told
    assert channel(slack) == [told]
    assert overrides() == [{"member": B, "start": "2026-11-04T08:00", "end": "2026-11-04T10:00"}]
    assert "• now: <@U0AAAAAA1> until Thu 2026-11-05 09:00 CET" in ask(endpoint, "")


def test_a_change_worked_out_over_overrides_changed_meanwhile_is_not_written(endpoint):
    # Given: B's uncover worked out over B's cover, then B's cover replaced by A's (same count of overrides)
    table = boto3.resource("dynamodb").Table("on-call")
    seen = {**PRIMARY, "overrides": [{"member": B, "start": "2026-11-05T09:00", "end": "2026-11-06T09:00"}]}
    change = command.uncover(seen, B, WED_10)
    table.put_item(Item={**PRIMARY, "overrides": [{"member": A, "start": "2026-11-06T09:00", "end": "2026-11-07T09:00"}]})
    # When it is written
    with pytest.raises(command.CommandRefused, match="The schedule changed while you typed"):
        load_lambda_module("alert_actions", "oncall_slash")._write(change)
    # Then: A's cover is still there
    assert overrides() == [{"member": A, "start": "2026-11-06T09:00", "end": "2026-11-07T09:00"}]

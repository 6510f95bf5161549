"""Find Who Is On Call: a round's schedule targets resolved at the moment it notifies, gaps and unreadable schedules.

Expected people are worked out by hand from issue 31: ``schedule:<id>`` is whoever the schedule has on
call when the round notifies; a schedule with nobody on call hands the round to the next level and the
message says which schedule had the gap; an unusable schedule is a gap whose message says why (issue 38),
and the alert fails, naming every unusable schedule, only when the round pages nobody.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone
from decimal import Decimal

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from emulator.slack import SlackStandIn
from patterns_common.oncall import parse_schedule
from patterns_common.slack_pace import reserve_slot_on
from tests.lambda_loader import load_lambda_module
from tests.test_alert_notification_runtime import ACTIONS_URL, LINK_KEY, FakeLambdaContext, alert_item

A, B, C, LEAD = "U0AAAAAA1", "U0BBBBBB2", "U0CCCCCC3", "U0LEAD001"
# Business hours in Berlin (CET in November): C from 09:00 to 17:00, Monday to Friday; nobody otherwise.
BUSINESS_HOURS = {
    "schedule_id": "business", "time_zone": "Europe/Berlin",
    "layers": [{"members": [C], "start": "2026-11-02T09:00", "shift": "P1D",
                "restrictions": [{"days": ["MON", "TUE", "WED", "THU", "FRI"], "start": "09:00", "end": "17:00"}]}],
}
# Daily at 09:00 Berlin from Mon 2026-11-02: A, then B.
DAILY = {"schedule_id": "primary", "time_zone": "Europe/Berlin",
         "layers": [{"members": [A, B], "start": "2026-11-02T09:00", "shift": "P1D"}]}
WED_10H = datetime(2026, 11, 4, 9, 0, tzinfo=timezone.utc)  # Wed 10:00 CET
WED_20H = datetime(2026, 11, 4, 19, 0, tzinfo=timezone.utc)  # Wed 20:00 CET


@pytest.fixture
def logic():
    return load_lambda_module("alert_on_call", "alert_on_call_logic")


def reader(logic, *items, broken=()):
    schedules = {item["schedule_id"]: parse_schedule(item) for item in items}

    def read(schedule_id):
        if schedule_id in broken or schedule_id not in schedules:
            raise logic.ScheduleUnreadable(schedule_id, "the on-call table has no such schedule")
        return schedules[schedule_id]

    return read


def test_a_schedule_target_is_whoever_is_on_call_when_the_round_notifies(logic):
    levels = [["schedule:primary", LEAD]]
    read = reader(logic, DAILY)
    # Wed 2026-11-04 10:00 CET is shift 2 (A); Thu 2026-11-05 10:00 CET shift 3 (B)
    assert logic.find_round_targets(levels, 0, WED_10H, read).users == [A, LEAD]
    assert logic.find_round_targets(levels, 0, datetime(2026, 11, 5, 9, tzinfo=timezone.utc), read).users == [B, LEAD]


def test_a_gap_pages_the_next_level_and_the_message_names_the_schedule(logic):
    # Given: level 1 is business hours, level 2 the lead; at 20:00 nobody is on business hours
    levels = [["schedule:business"], [LEAD]]
    found = logic.find_round_targets(levels, 0, WED_20H, reader(logic, BUSINESS_HOURS))
    # Then
    assert found.users == [LEAD]
    assert found.failed == []
    message = logic.round_message("Disk full on web-1", found.notes)
    assert message.startswith("Disk full on web-1\n")
    assert "Schedule business has nobody on call." in message
    # And in business hours C is paged, not the lead
    assert logic.find_round_targets(levels, 0, WED_10H, reader(logic, BUSINESS_HOURS)).users == [C]


def test_a_gap_at_the_last_level_is_a_failure_of_the_round_never_silence(logic):
    found = logic.find_round_targets([[LEAD], ["schedule:business"]], 1, WED_20H, reader(logic, BUSINESS_HOURS))
    assert found.users == []
    assert found.failed == [{"user": "schedule:business", "error": "NobodyOnCall"}]


def test_an_unreadable_schedule_fails_the_alert_naming_it_when_no_later_level_pages(logic):
    with pytest.raises(logic.ScheduleUnreadable, match=r"^schedule:gone: the on-call table has no such schedule$"):
        logic.find_round_targets([[LEAD], ["schedule:gone"]], 1, WED_10H, reader(logic))
    # A later level whose own schedule has a gap pages nobody either: still a failure naming the unreadable one
    with pytest.raises(logic.ScheduleUnreadable, match=r"^schedule:gone: "):
        logic.find_round_targets([["schedule:gone"], ["schedule:business"]], 0, WED_20H, reader(logic, BUSINESS_HOURS))


def test_an_unreadable_schedule_with_a_later_level_pages_it_and_tells_it(logic):
    found = logic.find_round_targets([["schedule:gone"], [LEAD]], 0, WED_10H, reader(logic))
    assert found.users == [LEAD]
    assert "Schedule gone could not be read (the on-call table has no such schedule)." in found.notes


@pytest.mark.parametrize(("round_", "level"), [(1, 0), (2, 1), (3, 1), (9, 1)])
def test_round_k_resolves_level_k_and_the_last_level_after(logic, round_, level):
    assert logic.level_of_round([["a"], ["b"]], round_) == level


@pytest.fixture
def on_call_table(monkeypatch):
    with mock_aws():
        monkeypatch.setenv("ON_CALL_TABLE_NAME", "on-call")
        secret = boto3.client("secretsmanager").create_secret(Name="action-link-key", SecretString=LINK_KEY.decode())
        monkeypatch.setenv("ACTION_LINK_KEY_SECRET_ARN", secret["ARN"])
        parameters.clear_caches()
        table = boto3.resource("dynamodb").create_table(
            TableName="on-call",
            KeySchema=[{"AttributeName": "schedule_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "schedule_id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        yield table
    parameters.clear_caches()


def test_the_handler_reads_the_schedule_signs_the_links_of_who_it_found_and_names_the_gap(on_call_table, monkeypatch):
    # Given: the business-hours schedule in the table, at Wed 20:00 CET
    from patterns_common.alert_action_links import verify

    on_call_table.put_item(Item=BUSINESS_HOURS)
    handler = load_lambda_module("alert_on_call", "handler")
    monkeypatch.setattr(handler.time, "time", lambda: WED_20H.timestamp())
    event = {"alert_id": "disk-full", "message": "Disk full", "levels": [["schedule:business"], [LEAD]],
             "round": 1, "rounds": 3, "interval_seconds": 300, "occurrence": "2026-03-04T18:55:00Z",
             "actions_url": ACTIONS_URL}
    # When
    result = json.loads(json.dumps(handler.lambda_handler(event, FakeLambdaContext())))
    # Then: the lead is paged with links of their own, told which schedule had nobody
    assert result["users"] == [LEAD]
    assert result["failed"] == []
    assert result["message"].startswith("Disk full\nSchedule business has nobody on call.")
    claim = verify(LINK_KEY, result["links"][LEAD]["acknowledge"].split("?t=", 1)[1], now=int(WED_20H.timestamp()))
    assert (claim.user, claim.action) == (LEAD, "acknowledge")
    # for the occurrence Fetch Alert Config read (issue 30): the endpoint refuses it once the alert is raised again
    assert claim.occurrence == "2026-03-04T18:55:00Z"
    # valid a day after the last round that can send it: rounds 2 and 3 are 300 s apart
    assert claim.expires_at == int(WED_20H.timestamp()) + 2 * 300 + 24 * 3600


def test_the_handler_turns_an_invalid_item_into_schedule_unreadable_naming_it(on_call_table):
    on_call_table.put_item(Item={**DAILY, "time_zone": "Europe/Berln"})
    handler = load_lambda_module("alert_on_call", "handler")
    event = {"alert_id": "disk-full", "message": "Disk full", "levels": [["schedule:primary"]],
             "round": 1, "rounds": 1, "interval_seconds": 300, "occurrence": None, "actions_url": ACTIONS_URL}
    with pytest.raises(Exception) as raised:
        handler.lambda_handler(event, FakeLambdaContext())
    # The class name is the error name the execution fails with
    assert type(raised.value).__name__ == "ScheduleUnreadable"
    assert str(raised.value).startswith("schedule:primary: schedule 'primary', time_zone: 'Europe/Berln' is not an IANA")


def test_an_alert_naming_schedules_lists_them_and_signs_links_for_its_accounts_only():
    config_logic = load_lambda_module("alert_config", "alert_config_logic")
    item = alert_item(user_accounts=None, escalation=[["schedule:primary", LEAD], ["schedule:business"]],
                      notification_count=Decimal(3))
    config = config_logic.parse_alert_config(item, links_for=lambda user, span: {"acknowledge": user})
    assert config.schedules == ["primary", "business"]
    assert sorted(config.links) == [LEAD]
    # A gap at level 1 can add level 2's target to round 1: the limits count it
    assert config.level_sizes() == [3, 1, 1]


def test_a_malformed_schedule_target_is_refused_naming_the_field():
    config_logic = load_lambda_module("alert_config", "alert_config_logic")
    with pytest.raises(config_logic.InvalidAlertConfig, match=r"^escalation\[0\]\[0\]: schedule:<id> names"):
        config_logic.parse_alert_config(alert_item(user_accounts=None, escalation=[["schedule:no such"]]))


def test_every_schedule_a_sample_alert_names_is_a_sample_schedule_the_runtime_accepts():
    from boto3.dynamodb.types import TypeDeserializer

    from emulator import samples

    deserialize = TypeDeserializer().deserialize
    named = []
    for sample in samples.for_machine("alert"):
        item = samples.read_alert_item(samples.alert_item_for(sample.input))
        levels = [[target["S"] for target in level["L"]] for level in item.get("escalation", {}).get("L", [])]
        wanted = {target.removeprefix("schedule:") for level in levels for target in level if target.startswith("schedule:")}
        found = samples.schedules_named_by(item)
        assert {path.stem for path in found} == wanted, sample.name
        for path in found:
            schedule = parse_schedule({k: deserialize(v) for k, v in samples.read_json(path).items()})
            assert schedule.schedule_id == path.stem
            named.append(schedule.schedule_id)
    assert named, "a sample alert pages an on-call schedule (make demo shows it)"


# -- the schedules declared with the app, written by a custom resource ------------------------------
def declared_request(kind: str, schedules: list, old: list | None = None) -> dict:
    request = {"RequestType": kind, "StackId": "arn:aws:cloudformation:us-east-1:123456789012:stack/S/1",
               "RequestId": "r-1", "LogicalResourceId": "Declared",
               "ResourceProperties": {"ServiceToken": "arn:fn", "Schedules": json.dumps(schedules)}}
    if old is not None:
        request["OldResourceProperties"] = {"ServiceToken": "arn:fn", "Schedules": json.dumps(old)}
    return request


def test_create_puts_every_declared_schedule():
    declared = load_lambda_module("alert_oncall_declared", "alert_oncall_declared_logic")
    writes = declared.plan(declared_request("Create", [DAILY, BUSINESS_HOURS]))
    assert writes.puts == [declared.Put(DAILY, None), declared.Put(BUSINESS_HOURS, None)] and writes.deletes == []


def test_update_puts_the_changed_deletes_the_undeclared_and_leaves_the_unchanged_with_their_overrides():
    # Given: DAILY and BUSINESS_HOURS were declared; now DAILY changed and BUSINESS_HOURS is gone
    declared = load_lambda_module("alert_oncall_declared", "alert_oncall_declared_logic")
    weekly = {**DAILY, "layers": [{**DAILY["layers"][0], "shift": "P7D"}]}
    unchanged = {**BUSINESS_HOURS, "schedule_id": "kept"}
    writes = declared.plan(declared_request("Update", [weekly, unchanged], old=[DAILY, BUSINESS_HOURS, unchanged]))
    # Then: only the changed one is written, beside what it declared before (its runtime covers are
    # kept by merge: tests/test_alert_oncall_declared_runtime.py)
    assert writes.puts == [declared.Put(weekly, DAILY)] and writes.deletes == ["business"]


def test_delete_deletes_the_schedules_the_resource_wrote():
    declared = load_lambda_module("alert_oncall_declared", "alert_oncall_declared_logic")
    writes = declared.plan(declared_request("Delete", [DAILY, BUSINESS_HOURS]))
    assert writes.puts == [] and writes.deletes == ["business", "primary"]


def test_the_response_is_the_documented_object_and_a_failure_carries_its_reason():
    # "Custom resource response objects": Status SUCCESS|FAILED, Reason required when FAILED,
    # PhysicalResourceId, StackId, RequestId, LogicalResourceId copied from the request.
    declared = load_lambda_module("alert_oncall_declared", "alert_oncall_declared_logic")
    request = declared_request("Create", [DAILY])
    assert declared.response(request, "t/declared") == {
        "Status": "SUCCESS", "PhysicalResourceId": "t/declared", "StackId": request["StackId"],
        "RequestId": "r-1", "LogicalResourceId": "Declared"}
    failed = declared.response(request, "t/declared", "AccessDeniedException: no")
    assert failed["Status"] == "FAILED" and failed["Reason"] == "AccessDeniedException: no"


# -- handoff notices: a one-time schedule per handoff, and each notice posted once ------------------
# Expected instants worked out by hand; the at() form and its zone are EventBridge Scheduler's
# (User Guide, "Schedule types": at(yyyy-mm-ddThh:mm:ss), evaluated in ScheduleExpressionTimezone;
# API Reference, CreateSchedule: a name is 1 to 64 of [0-9a-zA-Z-_.], ActionAfterCompletion DELETE).
@pytest.fixture
def handoff():
    return load_lambda_module("alert_oncall_handoff", "alert_oncall_handoff_logic")


def _name(schedule_id: str, minute: str) -> str:
    # docs/on-call-schedules.md: handoff-<id, its first 16 characters>-<first 10 hex of its SHA-256>-<UTC minute>
    return f"handoff-{schedule_id[:16]}-{hashlib.sha256(schedule_id.encode()).hexdigest()[:10]}-{minute}"


def test_every_handoff_of_the_next_two_days_is_armed_in_utc_named_from_the_schedule_and_the_instant(handoff):
    # DAILY: A Mon 2026-11-02, B Tue, A Wed, B Thu, A Fri, each from 09:00 CET (08:00 UTC). From Wed
    # 09:00 UTC the next two days hold Thu 08:00 UTC (to B) and Fri 08:00 UTC (to A).
    armings = handoff.to_arm([parse_schedule(DAILY)], WED_10H)
    assert [(a.name, a.expression, a.input) for a in armings] == [
        (_name("primary", "20261105T0800Z"), "at(2026-11-05T08:00:00)",
         {"schedule_id": "primary", "handoff_at": "2026-11-05T08:00:00+00:00"}),
        (_name("primary", "20261106T0800Z"), "at(2026-11-06T08:00:00)",
         {"schedule_id": "primary", "handoff_at": "2026-11-06T08:00:00+00:00"}),
    ]
    notice = handoff.notice(parse_schedule(DAILY), datetime(2026, 11, 5, 8, 0, tzinfo=timezone.utc))
    assert notice.member == B
    assert notice.text == (f"<@{B}> your on-call shift for *primary* starts now, Thu 2026-11-05 09:00 CET "
                           "until Fri 2026-11-06 09:00 CET.")


def test_a_handoff_due_now_is_not_armed_again_and_one_two_days_ahead_is(handoff):
    # At Thu 08:00 UTC exactly, that handoff is due (its schedule fires now): armed are Fri 08:00 and Sat 08:00 UTC
    armings = handoff.to_arm([parse_schedule(DAILY)], datetime(2026, 11, 5, 8, 0, tzinfo=timezone.utc))
    assert [a.expression for a in armings] == ["at(2026-11-06T08:00:00)"]
    # (Sat 08:00 UTC is the end of the two days, not within them; a minute earlier it is)
    armings = handoff.to_arm([parse_schedule(DAILY)], datetime(2026, 11, 5, 8, 1, tzinfo=timezone.utc))
    assert [a.expression for a in armings] == ["at(2026-11-06T08:00:00)", "at(2026-11-07T08:00:00)"]


def test_across_the_spring_change_the_handoff_stays_at_nine_local_one_hour_earlier_in_utc(handoff):
    daily = {**DAILY, "layers": [{**DAILY["layers"][0], "start": "2026-03-23T09:00"}]}
    # Sat 2026-03-28 10:00 CET is 09:00 UTC; Sunday 09:00 is CEST, 07:00 UTC; Monday 09:00 CEST too
    armings = handoff.to_arm([parse_schedule(daily)], datetime(2026, 3, 28, 9, 0, tzinfo=timezone.utc))
    assert [a.expression for a in armings] == ["at(2026-03-29T07:00:00)", "at(2026-03-30T07:00:00)"]


def test_both_handoffs_named_01_30_on_the_autumn_night_are_armed_apart(handoff):
    # Hourly A/B in New York from 00:30 EDT on 2026-11-01: 01:30 EDT is 05:30 UTC and 01:30 EST, the
    # second 01:30 of that night, 06:30 UTC; in UTC each instant has a time of its own
    hourly = {"schedule_id": "hourly", "time_zone": "America/New_York",
              "layers": [{"members": [A, B], "start": "2026-11-01T00:30", "shift": "PT1H"}]}
    armings = handoff.to_arm([parse_schedule(hourly)], datetime(2026, 11, 1, 5, 0, tzinfo=timezone.utc))
    assert [a.expression for a in armings[:2]] == ["at(2026-11-01T05:30:00)", "at(2026-11-01T06:30:00)"]
    assert armings[0].name != armings[1].name
    assert len(armings) == 48  # one an hour for two days


def test_a_handoff_to_a_gap_or_within_a_shift_is_not_armed_and_sends_nothing(handoff):
    # Business hours: C from 09:00 to 17:00 CET on weekdays. From Wed 09:00 UTC (10:00 CET): Wed 16:00
    # UTC is a gap (no notice); Thu 08:00 UTC is C again; Fri 08:00 UTC too
    armings = handoff.to_arm([parse_schedule(BUSINESS_HOURS)], WED_10H)
    assert [a.expression for a in armings] == ["at(2026-11-05T08:00:00)", "at(2026-11-06T08:00:00)"]
    assert handoff.notice(parse_schedule(BUSINESS_HOURS), datetime(2026, 11, 4, 16, 0, tzinfo=timezone.utc)) is None
    assert handoff.notice(parse_schedule(DAILY), WED_10H) is None
    assert handoff.to_arm([], WED_10H) == []


def test_schedule_names_fit_schedulers_rule_for_any_schedule_id(handoff):
    # The longest id (64 characters) of every character a schedule id may hold, and two that differ past the 16th
    longest = "a.b_c-" * 10 + "wxyz"
    first, second = "team-payments-eu-primary", "team-payments-eu-secondary"
    at = datetime(2026, 11, 5, 8, 0, tzinfo=timezone.utc)
    names = [handoff.schedule_name(schedule_id, at) for schedule_id in (longest, first, second)]
    assert all(re.fullmatch(r"[0-9A-Za-z_.-]{1,64}", name) for name in names)
    assert names[1] != names[2] and names[1].startswith("handoff-team-payments-eu-")
    # A notice deferred for Slack's pace (its slot 08:00:02.5, woken at 08:00:01) gets a name of its own
    # beside it, also within 64
    later = handoff.deferral(longest, at, at.timestamp() + 2.5)
    assert later.name == f"{names[0]}-p080001" and len(later.name) <= 64
    assert later.expression == "at(2026-11-05T08:00:01)"


def test_handoffs_are_armed_named_and_recorded_in_utc_whatever_the_machines_zone(handoff, machine_zone_not_utc):
    # Given: a machine whose local zone is UTC+05:30 (Thu 08:00 UTC is 13:30 there)
    # Then: the same UTC times, names and input as on a UTC machine (Lambda's), never the local 13:30
    [thursday, friday] = handoff.to_arm([parse_schedule(DAILY)], WED_10H)
    assert (thursday.name, thursday.expression, thursday.input) == (
        _name("primary", "20261105T0800Z"), "at(2026-11-05T08:00:00)",
        {"schedule_id": "primary", "handoff_at": "2026-11-05T08:00:00+00:00"})
    assert friday.expression == "at(2026-11-06T08:00:00)"
    # a notice deferred to its slot at 08:00:02.5 UTC is woken 1 to 2 s before it, at the whole second 08:00:01
    later = handoff.deferral("primary", THU_08H, THU_08H.timestamp() + 2.5)
    assert (later.name, later.expression) == (_name("primary", "20261105T0800Z") + "-p080001", "at(2026-11-05T08:00:01)")
    # the posted record is keyed on the UTC instant, whichever zone the instant was given in
    in_berlin = datetime.fromisoformat("2026-11-05T09:00:00+01:00")
    assert handoff.record_key("primary", in_berlin) == {"id": "handoff-notice#primary#2026-11-05T08:00:00+00:00"}


def test_a_shift_of_four_weeks_or_more_is_announced_without_its_end(handoff):
    # Given: A alone on call from Mon 2026-11-02 09:00 CET (one member: the shifts run on into one)
    solo = {"schedule_id": "solo", "time_zone": "Europe/Berlin",
            "layers": [{"members": [A], "start": "2026-11-02T09:00", "shift": "P1D"}]}
    # When: the handoff at its start, to A from nobody
    notice = handoff.notice(parse_schedule(solo), datetime(2026, 11, 2, 8, 0, tzinfo=timezone.utc))
    # Then: no end within the four weeks shown, so none is named
    assert notice == handoff.Notice("solo", A, f"<@{A}> your on-call shift for *solo* starts now, Mon 2026-11-02 09:00 CET.")
    # and a shift that ends within them names its end (weekly A/B: A's first week ends Mon 2026-11-09 09:00)
    weekly = {**solo, "layers": [{**solo["layers"][0], "members": [A, B], "shift": "P1W"}]}
    notice = handoff.notice(parse_schedule(weekly), datetime(2026, 11, 2, 8, 0, tzinfo=timezone.utc))
    assert notice.text.endswith("starts now, Mon 2026-11-02 09:00 CET until Mon 2026-11-09 09:00 CET.")


def test_a_claim_to_post_a_notice_holds_30_seconds_and_none_is_taken_once_posted(handoff):
    # The claim is a conditional PutItem evaluated by DynamoDB (moto): refused while another attempt's
    # claim holds (30 s, the function's timeout), taken again after it lapses, never once posted
    # (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ConditionExpressions.html).
    now = THU_08H.timestamp()
    with mock_aws():
        table = boto3.resource("dynamodb").create_table(
            TableName="short-lived", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
        refused = table.meta.client.exceptions.ConditionalCheckFailedException
        table.put_item(**handoff.claim("primary", THU_08H, now))
        with pytest.raises(refused):
            table.put_item(**handoff.claim("primary", THU_08H, now + 29))
        table.put_item(**handoff.claim("primary", THU_08H, now + 31))  # the first attempt's claim lapsed
        table.update_item(**handoff.posted("primary", THU_08H))
        with pytest.raises(refused):
            table.put_item(**handoff.claim("primary", THU_08H, now + 3600))
        with pytest.raises(refused):  # nor is a posted record given back
            table.delete_item(**handoff.released("primary", THU_08H))
        record = table.get_item(Key=handoff.record_key("primary", THU_08H))["Item"]
        assert record["state"] == "posted" and "claimed_until" not in record


# -- Handoff Notice on moto: the re-arm, the posted record, Slack's pace ----------------------------
THU_08H = datetime(2026, 11, 5, 8, 0, tzinfo=timezone.utc)  # DAILY hands off to B
ROLE = "arn:aws:iam::123456789012:role/handoff-scheduler"
QUEUE = "arn:aws:sqs:us-east-1:123456789012:handoff-failures"


class _Clock:
    """time for the handler: a fixed instant, moved on only by the handler's own sleep (recorded)."""

    def __init__(self, at: datetime) -> None:
        self.at = at.timestamp()
        self.slept: list[float] = []

    def time(self) -> float:
        return self.at

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.at += seconds


@pytest.fixture
def notice_function(monkeypatch, slack):
    monkeypatch.setenv("ON_CALL_TABLE_NAME", "on-call")
    monkeypatch.setenv("PACE_TABLE_NAME", "short-lived")
    monkeypatch.setenv("SLACK_WEBHOOK_SECRET_NAME", "webhook")
    monkeypatch.setenv("HANDOFF_SCHEDULE_GROUP", "handoffs")
    monkeypatch.setenv("HANDOFF_SCHEDULER_ROLE_ARN", ROLE)
    monkeypatch.setenv("HANDOFF_FAILURE_QUEUE_ARN", QUEUE)
    with mock_aws():
        dynamodb = boto3.client("dynamodb")
        for name, key in (("on-call", "schedule_id"), ("short-lived", "id")):
            dynamodb.create_table(TableName=name, KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
                                  AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
                                  BillingMode="PAY_PER_REQUEST")
        boto3.resource("dynamodb").Table("on-call").put_item(Item=DAILY)
        boto3.client("secretsmanager").create_secret(Name="webhook", SecretString=slack.url)
        boto3.client("scheduler").create_schedule_group(Name="handoffs")
        parameters.clear_caches()  # the cached secret of an earlier test points at another port
        function = load_lambda_module("alert_oncall_handoff", "handler")
        monkeypatch.setattr(function, "time", _Clock(THU_08H))
        yield function
    parameters.clear_caches()


@pytest.fixture
def slack():
    with SlackStandIn() as stand_in:
        yield stand_in


def test_a_re_arm_creates_each_handoffs_schedule_once_and_leaves_an_armed_one_as_it_is(notice_function):
    # Given: Wed 09:00 UTC
    notice_function.time.at = WED_10H.timestamp()
    scheduler = boto3.client("scheduler")
    # When: re-armed twice, the second time a minute later
    first = notice_function.lambda_handler({}, FakeLambdaContext())
    armed = scheduler.get_schedule(GroupName="handoffs", Name=_name("primary", "20261105T0800Z"))
    notice_function.time.at += 60
    second = notice_function.lambda_handler({}, FakeLambdaContext())
    # Then: the first creates Thu's and Fri's 08:00 UTC schedules; the second finds both (ConflictException)
    assert first == {"armed": 2, "created": [_name("primary", "20261105T0800Z"), _name("primary", "20261106T0800Z")]}
    assert second == {"armed": 2, "created": []}
    assert armed["ScheduleExpression"] == "at(2026-11-05T08:00:00)" and armed["ScheduleExpressionTimezone"] == "UTC"
    assert armed["ActionAfterCompletion"] == "DELETE" and armed["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert armed["Target"]["Arn"] == FakeLambdaContext.invoked_function_arn and armed["Target"]["RoleArn"] == ROLE
    assert armed["Target"]["DeadLetterConfig"] == {"Arn": QUEUE}
    assert json.loads(armed["Target"]["Input"]) == {"schedule_id": "primary", "handoff_at": "2026-11-05T08:00:00+00:00"}
    assert scheduler.get_schedule(GroupName="handoffs", Name=armed["Name"])["LastModificationDate"] == armed["LastModificationDate"]


def test_a_notice_is_posted_once_and_recorded_so_a_second_delivery_posts_nothing(notice_function, slack):
    event = {"schedule_id": "primary", "handoff_at": "2026-11-05T08:00:00+00:00"}
    # When: the schedule's invocation, then the same event again (a retry, or a duplicate delivery)
    first = notice_function.lambda_handler(event, FakeLambdaContext())
    again = notice_function.lambda_handler(event, FakeLambdaContext())
    # Then: one post, and a record per schedule and instant, kept two days past the handoff (the TTL)
    assert first == {"posted": True} and again == {"posted": False, "reason": "posted already"}
    [post] = slack.posts
    assert post.body["text"] == (f"<@{B}> your on-call shift for *primary* starts now, Thu 2026-11-05 09:00 CET "
                                 "until Fri 2026-11-06 09:00 CET.")
    record = boto3.resource("dynamodb").Table("short-lived").get_item(
        Key={"id": "handoff-notice#primary#2026-11-05T08:00:00+00:00"})["Item"]
    assert record["state"] == "posted" and record["expiration"] == int(datetime(2026, 11, 7, 8, 0, tzinfo=timezone.utc).timestamp())


def test_a_notice_slack_refused_is_posted_by_the_retry_once(notice_function, slack):
    event = {"schedule_id": "primary", "handoff_at": "2026-11-05T08:00:00+00:00"}
    # Given: Slack refuses the first post
    slack.fail_next(1, status=500)
    # When: the invocation, then Lambda's retry of the same event
    with pytest.raises(Exception) as failed:
        notice_function.lambda_handler(event, FakeLambdaContext())
    retried = notice_function.lambda_handler(event, FakeLambdaContext())
    # Then: the first fails (Lambda retries it), the retry posts it, and Slack took it once
    assert type(failed.value).__name__ == "HandoffNoticeUndelivered"
    assert retried == {"posted": True}
    assert len(slack.delivered) == 1


def test_a_notice_whose_slot_on_slacks_pace_is_later_is_left_to_a_schedule_at_the_slot(notice_function, slack):
    # Given: four posts reserved on the webhook's pace at 08:00:00 (slots 08:00:00 three times, then
    # 08:00:01.25: a burst of three, then one every 1.25 s; slack_pace), so the notice's slot is 08:00:02.5
    table = boto3.resource("dynamodb").Table("short-lived")
    for _ in range(4):
        reserve_slot_on(table, slack.url, THU_08H.timestamp())
    event = {"schedule_id": "primary", "handoff_at": "2026-11-05T08:00:00+00:00"}
    # When: the handoff's schedule invokes it at 08:00:00
    deferred = notice_function.lambda_handler(event, FakeLambdaContext())
    # Then: nothing posted, nothing slept (2.5 s is more than the two a call sleeps out): a one-time
    # schedule takes it, woken at 08:00:01, the whole second before the slot's second
    assert deferred == {"posted": False, "deferred_to": "at(2026-11-05T08:00:01)"}
    assert slack.posts == [] and notice_function.time.slept == []
    later = boto3.client("scheduler").get_schedule(GroupName="handoffs", Name=_name("primary", "20261105T0800Z") + "-p080001")
    assert later["ActionAfterCompletion"] == "DELETE"
    assert json.loads(later["Target"]["Input"]) == {**event, "slot_at": THU_08H.timestamp() + 2.5}
    # When: that schedule invokes it at 08:00:01, twice (a duplicate delivery)
    notice_function.time.at += 1
    posted = notice_function.lambda_handler(json.loads(later["Target"]["Input"]), FakeLambdaContext())
    notice_function.lambda_handler(json.loads(later["Target"]["Input"]), FakeLambdaContext())
    # Then: it slept the 1.5 s to its slot and posted in it once, without taking another slot
    assert posted == {"posted": True} and len(slack.posts) == 1
    assert notice_function.time.slept == [1.5]


def test_a_deferred_notice_invoked_more_than_half_a_second_after_its_slot_takes_a_new_one(notice_function, slack):
    # Given: a notice deferred to its slot 08:00:02.5, and meanwhile ten posts queued at 08:00:02
    # (tat 08:00:02 + 10 x 1.25 = 08:00:14.5)
    table = boto3.resource("dynamodb").Table("short-lived")
    for _ in range(10):
        reserve_slot_on(table, slack.url, THU_08H.timestamp() + 2)
    event = {"schedule_id": "primary", "handoff_at": "2026-11-05T08:00:00+00:00", "slot_at": THU_08H.timestamp() + 2.5}
    # When: its schedule fires late, at 08:00:03.01 (0.51 s after the slot)
    notice_function.time.at += 3.01
    deferred = notice_function.lambda_handler(event, FakeLambdaContext())
    # Then: not posted (it would land on the posts slotted after it); deferred to a new slot,
    # 08:00:14.5 + 1.25 - 3 x 1.25 = 08:00:12, woken at 08:00:11
    assert deferred == {"posted": False, "deferred_to": "at(2026-11-05T08:00:11)"} and slack.posts == []


# Issue 38: a level pages every target it can; a schedule that cannot be used is a gap on its level.
def test_an_unreadable_schedule_beside_a_lead_pages_the_lead_on_the_same_level_and_says_why(logic):
    found = logic.find_round_targets([["schedule:gone", LEAD]], 0, WED_10H, reader(logic))
    assert found.users == [LEAD]
    assert found.failed == []
    assert found.notes == ["Schedule gone could not be read (the on-call table has no such schedule)."]


def test_an_unreadable_schedule_on_the_first_level_pages_its_other_targets_and_the_next_level(logic):
    found = logic.find_round_targets([["schedule:gone", "schedule:primary"], [LEAD]], 0, WED_10H, reader(logic, DAILY))
    # Wed 10:00 CET is shift 2 of primary (A); the next level stands in for the unusable schedule, as for a gap
    assert found.users == [A, LEAD]
    assert "The next escalation level is paged in its place." in found.notes


def test_when_no_level_pages_anyone_the_error_names_every_unusable_schedule(logic):
    levels = [["schedule:gone"], ["schedule:lost", "schedule:business"]]
    with pytest.raises(logic.ScheduleUnreadable) as raised:
        logic.find_round_targets(levels, 0, WED_20H, reader(logic, BUSINESS_HOURS))
    assert str(raised.value) == ("schedule:gone: the on-call table has no such schedule; "
                                 "schedule:lost: the on-call table has no such schedule")


def test_an_override_overlapping_another_makes_a_gap_and_the_lead_beside_it_is_paged(logic):
    # The docs' update-item appends an override without checking it: the schedule is then InvalidSchedule
    overlapping = {**DAILY, "overrides": [{"member": B, "start": "2026-11-04T09:00", "end": "2026-11-06T09:00"},
                                          {"member": C, "start": "2026-11-05T09:00", "end": "2026-11-07T09:00"}]}

    def read(schedule_id):
        try:
            return parse_schedule(overlapping)
        except Exception as invalid:
            raise logic.ScheduleUnreadable(schedule_id, str(invalid)) from invalid

    found = logic.find_round_targets([["schedule:primary", LEAD]], 0, WED_10H, read)
    assert found.users == [LEAD]
    assert found.notes[0].startswith("Schedule primary could not be read (schedule 'primary', overrides[1]: overlaps")


def test_the_handler_pages_the_lead_when_the_on_call_table_cannot_be_read(on_call_table, monkeypatch):
    # Given: the table is gone (ResourceNotFoundException on every read, after the SDK's retries)
    handler = load_lambda_module("alert_on_call", "handler")
    monkeypatch.setattr(handler, "table", boto3.resource("dynamodb").Table("no-such-table"))
    event = {"alert_id": "disk-full", "message": "Disk full", "levels": [["schedule:primary", LEAD]],
             "round": 1, "rounds": 1, "interval_seconds": 300, "occurrence": None, "actions_url": ACTIONS_URL}
    # When
    result = handler.lambda_handler(event, FakeLambdaContext())
    # Then
    assert result["users"] == [LEAD]
    assert "Schedule primary could not be read (the on-call table could not be read (ResourceNotFoundException))." \
        in result["message"]
    # And with nobody beside it, the alert fails naming the schedule
    with pytest.raises(Exception) as raised:
        handler.lambda_handler({**event, "levels": [["schedule:primary"]]}, FakeLambdaContext())
    assert type(raised.value).__name__ == "ScheduleUnreadable"
    assert str(raised.value) == "schedule:primary: the on-call table could not be read (ResourceNotFoundException)"


# Issue 41: what mutation testing found no fast test checking.
def test_a_person_before_a_schedule_on_one_level_leaves_the_schedule_paged_too(logic):
    # Wed 10:00 CET is primary's shift 2, A's
    assert logic.find_round_targets([[LEAD, "schedule:primary"]], 0, WED_10H, reader(logic, DAILY)).users == [LEAD, A]


def test_the_rounds_message_is_unchanged_without_notes_and_has_them_on_a_line_of_their_own(logic):
    assert logic.round_message("Disk full on web-1", []) == "Disk full on web-1"
    # The docs' wording of a gap on level 1 with level 2 standing in
    found = logic.find_round_targets([["schedule:business"], [LEAD]], 0, WED_20H, reader(logic, BUSINESS_HOURS))
    assert logic.round_message("Disk full on web-1", found.notes) == (
        "Disk full on web-1\nSchedule business has nobody on call. The next escalation level is paged in its place.")

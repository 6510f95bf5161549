"""EventBridge Scheduler schedules fire on the emulator's simulated clock, in their zone, with their role.

Expected behaviour from the EventBridge Scheduler User Guide: "Schedule types" (a one-time schedule
``at(yyyy-mm-ddThh:mm:ss)`` invokes its target once, at that time in ``ScheduleExpressionTimezone``,
with 60 seconds' precision; a ``rate()`` schedule without a StartDate "starts invoking its target
immediately", then once a period; a ``cron(minutes hours day-of-month month day-of-week year)``
schedule at each matching wall-clock time in its zone; on daylight saving time: a cron time the
clocks skip in spring is skipped, one they repeat in autumn "runs only once"), "Set up the execution
role" (Scheduler assumes the target's ``RoleArn`` to invoke it: a role without ``lambda:InvokeFunction``
on the function invokes nothing), and the API Reference, CreateSchedule (``ActionAfterCompletion``
DELETE: the schedule is deleted once it has completed its last invocation).
"""

from __future__ import annotations

import json
import time
import urllib.request
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from emulator.clock import CLOCK_PATH
from emulator.clock.cli import clock_lines
from emulator.scheduler import UnplayedExpression, next_cron
from tests.emulator_helpers import create_function, unique, wait_for

TARGET = "def lambda_handler(event, context):\n    return event\n"


def scheduler_role(aws, may_invoke: str | None) -> tuple[str, str]:
    iam = aws.client("iam")
    name = unique("scheduler-role")
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "scheduler.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]
    if may_invoke:
        iam.put_role_policy(RoleName=name, PolicyName="invoke", PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": may_invoke}]}))
    return name, arn


@pytest.mark.emulator
def test_an_at_schedule_invokes_its_target_once_at_its_local_time_with_its_input(aws, role_arn):
    # Given: a schedule at a Kolkata wall-clock time (UTC+05:30) ten minutes ahead, with a role that may invoke
    function = create_function(aws, role_arn, "scheduler-target", "target", TARGET)
    _, role = scheduler_role(aws, function["FunctionArn"])
    due = datetime.fromtimestamp(aws.clock.now() // 60 * 60 + 600, timezone.utc)
    name = unique("at-kolkata")
    aws.client("scheduler").create_schedule(
        Name=name, ScheduleExpression=f"at({due.astimezone(ZoneInfo('Asia/Kolkata')):%Y-%m-%dT%H:%M:%S})",
        ScheduleExpressionTimezone="Asia/Kolkata", FlexibleTimeWindow={"Mode": "OFF"},
        Target={"Arn": function["FunctionArn"], "RoleArn": role, "Input": '{"handoff": 1}'})
    aws.scheduler.fire_on_clock({name})
    try:
        # When: the clock passes a minute before, then the time itself
        aws.clock.advance(max(0.0, due.timestamp() - 60 - aws.clock.now()))
        time.sleep(0.2)  # a few of the scheduler's polls: a firing due now would have happened
        early = [f for f in aws.scheduler.fired if f["schedule"] == name]
        aws.clock.advance(max(0.0, due.timestamp() - aws.clock.now()))
        wait_for(lambda: aws.runtime.count(function["FunctionName"]) == 1, "the scheduled invocation")

        # Then: nothing before its time, one invocation within its minute, with the Input
        assert early == []
        [fired] = [f for f in aws.scheduler.fired if f["schedule"] == name]
        assert due.timestamp() <= fired["at"] < due.timestamp() + 60
        assert fired["input"] == '{"handoff": 1}'
    finally:
        aws.scheduler.fire_on_clock(set())


@pytest.mark.emulator
def test_a_role_that_may_not_invoke_the_target_invokes_nothing(aws, role_arn):
    # Given: a due schedule whose role has no permission on its target
    function = create_function(aws, role_arn, "scheduler-refused", "target", TARGET)
    _, role = scheduler_role(aws, None)
    name = unique("at-refused")
    due = datetime.fromtimestamp(aws.clock.now() + 60, timezone.utc)
    aws.client("scheduler").create_schedule(
        Name=name, ScheduleExpression=f"at({due:%Y-%m-%dT%H:%M:%S})", FlexibleTimeWindow={"Mode": "OFF"},
        Target={"Arn": function["FunctionArn"], "RoleArn": role, "Input": "{}"})
    aws.scheduler.fire_on_clock({name})
    try:
        # When: its time passes
        aws.clock.advance(120)
        wait_for(lambda: any(r["schedule"] == name for r in aws.scheduler.refused), "the refused firing")

        # Then: the function was not invoked
        assert aws.runtime.count(function["FunctionName"]) == 0
    finally:
        aws.scheduler.fire_on_clock(set())


def _armed(aws, name: str) -> dict | None:
    return next((entry for entry in aws.scheduler.armed() if entry["name"] == name), None)


def _fired(aws, name: str) -> list[dict]:
    return [f for f in aws.scheduler.fired if f["schedule"] == name]


@pytest.mark.emulator
def test_a_one_time_schedule_to_delete_after_completion_is_gone_once_it_fired(aws, role_arn):
    # Given: an at() schedule a minute ahead, ActionAfterCompletion DELETE
    function = create_function(aws, role_arn, "scheduler-delete", "target", TARGET)
    _, role = scheduler_role(aws, function["FunctionArn"])
    name = unique("at-delete")
    due = datetime.fromtimestamp(aws.clock.now() // 60 * 60 + 120, timezone.utc)
    scheduler = aws.client("scheduler")
    scheduler.create_schedule(
        Name=name, ScheduleExpression=f"at({due:%Y-%m-%dT%H:%M:%S})", ScheduleExpressionTimezone="UTC",
        FlexibleTimeWindow={"Mode": "OFF"}, ActionAfterCompletion="DELETE",
        Target={"Arn": function["FunctionArn"], "RoleArn": role, "Input": "{}"})
    aws.scheduler.fire_on_clock({name})
    try:
        # When: its time passes
        aws.clock.advance(max(0.0, due.timestamp() - aws.clock.now()))
        wait_for(lambda: aws.runtime.count(function["FunctionName"]) == 1, "the scheduled invocation")
        wait_for(lambda: name not in [s["Name"] for s in scheduler.list_schedules()["Schedules"]], "the deletion")
        # Then: it fired once and is gone
        with pytest.raises(scheduler.exceptions.ResourceNotFoundException):
            scheduler.get_schedule(Name=name)
        assert len(_fired(aws, name)) == 1
    finally:
        aws.scheduler.fire_on_clock(set())


@pytest.mark.emulator
def test_a_rate_schedule_fires_when_created_then_once_a_period(aws, role_arn):
    # Given: rate(5 minutes), let fire from its creation
    function = create_function(aws, role_arn, "scheduler-rate", "target", TARGET)
    _, role = scheduler_role(aws, function["FunctionArn"])
    name = unique("rate-5")
    aws.scheduler.fire_on_clock({name})
    try:
        created = aws.clock.now()
        aws.client("scheduler").create_schedule(
            Name=name, ScheduleExpression="rate(5 minutes)", FlexibleTimeWindow={"Mode": "OFF"},
            Target={"Arn": function["FunctionArn"], "RoleArn": role, "Input": '{"tick": 1}'})
        # When: it is seen (no StartDate: it fires at once)
        wait_for(lambda: len(_fired(aws, name)) == 1, "the first firing")
        [first] = _fired(aws, name)
        # Then: within the minute of its creation, and next 300 s after that first firing's time
        assert created <= first["at"] < created + 60
        following = _armed(aws, name)["next"]
        assert first["at"] - 60 < following - 300 <= first["at"]
        # When: the clock passes that time
        aws.clock.advance(max(0.0, following - aws.clock.now()))
        wait_for(lambda: len(_fired(aws, name)) == 2, "the second firing")
        # Then: fired again within its minute, and it is next due one period later
        assert following <= _fired(aws, name)[1]["at"] < following + 60
        assert _armed(aws, name)["next"] == following + 300
        wait_for(lambda: aws.runtime.count(function["FunctionName"]) == 2, "two invocations")
    finally:
        aws.scheduler.fire_on_clock(set())
        aws.client("scheduler").delete_schedule(Name=name)


@pytest.mark.emulator
def test_a_cron_schedule_fires_at_its_wall_clock_time_in_its_zone_and_is_listed_by_clock_status(aws, role_arn):
    # Given: cron(M H * * ? *) in Kolkata (UTC+05:30 all year) naming the local time of a UTC minute ten minutes ahead
    function = create_function(aws, role_arn, "scheduler-cron", "target", TARGET)
    _, role = scheduler_role(aws, function["FunctionArn"])
    due = datetime.fromtimestamp(aws.clock.now() // 60 * 60 + 600, timezone.utc)
    local = due.astimezone(ZoneInfo("Asia/Kolkata"))
    name = unique("cron-kolkata")
    expression = f"cron({local.minute} {local.hour} * * ? *)"
    aws.client("scheduler").create_schedule(
        Name=name, ScheduleExpression=expression, ScheduleExpressionTimezone="Asia/Kolkata",
        FlexibleTimeWindow={"Mode": "OFF"}, Target={"Arn": function["FunctionArn"], "RoleArn": role, "Input": "{}"})
    aws.scheduler.fire_on_clock({name})
    try:
        # When: it is listed
        wait_for(lambda: _armed(aws, name) is not None, "the schedule in the listing")
        with urllib.request.urlopen(aws.endpoint_url + CLOCK_PATH, timeout=10) as response:
            status = json.load(response)
        # Then: `clock status` names it, its expression, its zone and its next firing, at that UTC minute
        [entry] = [e for e in status["scheduler"] if e["name"] == name]
        assert entry == {"name": name, "group": "default", "expression": expression, "time_zone": "Asia/Kolkata",
                         "next": due.timestamp()}
        line = f"  schedule default/{name} {expression} (Asia/Kolkata): next firing in "
        assert any(printed.startswith(line) and printed.endswith(f"({due:%Y-%m-%d %H:%M:%S} UTC)")
                   for printed in clock_lines(status))
        # When: the clock passes it
        aws.clock.advance(max(0.0, due.timestamp() - aws.clock.now()))
        wait_for(lambda: len(_fired(aws, name)) == 1, "the cron firing")
        # Then: fired within that minute; next the same local time a day later
        assert due.timestamp() <= _fired(aws, name)[0]["at"] < due.timestamp() + 60
        assert _armed(aws, name)["next"] == due.timestamp() + 86400
    finally:
        aws.scheduler.fire_on_clock(set())
        aws.client("scheduler").delete_schedule(Name=name)


def _utc(*fields: int) -> float:
    return datetime(*fields, tzinfo=timezone.utc).timestamp()


def test_cron_in_new_york_skips_the_spring_time_the_clocks_skip():
    # 2027-03-14: New York's clocks go from 02:00 EST to 03:00 EDT; 02:30 does not exist that day.
    # 2027-03-13 02:30 EST is 07:30 UTC; 2027-03-15 02:30 EDT is 06:30 UTC.
    assert next_cron("cron(30 2 * * ? *)", "America/New_York", _utc(2027, 3, 13, 7, 0)) == _utc(2027, 3, 13, 7, 30)
    assert next_cron("cron(30 2 * * ? *)", "America/New_York", _utc(2027, 3, 13, 7, 30)) == _utc(2027, 3, 15, 6, 30)


def test_cron_in_new_york_runs_the_repeated_autumn_time_once():
    # 2026-11-01: 01:30 EDT (05:30 UTC), then the clocks go back and 01:30 EST (06:30 UTC) comes again;
    # the schedule runs at the first, then at 01:30 EST on 2026-11-02 (06:30 UTC)
    assert next_cron("cron(30 1 * * ? *)", "America/New_York", _utc(2026, 11, 1, 5, 0)) == _utc(2026, 11, 1, 5, 30)
    assert next_cron("cron(30 1 * * ? *)", "America/New_York", _utc(2026, 11, 1, 5, 30)) == _utc(2026, 11, 2, 6, 30)


def test_cron_days_of_the_week_count_sunday_as_1_and_take_names():
    # Weekdays at 09:00 Berlin (CET, UTC+1): after Fri 2026-11-06 09:00 the next is Mon 2026-11-09 08:00 UTC
    after = _utc(2026, 11, 6, 8, 0)
    assert next_cron("cron(0 9 ? * MON-FRI *)", "Europe/Berlin", after) == _utc(2026, 11, 9, 8, 0)
    assert next_cron("cron(0 9 ? * 2-6 *)", "Europe/Berlin", after) == _utc(2026, 11, 9, 8, 0)
    # Every 15 minutes of 2026-11-06 in UTC, and the first of a month at 00:00 UTC
    assert next_cron("cron(0/15 * * * ? *)", "UTC", _utc(2026, 11, 6, 8, 1)) == _utc(2026, 11, 6, 8, 15)
    assert next_cron("cron(0 0 1 * ? *)", None, after) == _utc(2026, 12, 1, 0, 0)


def test_cron_forms_the_emulator_does_not_play_are_refused_by_name():
    with pytest.raises(UnplayedExpression, match="L, W and #"):
        next_cron("cron(0 9 L * ? *)", "UTC", _utc(2026, 11, 6))
    with pytest.raises(UnplayedExpression, match="exactly one of day-of-month and day-of-week"):
        next_cron("cron(0 9 * * * *)", "UTC", _utc(2026, 11, 6))

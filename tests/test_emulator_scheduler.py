"""EventBridge Scheduler one-time schedules fire on the emulator's simulated clock, in their zone, with their role.

Expected behaviour from the EventBridge Scheduler User Guide: "Schedule types" (a one-time schedule
``at(yyyy-mm-ddThh:mm:ss)`` invokes its target once, at that time in ``ScheduleExpressionTimezone``,
with 60 seconds' precision) and "Set up the execution role" (Scheduler assumes the target's
``RoleArn`` to invoke it: a role without ``lambda:InvokeFunction`` on the function invokes nothing).
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import pytest

from tests.emulator_helpers import create_function, unique, wait_for

pytestmark = pytest.mark.emulator

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

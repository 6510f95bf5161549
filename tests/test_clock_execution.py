"""The simulated clock a person controls, over HTTP at AWS_ENDPOINT_URL and with `python -m emulator clock`.

Issue 16: paused, simulated time stands still and executions wait at their next Wait; advance
moves it by exactly N seconds; a speed F runs it F times real time; scheduled rules fire only
when the clock passes their time, and the status shows the next firing.

Issue 40: an advance past several due events fires each in order, at its own simulated time: a
rule's hourly firings and the Waits they start; the app's hourly dispatch pages, at each hour, whoever
is on call then.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

import emulator.clock
from emulator.clock import CLOCK_PATH, INSTANT, SimClock, SimEvent
from tests.conftest import ROOT
from tests.emulator_helpers import permissive_role, put_target, unique, wait_for, wait_for_event
from tests.test_alert_notification_execution import (  # noqa: F401 - fixtures, imported not copied
    MACHINE,
    POST_TEXT,
    _users,
    alerts,
    schedule,
    slack,
)
from tests.test_alert_on_call_execution import on_call  # noqa: F401

WAIT_SECONDS = 60


@pytest.fixture
def aws(deployment):
    """The shared emulator, its clock back to the default (instant, running) after the test."""
    yield deployment.aws
    deployment.aws.clock.set_speed(INSTANT)
    deployment.aws.clock.resume()


@pytest.fixture(scope="module")
def waiting_machine(deployment):
    role = permissive_role(deployment.aws, "clock")
    definition = {"StartAt": "Wait A Minute", "States": {
        "Wait A Minute": {"Type": "Wait", "Seconds": WAIT_SECONDS, "Next": "Done"}, "Done": {"Type": "Succeed"}}}
    return deployment.client("stepfunctions").create_state_machine(
        name=unique("clock"), definition=json.dumps(definition), roleArn=role)["stateMachineArn"]


def _clock(aws, action: str = "", body: dict | None = None) -> tuple[int, dict]:
    url = aws.endpoint_url + CLOCK_PATH + (f"/{action}" if action else "")
    data = None if not action else json.dumps(body or {}).encode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data), timeout=120) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def _history(sfn, execution: str) -> list[dict]:
    return sfn.get_execution_history(executionArn=execution, maxResults=1000)["events"]


def test_paused_time_stands_still_and_an_execution_waits_until_the_clock_is_advanced(aws, waiting_machine):
    # Given: the clock paused over HTTP, and an execution started into a one-minute Wait
    status, paused = _clock(aws, "pause")
    assert status == 200 and paused["paused"] is True
    sfn = aws.client("stepfunctions")
    execution = sfn.start_execution(stateMachineArn=waiting_machine)["executionArn"]
    wait_for_event(sfn, execution, "WaitStateEntered", timeout=60)
    # Then: the real time that took moved no simulated time
    assert _clock(aws)[1]["now"] == paused["now"]
    # When: advanced by one second less than the Wait, then past it
    status, advanced = _clock(aws, "advance", {"seconds": WAIT_SECONDS - 1})
    assert status == 200 and advanced["now"] == pytest.approx(paused["now"] + WAIT_SECONDS - 1, abs=1e-6)
    _clock(aws, "advance", {"seconds": 1})
    # Then: the Wait ended at the second advance, not the first: its exit is stamped one simulated
    # minute after its entry (an exit after the first advance would be stamped a second earlier)
    wait_for_event(sfn, execution, "ExecutionSucceeded", timeout=60)
    stamps = {e["type"]: e["timestamp"] for e in _history(sfn, execution)}
    waited = (stamps["WaitStateExited"] - stamps["WaitStateEntered"]).total_seconds()
    assert waited == pytest.approx(WAIT_SECONDS, abs=0.5)
    assert stamps["WaitStateExited"].timestamp() == pytest.approx(paused["now"] + WAIT_SECONDS, abs=0.5)


def test_at_speed_60_simulated_time_runs_sixty_times_real_time(aws, waiting_machine):
    # Given
    status, answer = _clock(aws, "speed", {"speed": 60})
    assert status == 200 and answer["speed"] == 60 and answer["paused"] is False
    sfn = aws.client("stepfunctions")
    # When: a one-minute Wait runs, and simulated time is read twice, each read bracketed by real time
    started = time.monotonic()
    execution = sfn.start_execution(stateMachineArn=waiting_machine)["executionArn"]
    sent_1 = time.monotonic()
    before = _clock(aws)[1]["now"]
    answered_1 = time.monotonic()
    time.sleep(1.0)
    sent_2 = time.monotonic()
    after = _clock(aws)[1]["now"]
    answered_2 = time.monotonic()
    wait_for_event(sfn, execution, "ExecutionSucceeded", timeout=60)
    # Then: the server read its clock somewhere inside each bracket, so however slow the machine the
    # simulated interval is sixty times a real interval between the brackets' inner and outer spans
    assert 60 * (sent_2 - answered_1) - 0.1 <= after - before <= 60 * (answered_2 - sent_1) + 0.1
    # ... and the Wait was not jumped: it took at least its minute / 60 of real time
    assert time.monotonic() - started >= WAIT_SECONDS / 60


def test_a_scheduled_rule_fires_only_when_the_clock_passes_its_time_and_the_status_shows_when(aws):
    # Given: the clock paused and an hourly rule on it, delivering to a queue
    _clock(aws, "pause")
    sqs = aws.client("sqs")
    queue_url = sqs.create_queue(QueueName=unique("clock"))["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    rule = unique("hourly")
    events = aws.client("events")
    events.put_rule(Name=rule, ScheduleExpression="rate(1 hour)")
    put_target(aws, rule, {"Id": "queue", "Arn": queue_arn})
    aws.router.fire_on_clock({rule})
    try:
        deadline = time.monotonic() + 60
        while not (schedules := _clock(aws)[1]["schedules"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        now = _clock(aws)[1]["now"]
        # Then: the status names the rule and its next firing, an hour ahead
        assert [s["rule"] for s in schedules] == [rule]
        assert schedules[0]["at"] == pytest.approx(now + 3600, abs=1e-3)
        # When: advanced to a second short of it, then past it
        _clock(aws, "advance", {"seconds": 3599})
        early = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=0).get("Messages", [])
        _clock(aws, "advance", {"seconds": 1})
        deadline = time.monotonic() + 60
        late: list = []
        while not late and time.monotonic() < deadline:
            late = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=0).get("Messages", [])
            time.sleep(0.05)
    finally:
        aws.router.fire_on_clock(set())
    # Then: one Scheduled Event, stamped (in whole seconds) with the second it was due: a firing at
    # the first advance, however late its message arrived, would carry a time a second earlier
    assert early == []
    [event] = [json.loads(m["Body"]) for m in late]
    assert event["detail-type"] == "Scheduled Event"
    fired_at = datetime.datetime.fromisoformat(event["time"].replace("Z", "+00:00")).timestamp()
    due = schedules[0]["at"]
    assert due - 1 < fired_at <= due


@pytest.mark.parametrize(("action", "body", "message"), [
    ("speed", {"speed": 0}, "speed must be 'instant' or a positive factor"),
    ("speed", {"speed": "fast"}, "speed must be 'instant' or a positive factor"),
    ("advance", {"seconds": -5}, "seconds must be a non-negative number"),
    ("advance", {}, "advance needs a number of seconds"),
])
def test_the_clock_refuses_bad_values_saying_why(aws, action, body, message):
    status, answer = _clock(aws, action, body)
    assert status == 400 and message in answer["error"]


def _cli(aws, *args: str, endpoint: str | None = None, python: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {**os.environ, **aws.environment}
    if endpoint is not None:
        env["AWS_ENDPOINT_URL"] = endpoint
    return subprocess.run([sys.executable, *python, "-m", "emulator", "clock", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_clock_command_finds_the_server_through_aws_endpoint_url(aws):
    # When: paused, advanced and sped up from the command line
    paused = _cli(aws, "pause")
    before = aws.clock.now()
    advanced = _cli(aws, "advance", "90")
    after = aws.clock.now()
    sped_up = _cli(aws, "speed", "60")
    status = _cli(aws, "status")
    resumed = _cli(aws, "resume")
    # Then
    assert [p.returncode for p in (paused, advanced, sped_up, status, resumed)] == [0] * 5
    assert paused.stdout.startswith("Clock: ") and ", paused;" in paused.stdout
    assert after - before == pytest.approx(90, abs=1e-6)
    assert "paused; on resume: 60x real time" in status.stdout
    assert "60x real time" in resumed.stdout and "paused" not in resumed.stdout
    # and it only asks the server: nothing of the emulator's AWS side (moto, the deployment) is imported
    traced = _cli(aws, "status", python=("-X", "importtime"))
    imported = {line.rpartition("|")[2].strip() for line in traced.stderr.splitlines() if line.startswith("import time:")}
    assert traced.returncode == 0 and "emulator.clock.cli" in imported
    assert {name for name in imported if name.partition(".")[0] == "moto" or name in ("emulator.server", "emulator.session")} == set()


def test_the_clock_command_says_in_one_line_what_is_wrong(aws):
    # When
    nowhere = _cli(aws, "status", endpoint="")
    refused = _cli(aws, "speed", "0")
    # Then
    assert nowhere.returncode == 2
    assert nowhere.stderr == "error: AWS_ENDPOINT_URL is not set: export the lines `python -m emulator serve` prints\n"
    assert refused.returncode == 2 and "speed must be 'instant' or a positive factor" in refused.stderr
    assert "Traceback" not in nowhere.stderr + refused.stderr


def test_an_advance_runs_an_hourly_rule_the_waits_it_starts_and_an_alarms_changes_at_their_own_times(aws):
    # Given: the clock paused; a real hourly EventBridge rule on it, starting a state machine that
    # waits half an hour
    aws.clock.pause()
    t0 = aws.clock.now()
    role = permissive_role(aws, "order")
    sfn = aws.client("stepfunctions")
    definition = {"StartAt": "Wait Half An Hour", "States": {
        "Wait Half An Hour": {"Type": "Wait", "Seconds": 1800, "Next": "Done"}, "Done": {"Type": "Succeed"}}}
    machine = sfn.create_state_machine(name=unique("order"), definition=json.dumps(definition), roleArn=role)["stateMachineArn"]
    rule = unique("hourly")
    events = aws.client("events")
    events.put_rule(Name=rule, ScheduleExpression="rate(1 hour)")
    events.put_targets(Rule=rule, Targets=[{"Id": "machine", "Arn": machine, "RoleArn": role}])
    # And: a one-minute alarm with a breaching datapoint now, whose state changes start another machine.
    # Hand-worked (CloudWatch User Guide, "Configuring how CloudWatch alarms treat missing data"): a
    # new alarm is INSUFFICIENT_DATA; at the end of this minute its window holds the datapoint:
    # ALARM; a minute later the window is empty and missing data is missing: INSUFFICIENT_DATA.
    alarm = unique("order-alarm")
    aws.client("cloudwatch").put_metric_alarm(
        AlarmName=alarm, Namespace="Clock/Order", MetricName="Breaches", Statistic="Sum", Period=60, EvaluationPeriods=1,
        Threshold=0, ComparisonOperator="GreaterThanThreshold")
    aws.client("cloudwatch").put_metric_data(Namespace="Clock/Order", MetricData=[{
        "MetricName": "Breaches", "Value": 1, "Timestamp": datetime.datetime.fromtimestamp(t0, datetime.timezone.utc)}])
    on_change = sfn.create_state_machine(name=unique("order-alarm"), roleArn=role, definition=json.dumps(
        {"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}))["stateMachineArn"]
    changes = unique("order-alarm")
    events.put_rule(Name=changes, EventPattern=json.dumps({"source": ["aws.cloudwatch"], "detail": {"alarmName": [alarm]}}))
    events.put_targets(Rule=changes, Targets=[{"Id": "machine", "Arn": on_change, "RoleArn": role}])
    minute = t0 // 60 * 60
    aws.router.fire_on_clock({rule})
    try:
        wait_for(lambda: aws.router.next_firings(), "the rule to be on the clock")
        [(_, first)] = aws.router.next_firings()
        # When: advanced three hours and a quarter through the CLI's HTTP path (the clock stays
        # paused until the test ends: the aws fixture resumes it)
        _, advanced = _clock(aws, "advance", {"seconds": 3 * 3600 + 900})
    finally:
        aws.router.fire_on_clock(set())
    # Then: the answer shows the clock as the advance left it: the rule's next firing is its fourth,
    # and no wake-up is in the past (nothing due is left unrun)
    assert [s["at"] for s in advanced["schedules"] if s["rule"] == rule] == pytest.approx([first + 3 * 3600], abs=1e-3)
    assert advanced["next_wakeup"] is not None and advanced["next_wakeup"] > advanced["now"]
    # Then: the alarm's two changes started their executions at the two minute boundaries, not at
    # the advance's end
    started = sorted((e["startDate"].timestamp(), json.loads(sfn.describe_execution(executionArn=e["executionArn"])["input"])
                      ["detail"]["state"]["value"]) for e in sfn.list_executions(stateMachineArn=on_change)["executions"])
    assert started == [(pytest.approx(minute + 60, abs=1e-3), "ALARM"), (pytest.approx(minute + 120, abs=1e-3), "INSUFFICIENT_DATA")]
    # Then: three executions, started at the rule's three times (first: an hour after it was armed);
    # the first two ended their Wait half an hour after their start, the third still waits
    runs = sorted(sfn.list_executions(stateMachineArn=machine)["executions"], key=lambda e: e["startDate"])
    assert [e["startDate"].timestamp() for e in runs] == pytest.approx([first, first + 3600, first + 2 * 3600], abs=1e-3)
    assert [e["status"] for e in runs] == ["SUCCEEDED", "SUCCEEDED", "RUNNING"]
    assert [e["stopDate"].timestamp() for e in runs[:2]] == pytest.approx([first + 1800, first + 3600 + 1800], abs=1e-3)


def test_the_five_hour_advance_counts_five_dispatches_each_paging_who_is_on_call_at_its_hour(deployment, aws, slack, alerts, on_call, schedule):  # noqa: F811
    # Given: the clock paused and the app's hourly dispatch rule (cdk.json alertSchedule "rate(1 hour)")
    # on it: its first firing an hour after the rule is armed, then one each hour
    _clock(aws, "pause")
    aws.router.fire_on_clock({schedule.rule})
    try:
        wait_for(lambda: any(rule == schedule.rule for rule, _ in aws.router.next_firings()), "the dispatch rule on the clock")
        [first] = [at for rule, at in aws.router.next_firings() if rule == schedule.rule]
        # And: five members in hourly shifts from half an hour (and up to a minute more: the layer
        # starts on a whole minute) before the first dispatch, so the dispatch k hours later falls in
        # shift k, held by member k (k = n mod 5)
        members = _users("one", "two", "three", "four", "five")
        start = datetime.datetime.fromtimestamp(first // 60 * 60 - 1800, datetime.timezone.utc)
        schedule_id = on_call.put(schedule_id=unique("hourly"), time_zone="UTC",
                                  layers=[{"members": members, "start": f"{start:%Y-%m-%dT%H:%M}", "shift": "PT1H"}])
        # And: an active alert paging the schedule, one round per execution (each ends before the next hour)
        alert_id = alerts.put(alert_id=unique("each-hour"), status="active", notification_count=1, interval_seconds=300,
                              escalation=[[f"schedule:{schedule_id}"]], message="Disk above 90%")
        # When: the clock is advanced as the user did, past five hourly dispatch times
        advanced = _cli(aws, "advance", "18400")
    finally:
        aws.router.fire_on_clock(set())  # (the alerts fixture deletes the alert: no later dispatch pages it)
    assert advanced.returncode == 0, advanced.stderr
    # Then: five executions for the alert, started at the five hours (the clock stood still at each)
    sfn = aws.client("stepfunctions")
    mine = []
    for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=deployment.machine_arn(MACHINE)):
        for execution in page["executions"]:
            if execution["startDate"].timestamp() >= first - 1 and alert_id in sfn.describe_execution(
                    executionArn=execution["executionArn"])["input"]:
                mine.append(execution)
    mine.sort(key=lambda e: e["startDate"])
    hours = [first + k * 3600 for k in range(5)]
    assert [e["startDate"].timestamp() for e in mine] == pytest.approx(hours, abs=1)
    assert [e["status"] for e in mine] == ["SUCCEEDED"] * 5
    # Then: each paged the member on call at its own hour, posted within that hour's first minute
    # (a Slack ts is the time to the microsecond, cut: a post at the hour itself may read a hair before)
    pages = [(match["user"], float(post.ts)) for post in slack.delivered
             if (match := POST_TEXT.match(post.body.get("text", "") if isinstance(post.body, dict) else "")) and match["alert_id"] == alert_id]
    assert [user for user, _ in pages] == members
    assert all(hour - 1e-3 <= at < hour + 60 for (_, at), hour in zip(pages, hours)), (pages, hours)


def test_a_waiter_that_left_before_its_setter_reached_it_does_not_hold_the_clock_still():
    # Given a waiter on a SimEvent, seen by a setter (SimEvent.set lends each waiter it found a busy
    # token, so the clock cannot jump before the woken thread runs again)
    clock = SimClock()
    try:
        event = SimEvent()
        waiter = threading.Thread(target=clock.wait, args=(event, 5), daemon=True)
        waiter.start()
        deadline = time.monotonic() + 10
        while not event._waiters and time.monotonic() < deadline:
            time.sleep(0.001)
        found_by_setter = list(event._waiters.values())
        # When the waiter times out and leaves before the setter lends it the token
        waiter.join(10)
        assert not waiter.is_alive()
        for sleeper in found_by_setter:
            clock._gift(sleeper)
        # Then nothing holds the clock: a minute's sleep still ends at once
        sleeper = threading.Thread(target=clock.sleep, args=(60,), daemon=True)
        sleeper.start()
        sleeper.join(60)  # (a generous deadline: an instant clock ends it in milliseconds)
        assert not sleeper.is_alive(), "the clock never jumped: a busy token was lent to a thread that had left"
    finally:
        clock.stop()


def test_a_step_of_the_wall_clock_moves_no_simulated_time(monkeypatch):
    # Given: a clock at speed 60 (the speed test above failed once when the wall clock moved about
    # 3 ms apart from the monotonic one, which is 0.17 simulated seconds at this speed)
    clock = SimClock()
    try:
        clock.set_speed(60)
        before = clock.now()
        # When: the wall clock steps an hour ahead, as a host's time sync may step it
        wall = time.time
        monkeypatch.setattr(emulator.clock, "_real_time", lambda: wall() + 3600)
        after = clock.now()
    finally:
        clock.stop()
    # Then: simulated time moved only by what real time elapsed between the reads (60 times it), not 60 hours
    assert 0 <= after - before < 60

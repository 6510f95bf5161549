"""Execution monitoring end to end: executions of the deployed machines, the status topic and the alarms.

An SQS queue subscribes to the deployed status topic with raw message delivery, as an on-call
tool would, and reads what each execution produced. The emulator emits the "Step Functions
Execution Status Change" events and delivers them through the deployed rule and its input
transformer; the alarms are the deployed AWS::CloudWatch::Alarm resources, read back through the
CloudWatch API.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from datetime import datetime, timezone
from typing import Any, Callable

import pytest

from emulator.follow import follow
from emulator.session import MACHINES
from tests.emulator_helpers import unique, wait_for_event

CONSOLE_URL = "https://us-east-1.console.aws.amazon.com/states/home?region=us-east-1#/v2/executions/details/{}"
# How long to keep reading after the expected messages, so a duplicate or a stray one is seen.
# Delivery happens while the execution ends, so a fraction of a second is ample.
SETTLE_SECONDS = 0.5
ARRIVAL_TIMEOUT_SECONDS = 10
QUOTED_FAILURE = 'disk "quota" exceeded\non /data'


def _millis(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


class StatusInbox:
    """An SQS queue subscribed to the status topic (raw delivery); messages are kept by execution."""

    def __init__(self, deployment: Any) -> None:
        self._sqs = deployment.client("sqs")
        self.url = self._sqs.create_queue(QueueName=unique("status-inbox"))["QueueUrl"]
        arn = self._sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        topic = deployment.output("MonitoringStack", "StatusTopicArn")
        deployment.client("sns").subscribe(
            TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": "true"}
        )
        self._by_execution: dict[str, list[str]] = defaultdict(list)
        self.unreadable: list[str] = []

    def _drain(self) -> None:
        while True:
            messages = self._sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10).get("Messages", [])
            if not messages:
                return
            for message in messages:
                body = message["Body"]
                try:
                    self._by_execution[json.loads(body)["executionArn"]].append(body)
                except (ValueError, KeyError, TypeError):
                    self.unreadable.append(body)
                self._sqs.delete_message(QueueUrl=self.url, ReceiptHandle=message["ReceiptHandle"])

    def messages_for(self, execution_arn: str, *, expected: int) -> list[str]:
        """Every message about ``execution_arn``: waits for ``expected`` of them, then a little longer."""
        deadline = time.monotonic() + ARRIVAL_TIMEOUT_SECONDS
        settled_at = time.monotonic() + SETTLE_SECONDS if expected == 0 else None
        while True:
            self._drain()
            now = time.monotonic()
            if settled_at is None and len(self._by_execution[execution_arn]) >= expected:
                settled_at = now + SETTLE_SECONDS
            if (settled_at is not None and now >= settled_at) or now >= deadline:
                return list(self._by_execution[execution_arn])
            time.sleep(0.05)


@pytest.fixture(scope="module")
def inbox(deployment) -> StatusInbox:
    return StatusInbox(deployment)


def _expected_message(deployment: Any, machine: str, result: Any, name: str) -> dict:
    return {
        "summary": f"Step Functions execution {name} {result.status}",
        "consoleUrl": CONSOLE_URL.format(result.execution_arn),
        "status": result.status,
        "stateMachineArn": deployment.machine_arn(machine),
        "execution": name,
        "executionArn": result.execution_arn,
        "error": result.error,
        "cause": result.cause,
        "startDate": _millis(result.start),
        "stopDate": _millis(result.stop),
    }


def _assert_message_describes(message: dict, expected: dict, result: Any) -> None:
    # Event dates are whole milliseconds; DescribeExecution may carry finer ones.
    for key in ("startDate", "stopDate"):
        assert abs(message[key] - expected[key]) <= 1, (key, message[key], expected[key])
    assert {k: v for k, v in message.items() if k not in ("startDate", "stopDate", "time")} == {
        k: v for k, v in expected.items() if k not in ("startDate", "stopDate")
    }
    # "time" is when the status changed, to the second
    changed = datetime.strptime(message["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    assert abs(changed.timestamp() - result.stop.timestamp()) < 2


def _job_that_fails() -> dict:
    return {"job": {"fail": True, "error_message": QUOTED_FAILURE}, "poll_interval_seconds": 1}


def _run(deployment: Any, machine: str, payload: Any, name: str) -> Any:
    return deployment.run(machine, payload, name=name)


# machine: (input that makes it fail cheaply, the error it ends with, what the cause must say)
FAILURES: dict[str, tuple[Callable[[], Any], str, Callable[[str], bool]]] = {
    "alert": (
        lambda: {"alert_id": unique("no-such-alert")},
        "AlertNotFound",
        lambda cause: cause.startswith("alert_id: the alert table has no item 'no-such-alert"),
    ),
    "poller": (_job_that_fails, "JobFailed", lambda cause: cause == QUOTED_FAILURE),
    "export-poller": (
        lambda: {"timeout_seconds": 0},
        "InvalidJobInput",
        lambda cause: cause == "timeout_seconds must be a whole number of seconds from 1 to 86400, got 0",
    ),
    "callback": (lambda: {}, "InvalidJobInput", lambda cause: cause.startswith("job is required")),
    "map-retry": (
        lambda: {"items": "A-123"},
        "InvalidItems",
        lambda cause: cause == "items must be a JSON array of objects, got string",
    ),
}


def test_every_machine_of_the_app_is_covered():
    assert set(FAILURES) == set(MACHINES)


@pytest.mark.parametrize("machine", sorted(FAILURES))
def test_a_failed_execution_sends_one_message_a_person_can_act_on(deployment, inbox, machine):
    # Given
    payload, error, cause_is_right = FAILURES[machine]
    name = unique(f"fails-{machine}")
    # When
    result = _run(deployment, machine, payload(), name)
    # Then: exactly one message, JSON, with what the execution's own description says
    assert (result.status, result.error) == ("FAILED", error), result.cause
    assert cause_is_right(result.cause), result.cause
    messages = inbox.messages_for(result.execution_arn, expected=1)
    assert len(messages) == 1, (messages, inbox.unreadable)
    _assert_message_describes(json.loads(messages[0]), _expected_message(deployment, machine, result, name), result)


def test_a_succeeded_execution_sends_nothing(deployment, inbox):
    # Given
    name = unique("succeeds")
    # When
    result = _run(deployment, "poller", {"job": {}, "poll_interval_seconds": 1}, name)
    # Then
    assert result.status == "SUCCEEDED"
    assert inbox.messages_for(result.execution_arn, expected=0) == []


def test_an_aborted_execution_sends_one_message(deployment, inbox):
    # Given: a poller waiting an hour for its job; simulated time is held until it is stopped, so
    # the wait cannot end first
    sfn = deployment.client("stepfunctions")
    name = unique("aborted")
    payload = {"job": {"duration_seconds": 0}, "timeout_seconds": 7200, "initial_wait_seconds": 3600}
    with deployment.aws.clock.busy():
        arn = sfn.start_execution(stateMachineArn=deployment.machine_arn("poller"), name=name, input=json.dumps(payload))[
            "executionArn"
        ]
        wait_for_event(sfn, arn, "WaitStateEntered", timeout=ARRIVAL_TIMEOUT_SECONDS)
        # When
        sfn.stop_execution(executionArn=arn)
    result = follow(deployment.aws, arn, timeout_seconds=ARRIVAL_TIMEOUT_SECONDS)
    # Then
    assert result.status == "ABORTED"
    messages = inbox.messages_for(arn, expected=1)
    assert len(messages) == 1, (messages, inbox.unreadable)
    message = json.loads(messages[0])
    _assert_message_describes(message, _expected_message(deployment, "poller", result, name), result)
    assert (message["error"], message["cause"]) == (None, None)


# -- alarms --------------------------------------------------------------------------------------
MACHINE_METRICS = {"ExecutionsFailed", "ExecutionsTimedOut", "ExecutionThrottled"}


def _alarms(deployment: Any) -> list[dict]:
    pages = deployment.client("cloudwatch").get_paginator("describe_alarms").paginate(AlarmTypes=["MetricAlarm"])
    return [alarm for page in pages for alarm in page["MetricAlarms"]]


@pytest.mark.parametrize("machine", sorted(MACHINES))
def test_each_machine_has_its_three_alarms_on_the_status_topic(deployment, machine):
    # Given
    topic = deployment.output("MonitoringStack", "StatusTopicArn")
    machine_arn = deployment.machine_arn(machine)
    # When
    alarms = [
        alarm
        for alarm in _alarms(deployment)
        if alarm.get("Dimensions") == [{"Name": "StateMachineArn", "Value": machine_arn}]
    ]
    # Then
    assert {alarm["MetricName"] for alarm in alarms} == MACHINE_METRICS
    assert len(alarms) == len(MACHINE_METRICS)
    for alarm in alarms:
        assert alarm["Namespace"] == "AWS/States"
        assert alarm["AlarmActions"] == [topic], alarm["AlarmName"]
        assert (alarm["Statistic"], alarm["Period"], alarm["EvaluationPeriods"]) == ("Sum", 300, 1)
        assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanOrEqualToThreshold", 1.0)
        assert alarm["TreatMissingData"] == "notBreaching"


def test_every_failure_queue_has_an_alarm_on_the_status_topic(deployment):
    # The emulator delivers every notification, so nothing is dead-lettered here: this checks the
    # deployed wiring (tests/test_emulator_cloudwatch.py shows a queue's depth raising its alarm).
    # Given: the status rule's dead-letter queue and the alert stack's two failure queues
    topic = deployment.output("MonitoringStack", "StatusTopicArn")
    alert_queues = [
        r["PhysicalResourceId"].rsplit("/", 1)[-1]
        for r in deployment.client("cloudformation").list_stack_resources(StackName="AlertNotificationStack")[
            "StackResourceSummaries"
        ]
        if r["ResourceType"] == "AWS::SQS::Queue"
    ]
    status_dead_letters = _status_rule_target(deployment)["DeadLetterConfig"]["Arn"].split(":")[-1]
    # When
    alarms = [a for a in _alarms(deployment) if a["Namespace"] == "AWS/SQS" and a["AlarmName"].startswith("MonitoringStack-")]
    # Then: one alarm per queue, each on the status topic
    # schedule dead letters, dispatch failures, alarm change failures, handoff failures, SMS reply failures,
    # contact attempt failures, follow-ups not posted
    assert len(alert_queues) == 7
    assert sorted(a["Dimensions"][0]["Value"] for a in alarms) == sorted([status_dead_letters, *alert_queues])
    for alarm in alarms:
        assert alarm["Namespace"] == "AWS/SQS"
        assert alarm["AlarmActions"] == [topic]
        assert [d["Name"] for d in alarm["Dimensions"]] == ["QueueName"]


def _status_rule_target(deployment: Any) -> dict:
    events = deployment.client("events")
    topic = deployment.output("MonitoringStack", "StatusTopicArn")
    [rule] = events.list_rule_names_by_target(TargetArn=topic)["RuleNames"]
    [target] = events.list_targets_by_rule(Rule=rule)["Targets"]
    return target

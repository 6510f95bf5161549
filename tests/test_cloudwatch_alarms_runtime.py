"""CloudWatch alarm logic as CloudWatch documents it: evaluation, the state-change event, the notification.

The emulator's alarms (emulator/cloudwatch/alarms.py and metrics.py) are plain logic, so these
tests need no emulator. Pages followed:
- Alarm evaluation (Period, EvaluationPeriods, DatapointsToAlarm "M out of N"):
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-evaluation.html
- Missing data (breaching, notBreaching, ignore, missing):
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarms-and-missing-data.html
- The state-change event: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html
- The SNS notification: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Notify_Users_Alarm_Changes.html
  and AWS's example payload, aws/aws-lambda-go events/testdata/cloudwatch-alarm-sns-payload-single-metric.json
- Step Functions metrics: https://docs.aws.amazon.com/step-functions/latest/dg/procedure-cw-metrics.html
- Embedded metric format: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timezone

import pytest

from emulator.cloudwatch.alarms import (
    ALARM,
    INITIAL_REASON,
    INSUFFICIENT_DATA,
    OK,
    Aggregate,
    Alarm,
    State,
    evaluate,
    next_state_time,
    sns_notification,
    state_change_event,
)
from emulator.cloudwatch.metrics import emf_metric_data, execution_metrics

PERIOD = 300
AT = 1_800_000_000 // PERIOD * PERIOD  # a period boundary
MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:alpha"
TOPIC = "arn:aws:sns:us-east-1:123456789012:status"


def _alarm(**overrides) -> Alarm:
    settings = dict(
        name="alpha-ExecutionsFailed",
        arn="arn:aws:cloudwatch:us-east-1:123456789012:alarm:alpha-ExecutionsFailed",
        namespace="AWS/States",
        metric_name="ExecutionsFailed",
        dimensions=(("StateMachineArn", MACHINE),),
        statistic="Sum",
        period=PERIOD,
        evaluation_periods=1,
        threshold=1.0,
        comparison_operator="GreaterThanOrEqualToThreshold",
        treat_missing_data="notBreaching",
        description="ExecutionsFailed >= 1 in 5 minutes",
        alarm_actions=(TOPIC,),
    )
    return Alarm(**{**settings, **overrides})


def _state(value: str) -> State:
    return State(value, INITIAL_REASON if value == INSUFFICIENT_DATA else "earlier", None, AT - 3600)


def _periods(*values: float | None) -> dict:
    """Datapoints of the last len(values) periods before AT, oldest first; None is a missing one."""
    periods = {}
    for k, value in enumerate(reversed(values), start=1):
        if value is not None:
            aggregate = Aggregate()
            aggregate.add(value)
            periods[AT - k * PERIOD] = aggregate
    return periods


def _evaluated(alarm: Alarm, periods: dict, current: str) -> str:
    verdict = evaluate(alarm, periods, AT, _state(current))
    return current if verdict is None else verdict.value


# -- evaluation ----------------------------------------------------------------------------------
def test_a_breaching_datapoint_puts_the_alarm_in_alarm_at_the_period_boundary():
    # Given: one failure in the last period; the app's alarm is Sum >= 1 over one period
    # When
    verdict = evaluate(_alarm(), _periods(1.0), AT, _state(OK))
    # Then
    assert verdict.value == ALARM
    assert verdict.timestamp == AT
    assert verdict.reason.startswith("Threshold Crossed: 1 out of the last 1 datapoints [1.0 (")
    assert verdict.reason.endswith(
        "was greater than or equal to the threshold (1.0) (minimum 1 datapoint for OK -> ALARM transition)."
    )
    reason_data = json.loads(verdict.reason_data)
    assert (reason_data["statistic"], reason_data["period"], reason_data["threshold"]) == ("Sum", PERIOD, 1.0)
    assert reason_data["recentDatapoints"] == [1.0]


def test_the_statistic_summarises_every_datapoint_of_a_period():
    # Given: three datapoints in one period; Sum crosses 5, Average and Maximum do not
    aggregate = Aggregate()
    for value in (1.0, 2.0, 3.0):
        aggregate.add(value)
    periods = {AT - PERIOD: aggregate}
    threshold = dict(threshold=5.0, comparison_operator="GreaterThanThreshold")
    # Then
    assert _evaluated(_alarm(statistic="Sum", **threshold), periods, OK) == ALARM
    assert _evaluated(_alarm(statistic="Average", **threshold), periods, ALARM) == OK
    assert _evaluated(_alarm(statistic="Maximum", **threshold), periods, ALARM) == OK
    assert _evaluated(_alarm(statistic="SampleCount", threshold=3.0), periods, OK) == ALARM
    assert _evaluated(_alarm(statistic=None, extended_statistic="p50", threshold=2.0), periods, OK) == ALARM


@pytest.mark.parametrize(
    ("datapoints", "expected"),
    [
        ((1.0, 0.0, 1.0), ALARM),  # 2 of 3 breach
        ((0.0, 0.0, 1.0), OK),  # 1 of 3
        ((1.0, 1.0, 0.0), ALARM),  # the breaching ones need not be consecutive or recent
    ],
)
def test_m_out_of_n_needs_datapoints_to_alarm_breaching_of_evaluation_periods(datapoints, expected):
    # Given: "Datapoints to Alarm" 2 of "Evaluation Periods" 3 (alarm-evaluation.html)
    alarm = _alarm(evaluation_periods=3, datapoints_to_alarm=2)
    # When / Then
    assert _evaluated(alarm, _periods(*datapoints), INSUFFICIENT_DATA) == expected


def test_without_datapoints_to_alarm_every_evaluation_period_must_breach():
    alarm = _alarm(evaluation_periods=2)
    assert _evaluated(alarm, _periods(1.0, 0.0), OK) == OK
    assert _evaluated(alarm, _periods(1.0, 1.0), OK) == ALARM


@pytest.mark.parametrize(
    ("treat", "current", "expected"),
    [
        ("notBreaching", ALARM, OK),  # missing data is "good"
        ("breaching", OK, ALARM),  # missing data is "bad"
        ("ignore", ALARM, ALARM),  # the current state is maintained
        ("ignore", OK, OK),
        ("missing", OK, INSUFFICIENT_DATA),  # all missing: INSUFFICIENT_DATA
        (None, OK, INSUFFICIENT_DATA),  # missing is the default
    ],
)
def test_a_window_with_no_datapoint_follows_treat_missing_data(treat, current, expected):
    # Given / When / Then (alarms-and-missing-data.html)
    assert _evaluated(_alarm(treat_missing_data=treat), _periods(None), current) == expected


def test_missing_data_treated_as_not_breaching_says_so():
    verdict = evaluate(_alarm(), _periods(None), AT, _state(ALARM))
    assert verdict.reason == (
        "Threshold Crossed: no datapoints were received for 1 period and 1 missing datapoint was treated as [NonBreaching]."
    )


def test_all_missing_with_missing_treatment_is_insufficient_data():
    verdict = evaluate(_alarm(treat_missing_data="missing", evaluation_periods=3), {}, AT, _state(OK))
    assert (verdict.value, verdict.reason) == (INSUFFICIENT_DATA, "Insufficient Data: 3 datapoints were unknown.")


def test_all_missing_with_missing_treatment_is_no_change_for_an_alarm_already_insufficient_data():
    # The state it is in: no change to record in its history, send or act on (issue 40: the emulator
    # recorded "Alarm updated from INSUFFICIENT_DATA to INSUFFICIENT_DATA" at every period)
    assert evaluate(_alarm(treat_missing_data="missing", evaluation_periods=3), {}, AT, _state(INSUFFICIENT_DATA)) is None


@pytest.mark.parametrize(
    ("treat", "expected"),
    [("breaching", ALARM), ("notBreaching", OK), ("ignore", INSUFFICIENT_DATA), ("missing", ALARM)],
)
def test_a_partly_missing_window_with_one_breaching_datapoint(treat, expected):
    # Given: 2 of 2 to alarm, one datapoint breaching and one missing; the alarm starts undecided
    alarm = _alarm(evaluation_periods=2, treat_missing_data=treat)
    # When / Then: breaching fills the gap with a breach, notBreaching with a good one, ignore cannot
    # decide and keeps the state, missing decides on the datapoints present
    assert _evaluated(alarm, _periods(None, 1.0), INSUFFICIENT_DATA) == expected


def test_ignore_still_decides_when_the_present_datapoints_settle_it():
    # Given: 2 of 3; one missing, two present
    alarm = _alarm(evaluation_periods=3, datapoints_to_alarm=2, treat_missing_data="ignore")
    # Then: two breaching is ALARM and two good is OK whatever the missing one was
    assert _evaluated(alarm, _periods(1.0, None, 1.0), OK) == ALARM
    assert _evaluated(alarm, _periods(0.0, None, 0.0), ALARM) == OK


def test_an_unchanged_state_is_no_change():
    assert evaluate(_alarm(), _periods(1.0), AT, _state(ALARM)) is None


# -- what others receive -------------------------------------------------------------------------
def _change() -> tuple[Alarm, State, State]:
    previous = State(OK, "Threshold Crossed: no datapoints were received for 1 period and 1 missing datapoint "
                     "was treated as [NonBreaching].", '{"version":"1.0"}', AT - PERIOD)
    current = evaluate(_alarm(), _periods(1.0), AT, previous)
    return _alarm(), previous, current


def test_the_state_change_event_has_the_documented_shape():
    # Given
    alarm, previous, current = _change()
    # When
    event = state_change_event(alarm, previous, current, "123456789012", "us-east-1")
    # Then: the "Single Metric Alarm" example's fields (cloudwatch-and-eventbridge.html)
    assert {k: event[k] for k in ("version", "detail-type", "source", "account", "region", "resources")} == {
        "version": "0",
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "account": "123456789012",
        "region": "us-east-1",
        "resources": [alarm.arn],
    }
    assert event["time"] == datetime.fromtimestamp(AT, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    detail = event["detail"]
    assert set(detail) == {"alarmName", "state", "previousState", "configuration"}
    assert detail["alarmName"] == alarm.name
    assert detail["state"] == {
        "value": "ALARM",
        "reason": current.reason,
        "reasonData": current.reason_data,
        "timestamp": datetime.fromtimestamp(AT, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000+0000"),
    }
    assert detail["previousState"]["value"] == "OK"
    assert detail["configuration"]["description"] == alarm.description
    [metric] = detail["configuration"]["metrics"]
    assert metric["returnData"] is True
    assert metric["metricStat"] == {
        "metric": {"namespace": "AWS/States", "name": "ExecutionsFailed", "dimensions": {"StateMachineArn": MACHINE}},
        "period": PERIOD,
        "stat": "Sum",
    }


def test_a_state_set_by_hand_has_no_reason_data():
    alarm, previous, _ = _change()
    current = State(ALARM, "testing the topic", None, AT)
    detail = state_change_event(alarm, previous, current, "123456789012", "us-east-1")["detail"]
    assert "reasonData" not in detail["state"]
    assert detail["previousState"]["reasonData"] == '{"version":"1.0"}'


def test_the_sns_notification_has_the_documented_shape():
    # Given
    alarm, previous, current = _change()
    # When
    subject, message = sns_notification(alarm, previous, current, "123456789012", "us-east-1")
    body = json.loads(message)
    # Then
    assert subject == 'ALARM: "alpha-ExecutionsFailed" in US East (N. Virginia)'
    assert {k: body[k] for k in ("AlarmName", "AlarmDescription", "AWSAccountId", "NewStateValue", "OldStateValue",
                                 "Region", "AlarmArn", "AlarmActions", "OKActions")} == {
        "AlarmName": alarm.name,
        "AlarmDescription": alarm.description,
        "AWSAccountId": "123456789012",
        "NewStateValue": "ALARM",
        "OldStateValue": "OK",
        "Region": "US East (N. Virginia)",
        "AlarmArn": alarm.arn,
        "AlarmActions": [TOPIC],
        "OKActions": [],
    }
    assert body["NewStateReason"] == current.reason
    assert body["StateChangeTime"] == datetime.fromtimestamp(AT, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000+0000")
    assert body["Trigger"] == {
        "MetricName": "ExecutionsFailed",
        "Namespace": "AWS/States",
        "StatisticType": "Statistic",
        "Statistic": "SUM",
        "Unit": None,
        "Dimensions": [{"value": MACHINE, "name": "StateMachineArn"}],
        "Period": PERIOD,
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "Threshold": 1.0,
        "TreatMissingData": "notBreaching",
        "EvaluateLowSampleCountPercentile": "",
    }


def test_a_long_alarm_name_still_makes_a_subject_sns_accepts():
    # Given: CDK names alarms after stacks and logical ids; SNS refuses subjects longer than 100 characters
    alarm, previous, current = _change()
    long_named = dataclasses.replace(alarm, name="MonitoringStack-MapRetryStack-MapRetryMachineStateMachine904D4C50-X-ExecutionsFailed")
    # When
    subject, message = sns_notification(long_named, previous, current, "123456789012", "us-east-1")
    # Then
    assert len(subject) <= 100 and subject.startswith('ALARM: "MonitoringStack-')
    assert json.loads(message)["AlarmName"] == long_named.name


def test_each_state_has_its_own_actions():
    alarm = dataclasses.replace(_alarm(), ok_actions=("arn:aws:sns:us-east-1:123456789012:ok",), insufficient_data_actions=())
    assert alarm.actions_for(ALARM) == (TOPIC,)
    assert alarm.actions_for(OK) == ("arn:aws:sns:us-east-1:123456789012:ok",)
    assert alarm.actions_for(INSUFFICIENT_DATA) == ()


# -- where datapoints come from ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "metric"),
    [("SUCCEEDED", "ExecutionsSucceeded"), ("FAILED", "ExecutionsFailed"), ("TIMED_OUT", "ExecutionsTimedOut"),
     ("ABORTED", "ExecutionsAborted")],
)
def test_an_ended_execution_counts_once_and_reports_its_time(status, metric):
    # When
    data = execution_metrics(status, MACHINE, now=AT + 2.5, start=AT, redriven=False)
    # Then
    assert [(d["MetricName"], d["Value"], d["Unit"]) for d in data] == [
        (metric, 1.0, "Count"), ("ExecutionTime", 2500, "Milliseconds")
    ]
    assert all(d["Dimensions"] == [{"Name": "StateMachineArn", "Value": MACHINE}] for d in data)


def test_a_started_execution_counts_as_started_and_a_redriven_one_as_redriven():
    assert [d["MetricName"] for d in execution_metrics("RUNNING", MACHINE, now=AT, start=AT, redriven=False)] == [
        "ExecutionsStarted"
    ]
    assert [d["MetricName"] for d in execution_metrics("RUNNING", MACHINE, now=AT, start=AT, redriven=True)] == [
        "ExecutionsRedriven"
    ]


def test_an_emf_line_becomes_one_metric_per_dimension_set():
    # Given: the shape Powertools' Metrics prints (EMF specification)
    line = json.dumps({
        "_aws": {
            "Timestamp": AT * 1000,
            "CloudWatchMetrics": [{
                "Namespace": "StepFunctionsPatterns",
                "Dimensions": [["service"], ["AlertId", "service"]],
                "Metrics": [{"Name": "NotificationsSent", "Unit": "Count"}, {"Name": "Latency", "Unit": "Milliseconds"}],
            }],
        },
        "service": "alert_dispatcher",
        "AlertId": "A-1",
        "NotificationsSent": [1.0, 2.0],
        "Latency": 12,
    })
    # When
    [(namespace, data)] = emf_metric_data(line)
    # Then
    assert namespace == "StepFunctionsPatterns"
    assert [(d["MetricName"], d["Dimensions"], d["Values"], d["Unit"]) for d in data] == [
        ("NotificationsSent", [{"Name": "service", "Value": "alert_dispatcher"}], [1.0, 2.0], "Count"),
        ("NotificationsSent", [{"Name": "AlertId", "Value": "A-1"}, {"Name": "service", "Value": "alert_dispatcher"}],
         [1.0, 2.0], "Count"),
        ("Latency", [{"Name": "service", "Value": "alert_dispatcher"}], [12.0], "Milliseconds"),
        ("Latency", [{"Name": "AlertId", "Value": "A-1"}, {"Name": "service", "Value": "alert_dispatcher"}],
         [12.0], "Milliseconds"),
    ]
    assert data[0]["Timestamp"] == datetime.fromtimestamp(AT, timezone.utc).replace(tzinfo=None)


@pytest.mark.parametrize("line", ["plain text", '{"level": "INFO", "message": "hi"}', '{"_aws": "not a directive"}'])
def test_a_line_that_is_not_emf_is_no_metric(line):
    assert emf_metric_data(line) == []


def test_a_change_at_the_same_moment_as_the_last_is_stamped_a_millisecond_later():
    # State timestamps are milliseconds (2019-10-02T17:04:40.985+0000) and strictly increase.
    assert next_state_time(previous=1000.5, now=1000.5) == 1000.501
    assert next_state_time(previous=1000.5, now=1002.25) == 1002.25

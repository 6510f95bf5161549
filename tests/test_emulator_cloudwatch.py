"""CloudWatch alarms in the emulator: SetAlarmState's consequences, evaluation on the simulated clock.

Against the emulator the app is deployed into (the ``deployment`` fixture), through the real API.
Each test reads what an on-call tool would: an SQS queue subscribed to a topic, or a rule's queue
target. Pages followed:
- SetAlarmState: https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_SetAlarmState.html
- PutMetricAlarm (a new alarm is INSUFFICIENT_DATA):
  https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutMetricAlarm.html
- The state-change event: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html
- Alarm actions and their notification: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Notify_Users_Alarm_Changes.html
- Alarm evaluation: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-evaluation.html
- Step Functions metrics: https://docs.aws.amazon.com/step-functions/latest/dg/procedure-cw-metrics.html
- DescribeAlarmHistory: https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_DescribeAlarmHistory.html
  and the AWS CLI reference's describe-alarm-history example (HistoryData, HistorySummary)
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterator

import pytest
from botocore.exceptions import ClientError

from tests.emulator_helpers import create_function, permissive_role, put_target, unique

ARRIVAL_SECONDS = 10
SETTLE_SECONDS = 0.5


class Inbox:
    """An SQS queue; ``subscribe`` it to a topic (raw delivery) or make it a rule's target."""

    def __init__(self, aws: Any) -> None:
        self._sqs = aws.client("sqs")
        self.url = self._sqs.create_queue(QueueName=unique("alarm-inbox"))["QueueUrl"]
        self.arn = self._sqs.get_queue_attributes(QueueUrl=self.url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self._aws = aws

    def subscribe(self, topic_arn: str) -> "Inbox":
        self._aws.client("sns").subscribe(
            TopicArn=topic_arn, Protocol="sqs", Endpoint=self.arn, Attributes={"RawMessageDelivery": "true"}
        )
        return self

    def read(self, expected: int) -> list[str]:
        """Every body that arrives: waits for ``expected``, then a little longer for strays."""
        bodies: list[str] = []
        deadline = time.monotonic() + ARRIVAL_SECONDS
        settled_at = None
        while True:
            for message in self._sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=10).get("Messages", []):
                bodies.append(message["Body"])
                self._sqs.delete_message(QueueUrl=self.url, ReceiptHandle=message["ReceiptHandle"])
            now = time.monotonic()
            if settled_at is None and len(bodies) >= expected:
                settled_at = now + SETTLE_SECONDS
            if (settled_at is not None and now >= settled_at) or now >= deadline:
                return bodies
            time.sleep(0.05)


@pytest.fixture(scope="module")
def cloudwatch(aws):
    return aws.client("cloudwatch")


@pytest.fixture
def paused(aws) -> Iterator[None]:
    """Simulated time moves only when the test advances it: executions other tests left waiting would
    otherwise carry it past a period boundary at any moment, where the alarm's own evaluation (of no
    data) changes the state a test set by hand and sends one event more."""
    aws.clock.pause()
    try:
        yield
    finally:
        aws.clock.resume()


def _topic(aws: Any) -> str:
    return aws.client("sns").create_topic(Name=unique("alarm-topic"))["TopicArn"]


def _put_alarm(cloudwatch: Any, **settings: Any) -> str:
    name = unique("alarm")
    cloudwatch.put_metric_alarm(**{
        "AlarmName": name, "Namespace": unique("Emulator/Test"), "MetricName": "Errors", "Statistic": "Sum",
        "Period": 60, "EvaluationPeriods": 1, "Threshold": 1.0,
        "ComparisonOperator": "GreaterThanOrEqualToThreshold", **settings,
    })
    return name


def _queue_with_alarm(aws: Any, cloudwatch: Any, metric: str, statistic: str) -> tuple[str, str, str]:
    """A new queue and an alarm on one of its AWS/SQS metrics as the app's failure-queue alarms are
    (>= 1 in a minute, missing data not breaching): (queue name, queue URL, alarm name)."""
    queue = unique("failures")
    url = aws.client("sqs").create_queue(QueueName=queue)["QueueUrl"]
    name = _put_alarm(cloudwatch, Namespace="AWS/SQS", MetricName=metric, Statistic=statistic,
                      Dimensions=[{"Name": "QueueName", "Value": queue}], TreatMissingData="notBreaching")
    return queue, url, name


def _described(cloudwatch: Any, name: str) -> dict:
    [alarm] = cloudwatch.describe_alarms(AlarmNames=[name])["MetricAlarms"]
    return alarm


def _wait_for_state(cloudwatch: Any, name: str, value: str) -> dict:
    deadline = time.monotonic() + ARRIVAL_SECONDS
    while True:
        alarm = _described(cloudwatch, name)
        if alarm["StateValue"] == value or time.monotonic() > deadline:
            return alarm
        time.sleep(0.05)


# -- SetAlarmState ---------------------------------------------------------------------------------
def test_a_new_alarm_is_insufficient_data(cloudwatch):
    # When
    alarm = _described(cloudwatch, _put_alarm(cloudwatch))
    # Then
    assert (alarm["StateValue"], alarm["StateReason"]) == ("INSUFFICIENT_DATA", "Unchecked: Initial alarm creation")


def test_set_alarm_state_puts_the_state_change_event_on_the_default_bus(aws, cloudwatch, paused):
    # Given: a rule for this alarm's state changes, with a queue as its target
    name = _put_alarm(cloudwatch, AlarmDescription="Errors seen")
    inbox = Inbox(aws)
    events = aws.client("events")
    rule = unique("alarm-rule")
    events.put_rule(Name=rule, EventPattern=json.dumps(
        {"source": ["aws.cloudwatch"], "detail-type": ["CloudWatch Alarm State Change"], "detail": {"alarmName": [name]}}
    ))
    put_target(aws, rule, {"Id": "inbox", "Arn": inbox.arn})
    before = aws.clock.now()
    # When: as `aws cloudwatch set-alarm-state` sends it
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="Testing the alarm path",
                               StateReasonData='{"by": "test"}')
    # Then
    [body] = inbox.read(expected=1)
    event = json.loads(body)
    arn = _described(cloudwatch, name)["AlarmArn"]
    assert (event["source"], event["detail-type"], event["resources"]) == (
        "aws.cloudwatch", "CloudWatch Alarm State Change", [arn]
    )
    detail = event["detail"]
    assert detail["alarmName"] == name
    assert {k: detail["state"][k] for k in ("value", "reason", "reasonData")} == {
        "value": "ALARM", "reason": "Testing the alarm path", "reasonData": '{"by": "test"}'
    }
    assert (detail["previousState"]["value"], detail["previousState"]["reason"]) == (
        "INSUFFICIENT_DATA", "Unchecked: Initial alarm creation"
    )
    assert detail["configuration"]["description"] == "Errors seen"
    assert detail["configuration"]["metrics"][0]["metricStat"]["metric"]["name"] == "Errors"
    # The change happened on the simulated clock
    changed = time.mktime(time.strptime(event["time"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    assert before - 1 <= changed <= aws.clock.now() + 1


def test_set_alarm_state_on_a_missing_alarm_is_resource_not_found_naming_it(cloudwatch):
    # SetAlarmState's errors: ResourceNotFound, "The named resource does not exist" (HTTP 404 in the API model)
    name = unique("no-such-alarm")
    with pytest.raises(ClientError) as refused:
        cloudwatch.set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="trying it")
    error = refused.value.response["Error"]
    assert (error["Code"], refused.value.response["ResponseMetadata"]["HTTPStatusCode"]) == ("ResourceNotFound", 404)
    assert name in error["Message"]


def test_states_set_by_hand_on_a_paused_clock_get_increasing_timestamps(aws, cloudwatch, paused):
    # Given: the clock paused, an alarm set to ALARM then at once back to OK, as a person does in the console
    name = _put_alarm(cloudwatch)
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="first")
    alarmed = _described(cloudwatch, name)["StateUpdatedTimestamp"]
    # When
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="OK", StateReason="second")
    # Then: the OK is later than the ALARM (a reader that drops a repeat of the latest time keeps it)
    assert _described(cloudwatch, name)["StateUpdatedTimestamp"] > alarmed


def test_describe_alarm_history_lists_each_state_update_newest_first(aws, cloudwatch, paused):
    # Given
    name = _put_alarm(cloudwatch)
    _put_alarm(cloudwatch)  # another alarm's history is not this one's
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="testing purposes",
                               StateReasonData='{"by": "test"}')
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="OK", StateReason="back to normal")
    # When
    items = cloudwatch.describe_alarm_history(AlarmName=name, HistoryItemType="StateUpdate")["AlarmHistoryItems"]
    # Then
    assert [(i["AlarmName"], i["HistoryItemType"], i["HistorySummary"]) for i in items] == [
        (name, "StateUpdate", "Alarm updated from ALARM to OK"),
        (name, "StateUpdate", "Alarm updated from INSUFFICIENT_DATA to ALARM"),
    ]
    assert json.loads(items[0]["HistoryData"]) == {
        "version": "1.0",
        "oldState": {"stateValue": "ALARM", "stateReason": "testing purposes", "stateReasonData": {"by": "test"}},
        "newState": {"stateValue": "OK", "stateReason": "back to normal"},
    }
    assert items[0]["Timestamp"] > items[1]["Timestamp"]
    described = _described(cloudwatch, name)
    assert items[0]["Timestamp"] == described["StateUpdatedTimestamp"]
    # Oldest first, a page at a time
    first = cloudwatch.describe_alarm_history(AlarmName=name, ScanBy="TimestampAscending", MaxRecords=1)
    assert [i["HistorySummary"] for i in first["AlarmHistoryItems"]] == ["Alarm updated from INSUFFICIENT_DATA to ALARM"]
    rest = cloudwatch.describe_alarm_history(AlarmName=name, ScanBy="TimestampAscending", MaxRecords=1,
                                             NextToken=first["NextToken"])
    assert [i["HistorySummary"] for i in rest["AlarmHistoryItems"]] == ["Alarm updated from ALARM to OK"]
    assert "NextToken" not in rest


def test_set_alarm_state_runs_only_the_new_states_actions(aws, cloudwatch, paused):
    # Given: a topic per state, each read by its own queue
    topics = {state: _topic(aws) for state in ("ALARM", "OK", "INSUFFICIENT_DATA")}
    inboxes = {state: Inbox(aws).subscribe(topic) for state, topic in topics.items()}
    name = _put_alarm(cloudwatch, AlarmActions=[topics["ALARM"]], OKActions=[topics["OK"]],
                      InsufficientDataActions=[topics["INSUFFICIENT_DATA"]])
    # When
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="Testing ALARM")
    # Then: the ALARM topic gets the documented notification; the others nothing
    [body] = inboxes["ALARM"].read(expected=1)
    assert inboxes["OK"].read(expected=0) == [] and inboxes["INSUFFICIENT_DATA"].read(expected=0) == []
    message = json.loads(body)
    assert {k: message[k] for k in ("AlarmName", "NewStateValue", "OldStateValue", "NewStateReason")} == {
        "AlarmName": name, "NewStateValue": "ALARM", "OldStateValue": "INSUFFICIENT_DATA", "NewStateReason": "Testing ALARM"
    }
    assert message["AlarmActions"] == [topics["ALARM"]]
    assert message["Trigger"]["MetricName"] == "Errors"
    # When: back to OK
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="OK", StateReason="Testing OK")
    # Then
    [body] = inboxes["OK"].read(expected=1)
    assert (json.loads(body)["NewStateValue"], json.loads(body)["OldStateValue"]) == ("OK", "ALARM")
    assert inboxes["ALARM"].read(expected=0) == []


def test_the_notification_carries_the_documented_subject(aws, cloudwatch, paused):
    # Given: a queue subscribed without raw delivery sees SNS's envelope, Subject included
    topic = _topic(aws)
    inbox = Inbox(aws)
    aws.client("sns").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=inbox.arn)
    name = _put_alarm(cloudwatch, AlarmActions=[topic])
    # When
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="Testing the subject")
    # Then
    [body] = inbox.read(expected=1)
    assert json.loads(body)["Subject"] == f'ALARM: "{name}" in US East (N. Virginia)'


def test_setting_the_state_it_is_in_changes_nothing(aws, cloudwatch, paused):
    # Given
    topic = _topic(aws)
    inbox = Inbox(aws).subscribe(topic)
    name = _put_alarm(cloudwatch, AlarmActions=[topic])
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="first")
    assert len(inbox.read(expected=1)) == 1
    # When
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="again")
    # Then: no second notification, and no history item: DescribeAlarmHistory's StateUpdate items are
    # the alarm's state changes (API_DescribeAlarmHistory.html), and SetAlarmState acts only "when the
    # updated state differs from the previous value" (API_SetAlarmState.html)
    assert inbox.read(expected=0) == []
    assert [i["HistorySummary"] for i in cloudwatch.describe_alarm_history(AlarmName=name)["AlarmHistoryItems"]] == [
        "Alarm updated from INSUFFICIENT_DATA to ALARM"]


def test_disabled_actions_do_not_run_but_the_event_is_sent(aws, cloudwatch, paused):
    # Given
    topic = _topic(aws)
    topic_inbox = Inbox(aws).subscribe(topic)
    name = _put_alarm(cloudwatch, AlarmActions=[topic], ActionsEnabled=False)
    rule_inbox = Inbox(aws)
    rule = unique("alarm-rule")
    aws.client("events").put_rule(Name=rule, EventPattern=json.dumps({"detail": {"alarmName": [name]}}))
    put_target(aws, rule, {"Id": "inbox", "Arn": rule_inbox.arn})
    # When
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="ALARM", StateReason="actions are off")
    # Then
    assert len(rule_inbox.read(expected=1)) == 1
    assert topic_inbox.read(expected=0) == []


# -- evaluation on the simulated clock -----------------------------------------------------------------
def test_put_metric_data_puts_the_alarm_in_alarm_at_the_next_period_boundary(aws, cloudwatch, paused):
    # Given: an alarm on Sum >= 1 per minute, and a datapoint of 3
    topic = _topic(aws)
    inbox = Inbox(aws).subscribe(topic)
    name = _put_alarm(cloudwatch, AlarmActions=[topic], TreatMissingData="notBreaching")
    namespace = _described(cloudwatch, name)["Namespace"]
    cloudwatch.put_metric_data(Namespace=namespace, MetricData=[{"MetricName": "Errors", "Value": 3.0}])
    put_at = aws.clock.now()
    boundary = (int(put_at) // 60 + 1) * 60
    # When: simulated time passes the end of the datapoint's minute
    aws.clock.advance(boundary - put_at + 1)
    # Then: ALARM, stamped at the boundary of simulated time, and the topic is told
    alarm = _wait_for_state(cloudwatch, name, "ALARM")
    assert alarm["StateValue"] == "ALARM", alarm["StateReason"]
    assert alarm["StateUpdatedTimestamp"].timestamp() == boundary
    assert alarm["StateReason"].startswith("Threshold Crossed: 1 out of the last 1 datapoints [3.0 (")
    [body] = inbox.read(expected=1)
    assert json.loads(body)["NewStateValue"] == "ALARM"
    # When: a minute with no datapoint passes
    aws.clock.advance(60)
    # Then: missing data is not breaching, so OK again
    assert _wait_for_state(cloudwatch, name, "OK")["StateValue"] == "OK"


def test_minutes_without_data_leave_a_new_alarm_as_it_is_and_record_nothing(aws, cloudwatch, paused):
    # Given: a new alarm (INSUFFICIENT_DATA), missing data treated as missing (the default), its
    # INSUFFICIENT_DATA action and its state-change events read
    topic = _topic(aws)
    insufficient_inbox = Inbox(aws).subscribe(topic)
    name = _put_alarm(cloudwatch, InsufficientDataActions=[topic])
    rule_inbox = Inbox(aws)
    rule = unique("alarm-rule")
    aws.client("events").put_rule(Name=rule, EventPattern=json.dumps({"detail": {"alarmName": [name]}}))
    put_target(aws, rule, {"Id": "inbox", "Arn": rule_inbox.arn})
    # When: five minutes pass with no datapoint (each boundary evaluates to INSUFFICIENT_DATA, the
    # state it is in), then a breaching datapoint's minute ends
    for _ in range(5):
        aws.clock.advance(60)
        time.sleep(0.1)
    namespace = _described(cloudwatch, name)["Namespace"]
    cloudwatch.put_metric_data(Namespace=namespace, MetricData=[{"MetricName": "Errors", "Value": 3.0}])
    aws.clock.advance(61)
    # Then: the ALARM (evaluated after the quiet minutes) is the only change recorded, sent or acted on;
    # issue 40 found "Alarm updated from INSUFFICIENT_DATA to INSUFFICIENT_DATA" once a minute, which
    # CloudWatch does not record (its StateUpdate items are state changes, API_DescribeAlarmHistory.html)
    assert _wait_for_state(cloudwatch, name, "ALARM")["StateValue"] == "ALARM"
    history = cloudwatch.describe_alarm_history(AlarmName=name, HistoryItemType="StateUpdate")["AlarmHistoryItems"]
    assert [i["HistorySummary"] for i in history] == ["Alarm updated from INSUFFICIENT_DATA to ALARM"]
    assert [json.loads(body)["detail"]["state"]["value"] for body in rule_inbox.read(expected=1)] == ["ALARM"]
    assert insufficient_inbox.read(expected=0) == []


def test_a_failed_execution_puts_its_monitoring_alarm_in_alarm_within_its_period(deployment, aws, cloudwatch, paused):
    # Given: the deployed failed-executions alarm of the map retry machine, OK, and its status topic read
    machine = deployment.machine_arn("map-retry")
    [alarm] = [
        a for a in cloudwatch.describe_alarms(AlarmTypes=["MetricAlarm"])["MetricAlarms"]
        if a["MetricName"] == "ExecutionsFailed" and a["Dimensions"] == [{"Name": "StateMachineArn", "Value": machine}]
    ]
    topic = deployment.output("MonitoringStack", "StatusTopicArn")
    inbox = Inbox(aws).subscribe(topic)
    cloudwatch.set_alarm_state(AlarmName=alarm["AlarmName"], StateValue="OK", StateReason="Reset by the test")
    # When: an execution fails, and the alarm's period (5 minutes) of simulated time passes
    result = deployment.run("map-retry", {"items": "A-123"}, name=unique("fails-for-alarm"))
    assert result.status == "FAILED"
    failed_at = result.stop.timestamp()
    aws.clock.advance(alarm["Period"])
    # Then
    described = _wait_for_state(cloudwatch, alarm["AlarmName"], "ALARM")
    assert described["StateValue"] == "ALARM", described["StateReason"]
    assert failed_at < described["StateUpdatedTimestamp"].timestamp() <= failed_at + alarm["Period"]
    # (Other machines' alarms may fire too at this boundary, for failures earlier tests caused: only this one's count.)
    alarm_messages = [json.loads(b) for b in inbox.read(expected=2) if json.loads(b).get("AlarmName") == alarm["AlarmName"]]
    assert [(m["AlarmName"], m["NewStateValue"], m["OldStateValue"]) for m in alarm_messages] == [
        (alarm["AlarmName"], "ALARM", "OK")
    ]
    assert alarm_messages[0]["Trigger"]["Dimensions"] == [{"value": machine, "name": "StateMachineArn"}]


def test_step_functions_publishes_its_execution_metrics(deployment, aws, cloudwatch):
    # Given
    machine = deployment.machine_arn("map-retry")
    # When
    result = deployment.run("map-retry", {"items": "A-123"}, name=unique("metrics"))
    # Then: the execution's start, failure and duration are in AWS/States for its machine
    dimensions = [{"Name": "StateMachineArn", "Value": machine}]
    window = dict(StartTime=result.start.timestamp() - 1, EndTime=result.stop.timestamp() + 1, Period=60)

    def total(metric: str, stat: str = "Sum") -> float:
        points = cloudwatch.get_metric_statistics(Namespace="AWS/States", MetricName=metric, Dimensions=dimensions,
                                                  Statistics=[stat], **window)["Datapoints"]
        return sum(p[stat] for p in points)

    assert total("ExecutionsStarted") >= 1
    assert total("ExecutionsFailed") >= 1
    assert total("ExecutionTime", "SampleCount") >= 1


EMF_CODE = '''
import json, time

def lambda_handler(event, context):
    print(json.dumps({
        "_aws": {"Timestamp": int(time.time() * 1000), "CloudWatchMetrics": [
            {"Namespace": event["namespace"], "Dimensions": [["service"]], "Metrics": [{"Name": "JobsTimedOut", "Unit": "Count"}]}
        ]},
        "service": "emf-probe",
        "JobsTimedOut": event["value"],
    }))
    return {}
'''


def test_embedded_metric_format_lines_a_function_prints_become_metrics(aws, cloudwatch, paused):
    # Given: a function that prints one EMF line, and an alarm on that metric
    role = permissive_role(aws, "emf")
    function = create_function(aws, role, "emf", "emf", EMF_CODE)["FunctionName"]
    namespace = unique("Emulator/EMF")
    name = _put_alarm(cloudwatch, Namespace=namespace, MetricName="JobsTimedOut",
                      Dimensions=[{"Name": "service", "Value": "emf-probe"}])
    # When
    aws.client("lambda").invoke(FunctionName=function, Payload=json.dumps({"namespace": namespace, "value": 2}))
    invoked_at = aws.clock.now()
    # Then: the metric is listed, and the alarm fires once its minute is over
    listed = cloudwatch.list_metrics(Namespace=namespace)["Metrics"]
    assert [(m["MetricName"], m["Dimensions"]) for m in listed] == [
        ("JobsTimedOut", [{"Name": "service", "Value": "emf-probe"}])
    ]
    aws.clock.advance((int(invoked_at) // 60 + 1) * 60 - invoked_at + 1)
    assert _wait_for_state(cloudwatch, name, "ALARM")["StateValue"] == "ALARM"


def test_a_queue_with_a_message_waiting_raises_its_depth_alarm(aws, cloudwatch, paused):
    # Given: an alarm on a queue's depth as the app's failure-queue alarms are (Maximum >= 1), and a
    # message waiting in it (SQS pushes the depth to AWS/SQS every minute:
    # https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-available-cloudwatch-metrics.html)
    sqs = aws.client("sqs")
    queue, url, name = _queue_with_alarm(aws, cloudwatch, "ApproximateNumberOfMessagesVisible", "Maximum")
    sqs.send_message(QueueUrl=url, MessageBody="a record nobody handled")
    try:
        # When: two minutes of simulated time pass (a sample, then the end of its period)
        aws.clock.advance(60)
        deadline = time.monotonic() + ARRIVAL_SECONDS
        dimensions = [{"Name": "QueueName", "Value": queue}]
        while not cloudwatch.list_metrics(Namespace="AWS/SQS", Dimensions=dimensions)["Metrics"]:
            assert time.monotonic() < deadline, "no depth sampled"
            time.sleep(0.05)
        aws.clock.advance(60)
        # Then
        alarm = _wait_for_state(cloudwatch, name, "ALARM")
        assert alarm["StateValue"] == "ALARM", alarm["StateReason"]
        assert alarm["StateReason"].startswith("Threshold Crossed: 1 out of the last 1 datapoints [1.0 (")
    finally:
        # The deployed app's AWS/SQS alarms are counted elsewhere (test_monitoring_execution.py).
        cloudwatch.delete_alarms(AlarmNames=[name])


def test_a_sent_messages_alarm_fires_again_for_a_failure_arriving_while_an_older_one_waits(aws, cloudwatch, paused):
    # Given: an alarm as the app's failure-queue alarms are (NumberOfMessagesSent, Sum >= 1 per
    # period, missing data not breaching) on a queue nothing reads
    sqs = aws.client("sqs")
    _, url, name = _queue_with_alarm(aws, cloudwatch, "NumberOfMessagesSent", "Sum")
    try:
        def minutes_pass(count: int) -> None:
            for _ in range(count):
                aws.clock.advance(60)
                time.sleep(0.2)

        # When: a failure arrives, then nothing for a few minutes, then a second failure (the first
        # still waiting in the queue)
        sqs.send_message(QueueUrl=url, MessageBody="first failure")
        minutes_pass(2)
        first = _wait_for_state(cloudwatch, name, "ALARM")["StateValue"]
        minutes_pass(3)
        quiet = _wait_for_state(cloudwatch, name, "OK")["StateValue"]
        sqs.send_message(QueueUrl=url, MessageBody="second failure")
        minutes_pass(2)
        second = _wait_for_state(cloudwatch, name, "ALARM")["StateValue"]
        # Then: ALARM, back to OK in the quiet minutes, ALARM again: each failure notifies
        assert (first, quiet, second) == ("ALARM", "OK", "ALARM")
    finally:
        cloudwatch.delete_alarms(AlarmNames=[name])


# -- Dashboards: the account's, in every region ------------------------------------------------------
# A dashboard's ARN has no region (arn:aws:cloudwatch::<account>:dashboard/<name>): the account has one
# set of dashboards. https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_PutDashboard.html
def _in_region(aws: Any, service: str, region: str) -> Any:
    import boto3

    from emulator.server import CREDENTIALS

    return boto3.client(service, region_name=region, endpoint_url=aws.endpoint_url,
                        aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                        aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                        aws_session_token=CREDENTIALS["AWS_SESSION_TOKEN"])


def _dashboard_body() -> str:
    return json.dumps({"widgets": [{"type": "text", "x": 0, "y": 0, "width": 6, "height": 2, "properties": {"markdown": "hi"}}]})


def test_a_dashboard_put_in_one_region_is_listed_in_another(aws, cloudwatch):
    # Given
    name = unique("dashboard")
    cloudwatch.put_dashboard(DashboardName=name, DashboardBody=_dashboard_body())
    # When
    listed = _in_region(aws, "cloudwatch", "eu-west-1").list_dashboards(DashboardNamePrefix=name)["DashboardEntries"]
    # Then
    assert [(d["DashboardName"], d["DashboardArn"]) for d in listed] == [
        (name, f"arn:aws:cloudwatch::123456789012:dashboard/{name}")]


def test_a_second_regions_stack_creating_a_dashboard_name_in_use_fails_and_rolls_back(aws, cloudwatch):
    # Given: the name taken in us-east-1; a stack in eu-west-1 that names a dashboard the same, deployed
    # as `cdk deploy` deploys (a change set, then ExecuteChangeSet)
    name = unique("dashboard")
    cloudwatch.put_dashboard(DashboardName=name, DashboardBody=_dashboard_body())
    template = {"Resources": {"Dashboard": {"Type": "AWS::CloudWatch::Dashboard",
                                            "Properties": {"DashboardName": name, "DashboardBody": _dashboard_body()}}}}
    cfn = _in_region(aws, "cloudformation", "eu-west-1")
    stack = unique("SecondRegionStack")
    cfn.create_change_set(StackName=stack, ChangeSetName="cdk-deploy-change-set", ChangeSetType="CREATE",
                          TemplateBody=json.dumps(template))
    # When
    cfn.execute_change_set(StackName=stack, ChangeSetName="cdk-deploy-change-set")
    # Then: as CloudFormation reports a dashboard name in use (CREATE_FAILED "Dashboard '<name>' already
    # exists"), the new stack rolled back, and the account's dashboard is untouched
    [described] = cfn.describe_stacks(StackName=stack)["Stacks"]
    assert described["StackStatus"] == "ROLLBACK_COMPLETE"
    failed = [(e["LogicalResourceId"], e["ResourceStatusReason"]) for e in cfn.describe_stack_events(StackName=stack)["StackEvents"]
              if e["ResourceStatus"] == "CREATE_FAILED"]
    assert failed == [("Dashboard", f"Dashboard '{name}' already exists")]
    assert cloudwatch.get_dashboard(DashboardName=name)["DashboardBody"] == _dashboard_body()

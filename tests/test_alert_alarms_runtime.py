"""Alerts raised and resolved by their CloudWatch alarms: the event, the conditional updates, the starts.

The events are the documented "CloudWatch Alarm State Change" shape
(https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html,
tests/events/alarm_state_change.json). The handler runs against moto's DynamoDB (the table with its
alarm-name index), Step Functions and Secrets Manager, with the Slack stand-in taking follow-ups.
"""

from __future__ import annotations

import copy
import itertools
import json
from datetime import datetime, timezone
from pathlib import Path

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from emulator.slack import SlackStandIn
from patterns_common.alert_executions import execution_name
from tests.lambda_loader import load_lambda_module
from tests.test_alert_actions_runtime import create_pace_table, idle_pace
from tests.test_alert_notification_runtime import FakeLambdaContext

SAMPLE = json.loads((Path(__file__).parent / "events" / "alarm_state_change.json").read_text())
WEBHOOK_SECRET = "alert-notifier/slack-webhook"
ALARM = "db-cpu-high"


_seconds = itertools.count(1)


def alarm_event(
    state: str = "ALARM", *, alarm: str = ALARM, at: str | None = None, event_id: str = "e-1", previous: str = "OK"
) -> dict:
    """A state change of ``alarm`` from ``previous``; each without ``at`` at a later second (its execution name is new)."""
    if at is None:
        second = next(_seconds)
        at = f"2026-11-24T12:{second // 60:02d}:{second % 60:02d}.123+0000"
    event = copy.deepcopy(SAMPLE)
    event["id"] = event_id
    event["resources"] = [f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{alarm}"]
    event["detail"]["alarmName"] = alarm
    event["detail"]["state"].update(value=state, timestamp=at)
    event["detail"]["previousState"]["value"] = previous
    return event


@pytest.fixture(scope="module")
def module_aws():
    with SlackStandIn() as slack, pytest.MonkeyPatch.context() as env, mock_aws():
        boto3.client("dynamodb").create_table(
            TableName="alerts",
            KeySchema=[{"AttributeName": "alert_id", "KeyType": "HASH"}],
            AttributeDefinitions=[
                {"AttributeName": "alert_id", "AttributeType": "S"},
                {"AttributeName": "alarm_name", "AttributeType": "S"},
            ],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "AlarmName",
                    "KeySchema": [{"AttributeName": "alarm_name", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        machine = boto3.client("stepfunctions").create_state_machine(
            name="alerts",
            definition=json.dumps({"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 3600, "End": True}}}),
            roleArn="arn:aws:iam::123456789012:role/machine",
        )["stateMachineArn"]
        boto3.client("secretsmanager").create_secret(Name=WEBHOOK_SECRET, SecretString=slack.url)
        env.setenv("ALERT_TABLE_NAME", "alerts")
        env.setenv("ALARM_INDEX_NAME", "AlarmName")
        env.setenv("STATE_MACHINE_ARN", machine)
        env.setenv("SLACK_WEBHOOK_SECRET_NAME", WEBHOOK_SECRET)
        create_pace_table(env)
        parameters.clear_caches()
        yield boto3.resource("dynamodb").Table("alerts"), slack, load_lambda_module("alert_alarms", "handler"), machine
    parameters.clear_caches()


@pytest.fixture
def table(module_aws):
    table, slack, handler, machine = module_aws
    for key in table.scan(ProjectionExpression="alert_id")["Items"]:
        table.delete_item(Key=key)
    slack.reset()
    idle_pace()
    sfn = boto3.client("stepfunctions")
    for execution in sfn.list_executions(stateMachineArn=machine)["executions"]:
        if execution["status"] == "RUNNING":
            sfn.stop_execution(executionArn=execution["executionArn"])
    return table


@pytest.fixture
def slack(module_aws, table):
    return module_aws[1]


def deliver(module_aws, event: dict) -> dict:
    return module_aws[2].lambda_handler(event, FakeLambdaContext())


def executions(module_aws) -> list[dict]:
    """Executions started since the test began (earlier tests' were stopped by the fixture)."""
    found = boto3.client("stepfunctions").list_executions(stateMachineArn=module_aws[3])["executions"]
    return [e for e in found if e["status"] == "RUNNING"]


def put_alert(table, alert_id: str = "db-1", **fields) -> dict:
    item = {"alert_id": alert_id, "alarm_name": ALARM, "user_accounts": ["U0123ABCD"], "notification_count": 3, **fields}
    table.put_item(Item=item)
    return item


def get(table, alert_id: str = "db-1") -> dict:
    return table.get_item(Key={"alert_id": alert_id}, ConsistentRead=True)["Item"]


def test_alarm_raises_a_new_occurrence_and_starts_its_escalation_at_once(module_aws, table, slack):
    # Given: an alert acknowledged earlier
    put_alert(table, status="acknowledged", acknowledged_by="U9", acknowledged_at="2026-11-24T10:00:00Z")
    # When
    result = deliver(module_aws, alarm_event("ALARM", at="2026-11-24T11:40:05.123+0000"))
    # Then: active again, the earlier occurrence's acknowledgement cleared, one execution started
    item = get(table)
    assert item["status"] == "active" and "acknowledged_by" not in item and "acknowledged_at" not in item
    assert item["alarm_state_at"] == "2026-11-24T11:40:05.123+0000" and item["raised_at"].endswith("Z")
    [execution] = executions(module_aws)
    described = boto3.client("stepfunctions").describe_execution(executionArn=execution["executionArn"])
    assert json.loads(described["input"]) == {"alert_id": "db-1"}
    assert execution["name"] == execution_name("db-1", datetime(2026, 11, 24, 11, 40, 5, tzinfo=timezone.utc))
    assert result["applied"] == ["db-1"] and slack.posts == []


def test_a_redelivered_alarm_event_starts_no_second_escalation_and_undoes_no_acknowledgement(module_aws, table):
    # Given: the alarm raised the alert, then someone acknowledged it
    put_alert(table)
    event = alarm_event("ALARM")
    deliver(module_aws, event)
    table.update_item(
        Key={"alert_id": "db-1"},
        UpdateExpression="SET #s = :a, acknowledged_by = :by",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":a": "acknowledged", ":by": "U0123ABCD"},
    )
    # When: EventBridge delivers the same change again (and once more as a new event of the same change)
    deliver(module_aws, event)
    deliver(module_aws, {**event, "id": "e-2"})
    # Then
    assert len(executions(module_aws)) == 1
    assert get(table)["status"] == "acknowledged" and get(table)["acknowledged_by"] == "U0123ABCD"


def test_a_redelivery_starts_the_escalation_if_the_first_delivery_saved_the_item_but_never_started_it(module_aws, table):
    # Given: the item already holds this change (the first attempt failed after its update)
    put_alert(table, status="active", alarm_state_at="2026-11-24T11:20:05.123+0000")
    # When
    deliver(module_aws, alarm_event("ALARM", at="2026-11-24T11:20:05.123+0000"))
    # Then
    assert len(executions(module_aws)) == 1


def test_an_older_alarm_change_delivered_late_changes_nothing(module_aws, table):
    before = put_alert(table, status="resolved", alarm_state_at="2026-11-24T11:50:00.000+0000")
    deliver(module_aws, alarm_event("ALARM", at="2026-11-24T11:30:05.123+0000"))
    assert (get(table)["status"], get(table)["alarm_state_at"]) == (before["status"], before["alarm_state_at"])
    assert "raised_at" not in get(table) and executions(module_aws) == []


def test_ok_resolves_an_active_or_acknowledged_alert_and_says_so_in_the_channel(module_aws, table, slack):
    # Given
    put_alert(table, "db-1", status="active")
    put_alert(table, "db-2", status="acknowledged", acknowledged_by="U9", acknowledged_at="2026-11-24T13:41:00Z")
    # When
    result = deliver(module_aws, alarm_event("OK", at="2026-11-24T13:45:00.000+0000"))
    # Then
    assert result["applied"] == ["db-1", "db-2"]
    for alert_id in ("db-1", "db-2"):
        item = get(table, alert_id)
        assert item["status"] == "resolved" and item["resolved_by"] == f"CloudWatch alarm {ALARM}"
    assert get(table, "db-2")["acknowledged_by"] == "U9"
    texts = sorted(post.body["text"] for post in slack.delivered)
    assert texts == [
        f"Alert {alert_id} was resolved by CloudWatch alarm {ALARM} at {get(table, alert_id)['resolved_at']}."
        for alert_id in ("db-1", "db-2")
    ]
    assert executions(module_aws) == []


def test_ok_on_an_alert_already_resolved_by_a_person_keeps_who_resolved_it(module_aws, table, slack):
    before = put_alert(table, status="resolved", resolved_by="U9", resolved_at="2026-11-24T13:41:00Z")
    deliver(module_aws, alarm_event("OK", at="2026-11-24T13:45:00.000+0000"))
    assert get(table)["resolved_by"] == before["resolved_by"] and slack.posts == []


def test_insufficient_data_changes_nothing(module_aws, table, slack):
    before = put_alert(table, status="active")
    result = deliver(module_aws, alarm_event("INSUFFICIENT_DATA"))
    assert result["applied"] == [] and get(table)["status"] == before["status"] and "alarm_state_at" not in get(table)
    assert executions(module_aws) == [] and slack.posts == []


def test_an_alarm_that_no_alert_names_is_ignored(module_aws, table, slack):
    put_alert(table)
    result = deliver(module_aws, alarm_event("ALARM", alarm="some-other-alarm"))
    assert result == {"alarm_name": "some-other-alarm", "state": "ALARM", "alerts": [], "applied": []}
    assert "alarm_state_at" not in get(table) and executions(module_aws) == []


def test_every_alert_naming_the_alarm_is_raised(module_aws, table):
    for n in range(3):
        put_alert(table, f"db-{n}", status="resolved")
    put_alert(table, "web-1", alarm_name="web-5xx", status="resolved")
    deliver(module_aws, alarm_event("ALARM"))
    assert sorted(json.loads(boto3.client("stepfunctions").describe_execution(executionArn=e["executionArn"])["input"])["alert_id"]
                  for e in executions(module_aws)) == ["db-0", "db-1", "db-2"]
    assert get(table, "web-1")["status"] == "resolved"


@pytest.mark.parametrize(
    "event",
    [
        {"detail-type": "Scheduled Event", "detail": {}},
        {**SAMPLE, "detail": {**SAMPLE["detail"], "state": {"value": "ALARM"}}},
        {**SAMPLE, "detail": {**SAMPLE["detail"], "state": {"value": "ALARM", "timestamp": "yesterday"}}},
    ],
    ids=["not-an-alarm-event", "no-timestamp", "bad-timestamp"],
)
def test_an_event_that_is_not_a_readable_alarm_change_is_ignored(module_aws, table, event):
    put_alert(table, alarm_name=SAMPLE["detail"]["alarmName"])
    assert "ignored" in deliver(module_aws, event)
    assert executions(module_aws) == []


# -- the alarm's states as CloudWatch moves them (docs/alert-lifecycle.md, "Alarm state changes") ---
# CloudWatch's three states; a new alarm starts in INSUFFICIENT_DATA, and with the default
# TreatMissingData (missing) a gap in the metric moves it there
# (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/AlarmThatSendsEmail.html#alarms-and-missing-data).
ACKED = {"status": "acknowledged", "acknowledged_by": "U9", "acknowledged_at": "2026-11-24T10:00:00Z",
         "alarm_state": "ALARM", "alarm_state_at": "2026-11-24T09:59:00.000+0000", "raised_at": "2026-11-24T09:59:01Z"}
RESOLVED_BY_ALARM = {"status": "resolved", "resolved_by": f"CloudWatch alarm {ALARM}", "resolved_at": "2026-11-24T10:30:00Z",
                     "alarm_state": "OK", "alarm_state_at": "2026-11-24T10:29:59.000+0000"}


@pytest.mark.parametrize(
    "previous, state, before, raised, resolved",
    [
        ("OK", "ALARM", RESOLVED_BY_ALARM, True, False),
        ("OK", "ALARM", ACKED, True, False),  # the OK between was never applied: the occurrence is over anyway
        ("INSUFFICIENT_DATA", "ALARM", ACKED, False, False),
        ("INSUFFICIENT_DATA", "ALARM", RESOLVED_BY_ALARM, True, False),
        ("INSUFFICIENT_DATA", "ALARM", {"status": "resolved"}, True, False),  # the alarm's first ALARM
        ("ALARM", "ALARM", ACKED, False, False),
        ("ALARM", "OK", ACKED, False, True),
        ("INSUFFICIENT_DATA", "OK", ACKED, False, True),
        ("OK", "OK", RESOLVED_BY_ALARM, False, False),
        ("ALARM", "INSUFFICIENT_DATA", ACKED, False, False),
        ("OK", "INSUFFICIENT_DATA", RESOLVED_BY_ALARM, False, False),
        ("INSUFFICIENT_DATA", "INSUFFICIENT_DATA", ACKED, False, False),
    ],
    ids=["ok-alarm", "ok-alarm-ok-lost", "insufficient-alarm-within", "insufficient-alarm-after-ok",
         "insufficient-alarm-first", "alarm-alarm", "alarm-ok", "insufficient-ok", "ok-ok", "alarm-insufficient",
         "ok-insufficient", "insufficient-insufficient"],
)
def test_each_alarm_state_change_does_what_the_lifecycle_table_says(module_aws, table, slack, previous, state, before,
                                                                    raised, resolved):
    # Given
    put_alert(table, **before)
    # When
    deliver(module_aws, alarm_event(state, previous=previous))  # later than the item's last change
    # Then
    item = get(table)
    if raised:
        assert item["status"] == "active" and "acknowledged_by" not in item and item["alarm_state"] == "ALARM"
        [execution] = executions(module_aws)
        assert item["escalation_execution_arn"] == execution["executionArn"]
    elif resolved:
        assert item["status"] == "resolved" and item["resolved_by"] == f"CloudWatch alarm {ALARM}"
        assert item.get("acknowledged_by") == before.get("acknowledged_by")  # who acknowledged it stays on record
        assert executions(module_aws) == [] and len(slack.delivered) == 1
    else:
        kept = [k for k in before if k != "alarm_state_at"]  # (a later OK is recorded as the alarm's latest change)
        assert {k: item.get(k) for k in kept} == {k: before[k] for k in kept}  # the acknowledgement kept
        assert executions(module_aws) == [] and slack.posts == []


def test_alarm_insufficient_data_alarm_after_an_acknowledgement_sends_nothing(module_aws, table, slack):
    # Given: the alarm raised the alert and someone acknowledged it
    put_alert(table, status="resolved")
    deliver(module_aws, alarm_event("ALARM", previous="OK", at="2026-11-24T14:00:00.000+0000"))
    table.update_item(Key={"alert_id": "db-1"}, UpdateExpression="SET #s = :a, acknowledged_by = :by",
                      ExpressionAttributeNames={"#s": "status"}, ExpressionAttributeValues={":a": "acknowledged", ":by": "U9"})
    [first] = executions(module_aws)
    # When: a gap in the metric (ALARM -> INSUFFICIENT_DATA; the rule does not deliver it), then ALARM again
    deliver(module_aws, alarm_event("ALARM", previous="INSUFFICIENT_DATA", at="2026-11-24T14:05:00.000+0000"))
    # Then: still acknowledged, no new execution, nothing posted
    assert get(table)["status"] == "acknowledged" and get(table)["acknowledged_by"] == "U9"
    assert executions(module_aws) == [first] and slack.posts == []


def test_a_re_raise_hands_the_claim_to_the_new_execution_and_stops_the_earlier_one(module_aws, table):
    # Given: the alarm raised the alert (its execution holds the claim), then went OK
    put_alert(table, status="resolved")
    deliver(module_aws, alarm_event("ALARM", previous="OK", at="2026-11-24T15:00:00.000+0000"))
    [earlier] = executions(module_aws)
    deliver(module_aws, alarm_event("OK", previous="ALARM", at="2026-11-24T15:01:40.000+0000"))
    # When: it enters ALARM again while the earlier execution still runs (waits between rounds)
    deliver(module_aws, alarm_event("ALARM", previous="OK", at="2026-11-24T15:02:30.000+0000"))
    # Then: the claim names the new execution, written in the raise itself; the earlier one is stopped
    [new] = executions(module_aws)
    assert new["executionArn"] != earlier["executionArn"]
    assert get(table)["escalation_execution_arn"] == new["executionArn"]
    stopped = boto3.client("stepfunctions").describe_execution(executionArn=earlier["executionArn"])
    assert stopped["status"] == "ABORTED"


# -- reading the event (pure) ----------------------------------------------------------------------


@pytest.fixture
def alarms_logic():
    return load_lambda_module("alert_alarms", "alert_alarms_logic")


def test_the_documented_event_reads_as_the_alarm_its_state_and_when_it_entered_it(alarms_logic):
    # The sample is the "CloudWatch Alarm State Change" event of the CloudWatch documentation
    # (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html).
    change = alarms_logic.read_alarm_change(SAMPLE)
    assert change == alarms_logic.AlarmChange(
        "ServerCpuTooHigh",
        "ALARM",
        "2019-10-02T17:04:40.989+0000",
        datetime(2019, 10, 2, 17, 4, 40, 989_000, tzinfo=timezone.utc),
        "OK",  # the sample's previousState
    )


@pytest.mark.parametrize(
    "state, previous, reopens",
    [("ALARM", "OK", True), ("ALARM", "INSUFFICIENT_DATA", False), ("ALARM", None, False), ("OK", "OK", False)],
)
def test_only_alarm_from_ok_reopens_whatever_the_item_says(alarms_logic, state, previous, reopens):
    # docs/alert-lifecycle.md (Alarm state changes): OK -> ALARM raises a new occurrence even if the OK
    # between was never applied; from INSUFFICIENT_DATA (or an event without previousState) the item decides
    event = alarm_event(state, previous=previous or "OK")
    if previous is None:
        del event["detail"]["previousState"]
    change = alarms_logic.read_alarm_change(event)
    assert (change.previous_state, change.reopens) == (previous, reopens)


@pytest.mark.parametrize("value", [7, None, ["OK"], {"value": "OK"}])
def test_a_previous_state_that_names_no_state_reads_as_unknown_so_the_item_decides(alarms_logic, value):
    # CloudWatch writes previousState.value as a state's name, a string
    # (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html):
    # anything else is read as an event without one
    event = alarm_event("ALARM")
    event["detail"]["previousState"]["value"] = value
    change = alarms_logic.read_alarm_change(event)
    assert (change.previous_state, change.reopens) == (None, False)


@pytest.mark.parametrize("state, effect", [("ALARM", "raise"), ("OK", "resolve"), ("INSUFFICIENT_DATA", None)])
def test_alarm_raises_ok_resolves_and_insufficient_data_does_nothing(alarms_logic, state, effect):
    assert alarms_logic.read_alarm_change(alarm_event(state)).effect == effect


def test_a_state_timestamp_in_iso_form_with_an_offset_is_read_too(alarms_logic):
    event = alarm_event(at="2026-11-24T12:00:05+01:00")
    assert alarms_logic.read_alarm_change(event).changed_at == datetime(2026, 11, 24, 11, 0, 5, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    "change, message",
    [
        # Another CloudWatch event about the same alarm, with the same detail: not a state change.
        ({"detail-type": "CloudWatch Alarm Configuration Change"}, "not a CloudWatch Alarm State Change event"),
        ({"detail": ["not", "a", "mapping"]}, "not a CloudWatch Alarm State Change event"),
        ({"detail": {**SAMPLE["detail"], "alarmName": ""}}, "the event names no alarm or state"),
        ({"detail": {**SAMPLE["detail"], "alarmName": 7}}, "the event names no alarm or state"),
        ({"detail": {**SAMPLE["detail"], "state": "ALARM"}}, "the event names no alarm or state"),
        ({"detail": {**SAMPLE["detail"], "state": {"value": "ALARM"}}}, "the event's state has no value or timestamp"),
        ({"detail": {**SAMPLE["detail"], "state": {"timestamp": "2026-11-24T12:00:05.000+0000"}}}, "the event's state has no value or timestamp"),
        (
            {"detail": {**SAMPLE["detail"], "state": {"value": "OK", "timestamp": "yesterday"}}},
            "the state timestamp 'yesterday' is not a time",
        ),
        (
            {"detail": {**SAMPLE["detail"], "state": {"value": "OK", "timestamp": "2026-11-24T12:00:05"}}},
            "the state timestamp '2026-11-24T12:00:05' has no time zone",
        ),
    ],
)
def test_an_event_that_is_not_a_readable_state_change_is_refused_saying_why(alarms_logic, change, message):
    with pytest.raises(alarms_logic.InvalidAlarmEvent) as raised:
        alarms_logic.read_alarm_change({**SAMPLE, **change})
    assert str(raised.value) == message


@pytest.mark.parametrize("event", [None, ["CloudWatch Alarm State Change"], "CloudWatch Alarm State Change"])
def test_an_event_that_is_not_an_object_is_refused_not_a_crash(alarms_logic, event):
    with pytest.raises(alarms_logic.InvalidAlarmEvent, match="^not a CloudWatch Alarm State Change event$"):
        alarms_logic.read_alarm_change(event)


def test_only_an_item_holding_this_very_change_makes_a_refusal_a_redelivery(alarms_logic):
    change = alarms_logic.read_alarm_change(SAMPLE)
    assert alarms_logic.is_redelivery({"alarm_state_at": "2019-10-02T17:04:40.989+0000"}, change)
    assert not alarms_logic.is_redelivery({"alarm_state_at": "2019-10-02T17:04:41.000+0000"}, change)
    assert not alarms_logic.is_redelivery({}, change)
    assert not alarms_logic.is_redelivery(None, change)


# -- the alarm's conditional writes, evaluated by DynamoDB (moto) ---------------------------------

STAMP = "2026-11-24T12:00:05.123+0000"
OCCURRENCE = {"acknowledged_by": "U9", "acknowledged_at": "2026-11-24T11:00:00Z", "resolved_by": "U9", "resolved_at": "2026-11-24T11:30:00Z"}


def _applied(table, update) -> bool:
    try:
        table.update_item(**update)
    except table.meta.client.exceptions.ConditionalCheckFailedException:
        return False
    return True


EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:AlertNotification:db-1-20261124T120005123"
CLAIM_EXPIRES_AT = 1_764_000_000


def _raise(alert_id: str = "db-1", *, reopen: bool = True) -> dict:
    from patterns_common.alert_status import raise_update

    return raise_update(alert_id, state_at=STAMP, now="2026-11-24T12:00:06Z", execution_arn=EXECUTION,
                        claim_expires_at=CLAIM_EXPIRES_AT, reopen=reopen)


@pytest.mark.parametrize(
    "last_applied, alarm_state, reopen, applies",
    [
        (None, None, True, True),
        ("2026-11-24T12:00:05.122+0000", "OK", True, True),
        (STAMP, "OK", True, False),
        ("2026-11-24T12:00:05.124+0000", "OK", True, False),
        # From INSUFFICIENT_DATA (no reopen): only if the alarm's last occurrence ended, or it had none
        ("2026-11-24T12:00:05.122+0000", "OK", False, True),
        ("2026-11-24T12:00:05.122+0000", None, False, True),
        ("2026-11-24T12:00:05.122+0000", "ALARM", False, False),
        ("2026-11-24T12:00:05.122+0000", "ALARM", True, True),  # from OK: the OK between was lost
    ],
    ids=["never", "older", "same-change-again", "newer", "ended", "first-alarm", "within-occurrence", "ok-lost"],
)
def test_an_alarm_raises_an_alert_only_for_a_change_newer_than_the_last_applied(table, last_applied, alarm_state,
                                                                                reopen, applies):
    # docs/alert-lifecycle.md: the lifecycle and the alarm state change tables
    before = {"alert_id": "db-1", "alarm_name": ALARM, "status": "resolved", **OCCURRENCE,
              "escalation_execution_arn": "arn:aws:states:us-east-1:123456789012:execution:AlertNotification:earlier",
              "escalation_claim_expires_at": 1}
    if last_applied:
        before["alarm_state_at"] = last_applied
    if alarm_state:
        before["alarm_state"] = alarm_state
    table.put_item(Item=before)
    # When
    applied = _applied(table, _raise(reopen=reopen))
    # Then: a new occurrence: active, raised now, the earlier occurrence's people cleared, and the
    # escalation claim handed to the execution about to start in the same write
    assert applied == applies
    if applies:
        kept = {k: v for k, v in before.items() if k not in OCCURRENCE}
        assert get(table) == {**kept, "status": "active", "raised_at": "2026-11-24T12:00:06Z", "alarm_state": "ALARM",
                              "alarm_state_at": STAMP, "escalation_execution_arn": EXECUTION,
                              "escalation_claim_expires_at": CLAIM_EXPIRES_AT}
    else:
        assert get(table) == before


@pytest.mark.parametrize(
    "status, applies",
    [(None, True), ("active", True), ("acknowledged", True), ("resolved", False)],
)
def test_ok_resolves_only_an_active_or_acknowledged_alert(table, status, applies):
    from patterns_common.alert_status import resolve_by_alarm_update

    before = {"alert_id": "db-1", "alarm_name": ALARM, "alarm_state_at": "2026-11-24T12:00:00.000+0000"}
    if status:
        before["status"] = status
    table.put_item(Item=before)
    # When
    applied = _applied(table, resolve_by_alarm_update("db-1", alarm_name=ALARM, state_at=STAMP, now="2026-11-24T12:00:06Z"))
    # Then
    assert applied == applies
    expected = {
        **before,
        "status": "resolved",
        "resolved_by": f"CloudWatch alarm {ALARM}",
        "resolved_at": "2026-11-24T12:00:06Z",
        "alarm_state": "OK",
        "alarm_state_at": STAMP,
    }
    assert get(table) == (expected if applies else before)


@pytest.mark.parametrize(
    "last_applied, applies",
    [(None, True), ("2026-11-24T12:00:05.122+0000", True), (STAMP, False), ("2026-11-24T12:00:05.124+0000", False)],
    ids=["never", "older", "same-change-again", "newer"],
)
def test_ok_resolves_only_for_a_change_newer_than_the_last_applied(table, last_applied, applies):
    from patterns_common.alert_status import resolve_by_alarm_update

    before = {"alert_id": "db-1", "status": "active"}
    if last_applied:
        before["alarm_state_at"] = last_applied
    table.put_item(Item=before)
    assert _applied(table, resolve_by_alarm_update("db-1", alarm_name=ALARM, state_at=STAMP, now="T")) == applies
    assert (get(table)["status"] == "resolved") == applies and (get(table) == before) != applies


def test_an_alarm_change_for_a_deleted_alert_writes_nothing(table):
    from patterns_common.alert_status import resolve_by_alarm_update

    assert not _applied(table, _raise("gone"))
    assert not _applied(table, resolve_by_alarm_update("gone", alarm_name=ALARM, state_at=STAMP, now="T"))
    assert table.get_item(Key={"alert_id": "gone"}).get("Item") is None

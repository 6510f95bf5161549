"""On-call schedules in the template: the table, its output, what Find Who Is On Call may do, and schedules checked at synth."""

from __future__ import annotations

import json
import zoneinfo

import pytest
from aws_cdk import App, Stack
from aws_cdk.assertions import Match, Template

from stacks.alert_notification.construct import AlertNotification
from stacks.common.team_function import InvalidProp
from tests.app_config import app_config
from tests.test_alert_notification_infrastructure import function_id, logical_id, statements_for, synthesize

PRIMARY = {"schedule_id": "primary", "time_zone": "Europe/Berlin",
           "layers": [{"members": ["U0AAAAAA1", "U0BBBBBB2"], "start": "2026-11-02T09:00", "shift": "P7D"}]}


@pytest.fixture(scope="module")
def template() -> Template:
    return synthesize(app_config())


def test_the_stack_publishes_the_on_call_table_keyed_by_schedule_id_and_retained(template):
    template.has_output("OnCallTableName", {"Value": {"Ref": "OnCallTable"}})
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "Properties": Match.object_like({"KeySchema": [{"AttributeName": "schedule_id", "KeyType": "HASH"}]}),
            "DeletionPolicy": "Retain",
        },
    )


def test_find_who_is_on_call_only_reads_schedules_and_the_link_key(template):
    granted = statements_for(template, "FindWhoIsOnCall")
    assert granted["dynamodb:GetItem"] == [{"Fn::GetAtt": ["OnCallTable", "Arn"]}]
    assert set(granted) == {"dynamodb:GetItem", "secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"}
    function = template.to_json()["Resources"][function_id(template, "FindWhoIsOnCall")]
    assert function["Properties"]["Environment"]["Variables"]["ON_CALL_TABLE_NAME"] == {"Ref": "OnCallTable"}


def _alerts(schedules):
    stack = Stack(App(), "Team")
    return AlertNotification(stack, "Alerts", schedule="rate(1 hour)", slack_webhook_secret_name="team/slack",
                             schedules=schedules)


def test_declared_schedules_are_checked_at_synth_by_the_runtimes_code():
    _alerts([PRIMARY])  # accepted
    broken = {**PRIMARY, "layers": [{**PRIMARY["layers"][0], "shift": "P1M"}]}
    with pytest.raises(InvalidProp, match=r"^schedules\[1\]: schedule 'primary', layers\[0\]\.shift: must be an ISO 8601"):
        _alerts([{**PRIMARY, "schedule_id": "secondary"}, broken])
    with pytest.raises(InvalidProp, match=r"^schedules\[1\]: schedule 'primary' is declared twice"):
        _alerts([PRIMARY, PRIMARY])


@pytest.fixture
def machine_zones(tmp_path):
    """The test process's zone directory replaced by one holding only a made-up zone, as a build machine's
    database might differ from the package the functions read; put back afterwards."""
    from importlib import resources

    zone = tmp_path / "zoneinfo" / "Mars" / "Olympus_Mons"
    zone.parent.mkdir(parents=True)
    zone.write_bytes(resources.files("tzdata.zoneinfo").joinpath("UTC").read_bytes())
    searched = zoneinfo.TZPATH
    zoneinfo.reset_tzpath(to=[str(tmp_path / "zoneinfo")])
    zoneinfo.ZoneInfo.clear_cache()
    yield tmp_path / "zoneinfo"
    zoneinfo.reset_tzpath(to=searched)
    zoneinfo.ZoneInfo.clear_cache()


def test_synthesis_reads_zones_from_the_tzdata_the_layer_ships_not_the_machines_database(machine_zones):
    # Given: a machine whose database has a zone tzdata lacks, and lacks Europe/Berlin
    assert str(zoneinfo.ZoneInfo("Mars/Olympus_Mons").utcoffset(None)) == "0:00:00"
    # When / Then: synthesis refuses the machine's zone as the functions would (they read only tzdata)...
    mars = {**PRIMARY, "schedule_id": "mars", "time_zone": "Mars/Olympus_Mons"}
    with pytest.raises(InvalidProp, match=r"^schedules\[0\]: schedule 'mars', time_zone: 'Mars/Olympus_Mons' is not an IANA time zone"):
        _alerts([mars])
    # ... and accepts tzdata's Europe/Berlin, which the machine's database lacks
    _alerts([PRIMARY])
    # ... and leaves the process's own search path as it found it
    assert zoneinfo.TZPATH == (str(machine_zones),)


def test_the_action_endpoint_lists_schedules_and_writes_covers_on_the_on_call_table_only(template):
    # /oncall: Scan lists the schedules, GetItem and UpdateItem add a person's cover
    assert statements_for(template, "ActionsEndpointRole", table="OnCallTable") == {
        action: [{"Fn::GetAtt": ["OnCallTable", "Arn"]}] for action in ("dynamodb:Scan", "dynamodb:GetItem", "dynamodb:UpdateItem")
    }


def test_declared_schedules_are_a_custom_resource_whose_function_only_reads_puts_and_deletes_on_call_items():
    app = App()
    stack = Stack(app, "S")
    AlertNotification(stack, "A", schedule="rate(1 hour)", slack_webhook_secret_name="w", schedules=[PRIMARY])
    template = Template.from_stack(stack)
    [resource] = template.find_resources("Custom::DeclaredOnCallSchedules").values()
    assert json.loads(resource["Properties"]["Schedules"]) == [PRIMARY]
    assert resource["Properties"]["ServiceTimeout"] == "300"  # seconds, as CDK writes the Duration
    service_token = resource["Properties"]["ServiceToken"]["Fn::GetAtt"][0]
    assert template.to_json()["Resources"][service_token]["Properties"]["Runtime"].startswith("python")
    granted = statements_for(template, "DeclaredSchedules")
    # Its items and nothing else (GetItem: the runtime covers a put keeps); and it asks Handoff Notice
    # to arm the first notice.
    assert set(granted) == {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem", "lambda:InvokeFunction"}
    assert granted["dynamodb:GetItem"] == granted["dynamodb:PutItem"] == granted["dynamodb:DeleteItem"] \
        == [{"Fn::GetAtt": ["OnCallTable", "Arn"]}]
    assert granted["lambda:InvokeFunction"] == {"Fn::GetAtt": [function_id(template, "HandoffNotice"), "Arn"]}


def test_handoff_notice_creates_schedules_in_its_own_group_only_which_may_only_invoke_it():
    app = App()
    stack = Stack(app, "S", env={"account": "123456789012", "region": "us-east-1"})
    AlertNotification(stack, "A", schedule="rate(1 hour)", slack_webhook_secret_name="w")
    template = Template.from_stack(stack)
    handoff = function_id(template, "HandoffNotice")
    group = logical_id(template, "AWS::Scheduler::ScheduleGroup", "HandoffSchedules")
    [queue] = [key for key in template.find_resources("AWS::SQS::Queue") if "HandoffFailureQueue" in key]
    granted = statements_for(template, "HandoffNotice")
    # Schedules of its own group, any name (one per handoff): arn:...:schedule/<group>/<name>
    # (Service Authorization Reference, Amazon EventBridge Scheduler, resource type "schedule")
    assert granted["scheduler:CreateSchedule"] == {"Fn::Join": ["", [
        "arn:", {"Ref": "AWS::Partition"}, ":scheduler:us-east-1:123456789012:schedule/", {"Ref": group}, "/*"]]}
    assert granted["dynamodb:Scan"] == granted["dynamodb:GetItem"] == [{"Fn::GetAtt": ["OnCallTable", "Arn"]}]
    # Slack's pace item and the posted records, in the notifier's short-lived table
    pace = [{"Fn::GetAtt": [logical_id(template, "AWS::DynamoDB::Table", "IdempotencyTable"), "Arn"]}]
    assert granted["dynamodb:UpdateItem"] == granted["dynamodb:PutItem"] == granted["dynamodb:DeleteItem"] == pace
    # The on-failure destination (CDK's SqsDestination grants the send)
    assert granted["sqs:SendMessage"] == {"Fn::GetAtt": [queue, "Arn"]}
    assert set(granted) == {"scheduler:CreateSchedule", "iam:PassRole", "dynamodb:Scan", "dynamodb:GetItem",
                            "dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:DeleteItem",
                            "sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl",
                            "secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"}
    # The role Scheduler assumes (EventBridge Scheduler User Guide, "Set up the execution role") invokes it
    # and writes the schedules' dead-letter queue, nothing else.
    assert statements_for(template, "HandoffSchedulerRole") == {
        "lambda:InvokeFunction": {"Fn::GetAtt": [handoff, "Arn"]}, "sqs:SendMessage": {"Fn::GetAtt": [queue, "Arn"]}}


def test_handoff_notice_is_re_armed_hourly_and_fails_into_a_queue_the_status_topic_watches():
    app = App()
    stack = Stack(app, "S", env={"account": "123456789012", "region": "us-east-1"})
    alerts = AlertNotification(stack, "A", schedule="rate(1 hour)", slack_webhook_secret_name="w")
    template = Template.from_stack(stack)
    handoff = function_id(template, "HandoffNotice")
    group = logical_id(template, "AWS::Scheduler::ScheduleGroup", "HandoffSchedules")
    [queue] = [key for key in template.find_resources("AWS::SQS::Queue") if "HandoffFailureQueue" in key]
    role = logical_id(template, "AWS::IAM::Role", "HandoffSchedulerRole")
    # The re-arm: every hour, in UTC, invoking it with {} (EventBridge Scheduler User Guide, "Schedule types")
    [rearm] = template.find_resources("AWS::Scheduler::Schedule").values()
    assert rearm["Properties"] == {
        "Description": "Arms the handoff notices of the next two days, for schedules written by any means",
        "FlexibleTimeWindow": {"Mode": "OFF"}, "GroupName": {"Ref": group},
        "ScheduleExpression": "rate(1 hour)", "ScheduleExpressionTimezone": "UTC",
        "Target": {"Arn": {"Fn::GetAtt": [handoff, "Arn"]}, "RoleArn": {"Fn::GetAtt": [role, "Arn"]}, "Input": "{}",
                   "DeadLetterConfig": {"Arn": {"Fn::GetAtt": [queue, "Arn"]}}}}
    # Two retries, then the failure queue, as the app's other asynchronous functions
    [config] = [c["Properties"] for c in template.find_resources("AWS::Lambda::EventInvokeConfig").values()
                if c["Properties"]["FunctionName"] == {"Ref": handoff}]
    assert config["MaximumRetryAttempts"] == 2 and config["MaximumEventAgeInSeconds"] == 3600
    assert config["DestinationConfig"] == {"OnFailure": {"Destination": {"Fn::GetAtt": [queue, "Arn"]}}}
    # The queue is among those a monitoring construct alarms on (to the status topic)
    assert "HandoffNoticeFailed" in [failure.alarm_id for failure in alerts.failure_queues]

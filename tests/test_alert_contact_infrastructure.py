"""Contact's template: least privilege for the function that texts, calls and e-mails, and for the notifier arming it.

Synthesized with cdk-nag (synth fails on an unacknowledged finding) and with both channels on, as a
deployer names them: ``smsOriginationIdentity`` a phone number, ``alertEmailFrom`` an address.
"""

from __future__ import annotations

import json

import pytest
from aws_cdk.assertions import Template

from tests.app_config import app_config
from tests.test_alert_notification_infrastructure import function_id, logical_id, policy_statements, synthesize

PHONE = "+12065550100"
SENDER = "alerts@example.com"


@pytest.fixture(scope="module")
def template() -> Template:
    return synthesize(app_config(sms_origination_identity=PHONE, alert_email_from=SENDER))


def grants(template: Template, role_contains: str) -> set[tuple[str, str]]:
    """(action, resource as JSON) of every statement of a role but its log and X-Ray writes."""
    found = set()
    for statement in policy_statements(template, role_contains):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        found |= {(a, json.dumps(r, sort_keys=True)) for a in actions for r in resources if a.split(":")[0] not in ("logs", "xray")}
    return found


def _arn(service: str, resource: str) -> str:
    return json.dumps({"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, f":{service}:", {"Ref": "AWS::Region"}, ":",
                                         {"Ref": "AWS::AccountId"}, f":{resource}"]]}, sort_keys=True)


def test_contact_reads_the_alert_and_person_writes_codes_sends_from_its_identities_and_tells_the_channel(template):
    granted = grants(template, "AlertNotificationContactRole")
    table = lambda name: json.dumps({"Fn::GetAtt": [name, "Arn"]}, sort_keys=True)  # noqa: E731
    follow_up = json.dumps({"Fn::GetAtt": [function_id(template, "ActionsFollowUp"), "Arn"]}, sort_keys=True)
    secret = json.dumps({"Ref": logical_id(template, "AWS::SecretsManager::Secret", "SigningKey")}, sort_keys=True)
    queue = json.dumps({"Fn::GetAtt": [logical_id(template, "AWS::SQS::Queue", "ContactFailureQueue"), "Arn"]}, sort_keys=True)
    assert granted == {
        ("dynamodb:GetItem", table("AlertTable")), ("dynamodb:BatchGetItem", table("AlertTable")),
        ("dynamodb:GetItem", table("PeopleTable")), ("dynamodb:UpdateItem", table("PeopleTable")),
        ("secretsmanager:GetSecretValue", secret), ("secretsmanager:DescribeSecret", secret),
        ("lambda:InvokeFunction", follow_up),
        # Lambda's on-failure destination (what CDK's SqsDestination grants)
        *{(action, queue) for action in ("sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl")},
        # A number given as E.164: authorized on the number's ARN, whose id is not known at synth
        ("sms-voice:SendTextMessage", _arn("sms-voice", "phone-number/*")),
        ("sms-voice:SendVoiceMessage", _arn("sms-voice", "phone-number/*")),
        # The sender's identity, as an address or its domain
        ("ses:SendEmail", _arn("ses", f"identity/{SENDER}")), ("ses:SendEmail", _arn("ses", "identity/example.com")),
    }


def test_the_notifier_creates_schedules_in_the_contact_group_only_and_passes_only_its_role(template):
    granted = grants(template, "NotifyUserRole")
    group = logical_id(template, "AWS::Scheduler::ScheduleGroup", "ContactSchedules")
    role = logical_id(template, "AWS::IAM::Role", "ContactSchedulerRole")
    schedules = {action_resource for action_resource in granted if action_resource[0] == "scheduler:CreateSchedule"}
    [(_, resource)] = schedules
    assert group in resource and resource.endswith('/*"]]}')
    assert ("iam:PassRole", json.dumps({"Fn::GetAtt": [role, "Arn"]}, sort_keys=True)) in granted
    # Contact (a rule at minute 0) and the follow-up (a rule it could not arm is told to the channel)
    assert {resource for action, resource in granted if action == "lambda:InvokeFunction"} == {
        json.dumps({"Fn::GetAtt": [function_id(template, name), "Arn"]}, sort_keys=True)
        for name in ("AlertNotificationContactFunction", "ActionsFollowUp")}
    assert ("dynamodb:GetItem", json.dumps({"Fn::GetAtt": ["PeopleTable", "Arn"]}, sort_keys=True)) in granted
    assert {action for action, _ in granted if action.startswith(("scheduler:", "iam:", "sms-voice:", "ses:"))} == {
        "scheduler:CreateSchedule", "iam:PassRole"}


def test_the_scheduler_role_invokes_contact_and_dead_letters_to_its_failure_queue_only(template):
    granted = grants(template, "ContactSchedulerRole")
    queue = logical_id(template, "AWS::SQS::Queue", "ContactFailureQueue")
    assert granted == {
        ("lambda:InvokeFunction", json.dumps({"Fn::GetAtt": [function_id(template, "AlertNotificationContactFunction"), "Arn"]}, sort_keys=True)),
        ("sqs:SendMessage", json.dumps({"Fn::GetAtt": [queue, "Arn"]}, sort_keys=True)),
    }


def test_a_failed_contact_is_retried_twice_then_recorded_on_its_failure_queue(template):
    queue = logical_id(template, "AWS::SQS::Queue", "ContactFailureQueue")
    [config] = [c for c in template.find_resources("AWS::Lambda::EventInvokeConfig").values()
                if function_id(template, "AlertNotificationContactFunction") in json.dumps(c)]
    assert config["Properties"]["MaximumRetryAttempts"] == 2
    assert queue in json.dumps(config["Properties"]["DestinationConfig"]["OnFailure"])


def test_the_contact_failure_queue_has_its_alarm_on_the_status_topic(synthesized_app):
    monitoring = synthesized_app.templates["MonitoringStack"]["Resources"]
    [alarm] = [v["Properties"] for v in monitoring.values()
               if v["Type"] == "AWS::CloudWatch::Alarm" and v["Properties"].get("AlarmName") == "MonitoringStack-ContactAttemptFailed"]
    assert alarm["MetricName"] == "NumberOfMessagesSent" and "ContactFailureQueue" in json.dumps(alarm["Dimensions"])


def test_without_the_context_keys_contact_is_granted_no_channel(synthesized_app):
    # cdk.json names neither: the rules are told to the channel as not sent, and nothing is granted for them
    alert = json.dumps(synthesized_app.templates["AlertNotificationStack"])
    assert "sms-voice:" not in alert and "ses:SendEmail" not in alert

"""The SMS replies function in the AlertNotificationStack template: its subscription, its grants, its failures.

SNS invokes a subscribed function asynchronously (Lambda Developer Guide, "Invoking Lambda functions with
Amazon SNS notifications"), so Lambda's asynchronous retries and on-failure destination apply
("Configuring error handling for asynchronous invocation": two retries by default).
"""

from __future__ import annotations

import pytest
from aws_cdk import App
from aws_cdk.assertions import Match

from stacks.alert_notification.stack import AlertNotificationStack
from tests.app_config import app_config
from tests.test_alert_notification_infrastructure import function_id, logical_id, policy_statements, synthesize


def in_this_account(resource: str) -> dict:
    """The ARN of an End User Messaging ``resource`` in the stack's own account and region."""
    return {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":sms-voice:", {"Ref": "AWS::Region"}, ":",
                              {"Ref": "AWS::AccountId"}, f":{resource}"]]}


@pytest.fixture(scope="module")
def template():
    # cdk.json names no origination identity: texts are off, replies still act
    return synthesize(app_config())


def granted(template, role: str) -> dict[str, object]:
    """action -> resource of the role's statements, but its log and X-Ray writes."""
    found = {}
    for statement in policy_statements(template, role):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        found.update({action: statement["Resource"] for action in actions if action.split(":")[0] not in ("logs", "xray")})
    return found


def test_the_function_is_subscribed_to_the_replies_topic(template):
    topic = logical_id(template, "AWS::SNS::Topic", "SmsReplies")
    replies = function_id(template, "SmsRepliesFunction")
    queue = logical_id(template, "AWS::SQS::Queue", "SmsRepliesFailureQueue")
    # A text SNS cannot hand to the function (client-side errors: the function or its permission gone) is
    # kept on the failure queue (SNS Developer Guide, "Amazon SNS dead-letter queues (DLQs)")
    template.has_resource_properties("AWS::SNS::Subscription", {
        "Protocol": "lambda", "TopicArn": {"Ref": topic}, "Endpoint": {"Fn::GetAtt": [replies, "Arn"]},
        "RedrivePolicy": {"deadLetterTargetArn": {"Fn::GetAtt": [queue, "Arn"]}}})
    # ... which SNS may write, for this topic only
    template.has_resource_properties("AWS::SQS::QueuePolicy", {
        "Queues": [{"Ref": queue}],
        "PolicyDocument": {"Statement": Match.array_with([Match.object_like({
            "Action": "sqs:SendMessage", "Effect": "Allow", "Principal": {"Service": "sns.amazonaws.com"},
            "Condition": {"ArnEquals": {"aws:SourceArn": {"Ref": topic}}}})])}})
    # SNS may invoke it, from this topic only
    template.has_resource_properties("AWS::Lambda::Permission", {
        "Action": "lambda:InvokeFunction", "Principal": "sns.amazonaws.com",
        "FunctionName": {"Fn::GetAtt": [replies, "Arn"]}, "SourceArn": {"Ref": topic}})


def test_it_scans_people_updates_alerts_and_invokes_the_follow_up_only(template):
    people = logical_id(template, "AWS::DynamoDB::Table", "PeopleTable")
    statements = granted(template, "SmsRepliesFunctionRole")
    # What CDK's on-failure destination grants: writing the failure queue
    failures = {"Fn::GetAtt": [logical_id(template, "AWS::SQS::Queue", "SmsRepliesFailureQueue"), "Arn"]}
    for action in ("sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"):
        assert statements.pop(action) == failures
    assert statements == {
        "dynamodb:Scan": [{"Fn::GetAtt": [people, "Arn"]}],
        "dynamodb:UpdateItem": [{"Fn::GetAtt": ["AlertTable", "Arn"]}],
        "lambda:InvokeFunction": {"Fn::GetAtt": [function_id(template, "ActionsFollowUp"), "Arn"]},
    }
    # No kms: SNS delivers to a function decrypted; the topic's key is its publishers'. No texts without a number.
    variables = template.to_json()["Resources"][function_id(template, "SmsRepliesFunction")]["Properties"]["Environment"]["Variables"]
    assert "SMS_ORIGINATION_IDENTITY" not in variables
    assert variables["FOLLOW_UP_FUNCTION_NAME"] == {"Ref": function_id(template, "ActionsFollowUp")}


def test_a_failed_reply_is_retried_twice_then_kept_on_a_queue_the_monitoring_alarms_on(template):
    replies = function_id(template, "SmsRepliesFunction")
    queue = logical_id(template, "AWS::SQS::Queue", "SmsRepliesFailureQueue")
    template.has_resource_properties("AWS::Lambda::EventInvokeConfig", {
        "FunctionName": {"Ref": replies}, "MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 3600,
        "DestinationConfig": {"OnFailure": {"Destination": {"Fn::GetAtt": [queue, "Arn"]}}}})


def test_the_construct_lists_the_failure_queue_for_an_alarm():
    stack = AlertNotificationStack(App(), "AlertNotificationStack", config=app_config())
    assert "SmsReplyFailed" in [failure.alarm_id for failure in stack.failure_queues]


@pytest.mark.parametrize("identity, resource", [
    ("phone-0123456789abcdef0123456789abcdef", "phone-number/phone-0123456789abcdef0123456789abcdef"),
    ("pool-0123456789abcdef0123456789abcdef", "pool/pool-0123456789abcdef0123456789abcdef"),
    # A number's id is not known from the number: every number of the account, acknowledged for cdk-nag
    ("+12065550100", "phone-number/*"),
])
def test_answers_are_texted_from_the_origination_identity_only(identity, resource):
    template = synthesize(app_config(sms_origination_identity=identity))  # cdk-nag passes, or this raises
    statements = granted(template, "SmsRepliesFunctionRole")
    assert statements["sms-voice:SendTextMessage"] == in_this_account(resource)
    variables = template.to_json()["Resources"][function_id(template, "SmsRepliesFunction")]["Properties"]["Environment"]["Variables"]
    assert variables["SMS_ORIGINATION_IDENTITY"] == identity


def test_an_identity_given_as_an_arn_is_granted_as_it_is():
    arn = "arn:aws:sms-voice:eu-central-1:123456789012:pool/pool-0123456789abcdef0123456789abcdef"
    template = synthesize(app_config(sms_origination_identity=arn))
    assert granted(template, "SmsRepliesFunctionRole")["sms-voice:SendTextMessage"] == arn

"""The emulator's IAM policy evaluation and request resolution, as plain logic.

Expected decisions follow the IAM User Guide: "Policy evaluation logic" (an explicit Deny wins,
then any Allow, else an implicit deny), "IAM JSON policy elements" (Action and NotAction match
case-insensitively with ``*`` and ``?`` wildcards; Resource case-sensitively; condition keys
case-insensitively; a condition on a key the request lacks is false, except for a negated
operator), and the Service Authorization Reference for the resource each operation names.
"""

from __future__ import annotations

import json

import pytest

from emulator.iam.policy import ALLOW, ANY_RESOURCE, DENY, decide
from emulator.iam.requests import Check, Request, checks, s3_checks

TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/Alerts"


def policy(*statements: dict) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)})


def allow(action, resource="*", **more) -> dict:
    return {"Effect": "Allow", "Action": action, "Resource": resource, **more}


def deny(action, resource="*", **more) -> dict:
    return {"Effect": "Deny", "Action": action, "Resource": resource, **more}


def test_an_explicit_deny_wins_over_any_allow():
    documents = [policy(allow("dynamodb:*", TABLE)), policy(deny("dynamodb:DeleteItem", TABLE))]
    assert decide(documents, "dynamodb:GetItem", TABLE) == ALLOW
    assert decide(documents, "dynamodb:DeleteItem", TABLE) == DENY


def test_nothing_allowed_is_an_implicit_deny():
    assert decide([policy(allow("dynamodb:GetItem", TABLE))], "dynamodb:PutItem", TABLE) is None
    assert decide([], "dynamodb:GetItem", TABLE) is None


def test_actions_match_case_insensitively_with_wildcards_and_not_action():
    documents = [policy(allow("DynamoDB:get*", TABLE), {"Effect": "Allow", "NotAction": "s3:*", "Resource": "arn:aws:sqs:*"})]
    assert decide(documents, "dynamodb:GetItem", TABLE) == ALLOW
    assert decide(documents, "dynamodb:PutItem", TABLE) is None
    assert decide(documents, "sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:q") == ALLOW
    assert decide(documents, "s3:GetObject", "arn:aws:sqs:us-east-1:123456789012:q") is None


@pytest.mark.parametrize(("granted", "requested", "allowed"), [
    # a table's grant covers the table, not its indexes; the index form covers them
    (TABLE, TABLE, True),
    (TABLE, f"{TABLE}/index/AlarmName", False),
    (f"{TABLE}/index/*", f"{TABLE}/index/AlarmName", True),
    # a secret granted by name: Secrets Manager's six random characters after a hyphen
    ("arn:aws:secretsmanager:us-east-1:123456789012:secret:slack-webhook-??????",
     "arn:aws:secretsmanager:us-east-1:123456789012:secret:slack-webhook-AbC123", True),
    ("arn:aws:secretsmanager:us-east-1:123456789012:secret:slack-webhook-??????",
     "arn:aws:secretsmanager:us-east-1:123456789012:secret:slack-webhook-old-AbC123", False),
    # objects under a prefix, a wildcard in the middle
    ("arn:aws:s3:::jobs-bucket/jobs/*/result.json", "arn:aws:s3:::jobs-bucket/jobs/42/result.json", True),
    ("arn:aws:s3:::jobs-bucket/jobs/*/result.json", "arn:aws:s3:::jobs-bucket/jobs/42/context.json", False),
    # executions of one machine
    ("arn:aws:states:us-east-1:123456789012:execution:Alerts-AbC:*",
     "arn:aws:states:us-east-1:123456789012:execution:Alerts-AbC:run-1", True),
    # resources match case-sensitively
    (TABLE, TABLE.lower(), False),
])
def test_resources_match_the_arn_forms_the_app_grants(granted, requested, allowed):
    decision = decide([policy(allow("*", granted))], "dynamodb:GetItem", requested)
    assert (decision == ALLOW) is allowed


def test_an_operation_whose_resource_is_not_resolved_needs_the_action_allowed_on_some_resource():
    documents = [policy(allow("kms:Decrypt", "arn:aws:kms:us-east-1:123456789012:key/k"))]
    assert decide(documents, "kms:Decrypt", ANY_RESOURCE) == ALLOW
    assert decide(documents, "kms:Encrypt", ANY_RESOURCE) is None


def test_conditions_as_the_app_writes_them():
    machine = "arn:aws:states:us-east-1:123456789012:stateMachine:Alerts"
    trust = policy({"Effect": "Allow", "Principal": {"Service": "states.amazonaws.com"}, "Action": "sts:AssumeRole",
                    "Condition": {"ArnLike": {"aws:SourceArn": "arn:aws:states:us-east-1:123456789012:stateMachine:*"},
                                  "StringEquals": {"aws:SourceAccount": "123456789012"}}})
    states = ("Service", "states.amazonaws.com")
    assert decide([trust], "sts:AssumeRole", None, {"aws:SourceArn": machine, "aws:SourceAccount": "123456789012"}, states) == ALLOW
    # condition keys are case-insensitive (Lambda writes AWS:SourceArn)
    assert decide([trust], "sts:AssumeRole", None, {"AWS:SOURCEARN": machine, "aws:sourceaccount": "123456789012"}, states) == ALLOW
    assert decide([trust], "sts:AssumeRole", None, {"aws:SourceArn": machine, "aws:SourceAccount": "999999999999"}, states) is None
    assert decide([trust], "sts:AssumeRole", None, {"aws:SourceAccount": "123456789012"}, states) is None  # key missing
    assert decide([trust], "sts:AssumeRole", None, {"aws:SourceArn": machine, "aws:SourceAccount": "123456789012"},
                  ("Service", "lambda.amazonaws.com")) is None


def test_a_secure_transport_deny_applies_only_to_plain_http():
    bucket = policy({"Effect": "Deny", "Principal": {"AWS": "*"}, "Action": "s3:*", "Resource": "arn:aws:s3:::b/*",
                     "Condition": {"Bool": {"aws:SecureTransport": "false"}}})
    role = ("AWS", "arn:aws:sts::123456789012:assumed-role/r/s")
    assert decide([bucket], "s3:GetObject", "arn:aws:s3:::b/k", {"aws:SecureTransport": "true"}, role) is None
    assert decide([bucket], "s3:GetObject", "arn:aws:s3:::b/k", {"aws:SecureTransport": "false"}, role) == DENY


def test_a_negated_condition_on_a_missing_key_holds():
    document = policy(deny("sqs:*", "*", Condition={"StringNotEquals": {"aws:SourceVpce": "vpce-1"}}))
    assert decide([document], "sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:q") == DENY


def _request(service: str, operation: str, params: dict, path: str = "/") -> Request:
    return Request(service=service, operation=operation, region="us-east-1", account="123456789012", params=params, path=path)


@pytest.mark.parametrize(("request_", "expected"), [
    (_request("dynamodb", "Query", {"TableName": "Alerts", "IndexName": "AlarmName"}),
     [Check("dynamodb:Query", f"{TABLE}/index/AlarmName")]),
    (_request("dynamodb", "TransactWriteItems", {"TransactItems": [
        {"Put": {"TableName": "Alerts"}}, {"ConditionCheck": {"TableName": "Locks"}}]}),
     [Check("dynamodb:PutItem", TABLE),
      Check("dynamodb:ConditionCheckItem", "arn:aws:dynamodb:us-east-1:123456789012:table/Locks")]),
    (_request("lambda", "Invoke", {"Qualifier": "live"}, "/2015-03-31/functions/notify/invocations"),
     [Check("lambda:InvokeFunction", "arn:aws:lambda:us-east-1:123456789012:function:notify:live")]),
    (_request("sqs", "SendMessage", {"QueueUrl": "http://127.0.0.1:5000/123456789012/failures"}),
     [Check("sqs:SendMessage", "arn:aws:sqs:us-east-1:123456789012:failures")]),
    (_request("states", "StartExecution", {"stateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:M#HappyPath"}),
     [Check("states:StartExecution", "arn:aws:states:us-east-1:123456789012:stateMachine:M")]),
    (_request("events", "PutEvents", {"Entries": [{"Source": "app"}]}),
     [Check("events:PutEvents", "arn:aws:events:us-east-1:123456789012:event-bus/default")]),
    (_request("cloudwatch", "PutMetricData", {"Namespace": "App"}), [Check("cloudwatch:PutMetricData", "*")]),
    (_request("kms", "Decrypt", {"CiphertextBlob": "x"}), [Check("kms:Decrypt", ANY_RESOURCE)]),
], ids=["index", "transaction", "qualified function", "queue", "mocked test case", "default bus", "resource star", "unresolved"])
def test_each_request_is_checked_on_the_resources_it_names(request_, expected):
    assert checks(request_) == expected


def test_an_s3_copy_also_reads_its_source():
    assert s3_checks("PutObject", "b", "runs/1/out.json", "/b/inputs/in.json") == [
        Check("s3:PutObject", "arn:aws:s3:::b/runs/1/out.json"), Check("s3:GetObject", "arn:aws:s3:::b/inputs/in.json")]

"""Small helpers the emulator tests share: unique names, functions from inline code, their logs, waiting, and the
``aws`` and ``role_arn`` fixtures."""

from __future__ import annotations

import io
import json
import time
import uuid
import zipfile
from typing import Any, Callable

import pytest


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_function(aws: Any, role_arn: str, prefix: str, module: str, code: str, **settings: Any) -> dict:
    """Create a Python 3.13 function whose ``module``.py is ``code``; returns CreateFunction's answer."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"{module}.py", code)
    return aws.client("lambda").create_function(
        FunctionName=unique(prefix),
        Runtime="python3.13",
        Role=role_arn,
        Handler=f"{module}.lambda_handler",
        Code={"ZipFile": archive.getvalue()},
        **settings,
    )


def function_log(aws: Any, function_name: str, **filters: Any) -> list[str]:
    """What ``function_name`` logged (the runtime's lines too), from CloudWatch Logs as an operator reads
    it: its configured group, every stream, in time order; ``filters`` as FilterLogEvents takes them."""
    group = aws.client("lambda").get_function_configuration(FunctionName=function_name)["LoggingConfig"]["LogGroup"]
    logs = aws.client("logs")
    try:
        pages = logs.get_paginator("filter_log_events").paginate(logGroupName=group, **filters)
        return [event["message"] for page in pages for event in page["events"]]
    except logs.exceptions.ResourceNotFoundException:  # no line yet: the group comes with the first
        return []


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Block until ``condition()`` holds; fail naming ``what`` after ``timeout`` seconds of wall time."""
    deadline = time.monotonic() + timeout
    while True:
        checked_at = time.monotonic()
        if condition():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        # A costly check (listing a storm's executions, reading a handler's log) polled back to back
        # would take a core from the emulator it waits for: at most a fifth of the time goes to it.
        time.sleep(max(0.02, 4 * (time.monotonic() - checked_at)))


def wait_for_event(sfn: Any, execution_arn: str, event_type: str, timeout: float = 10) -> None:
    """Block until the execution's history holds an event of ``event_type``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
        if any(event["type"] == event_type for event in events):
            return
        time.sleep(0.02)
    raise AssertionError(f"{execution_arn} never reached {event_type}")


# -- fixtures (tests/conftest.py loads this module as a plugin; a test file may define its own) -----
@pytest.fixture(scope="module")
def aws(deployment):
    """The emulator the session's app is deployed into."""
    return deployment.aws


# Lambda and Step Functions may assume a test's role; a state machine whose role does not trust
# states.amazonaws.com is refused at CreateStateMachine.
SERVICES_TRUST = json.dumps({"Version": "2012-10-17", "Statement": [{
    "Effect": "Allow", "Principal": {"Service": ["lambda.amazonaws.com", "states.amazonaws.com"]}, "Action": "sts:AssumeRole",
}]})


def permissive_role(aws: Any, prefix: str) -> str:
    """A role for the machines and functions a test creates when permissions are not what it tests:
    Lambda and Step Functions may assume it, and it may do anything (the emulator enforces IAM;
    tests/test_iam_execution.py is about permissions)."""
    iam = aws.client("iam")
    name = unique(prefix)
    arn = iam.create_role(RoleName=name, AssumeRolePolicyDocument=SERVICES_TRUST)["Role"]["Arn"]
    iam.put_role_policy(RoleName=name, PolicyName="everything", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    return arn


@pytest.fixture(scope="module")
def role_arn(aws) -> str:
    return permissive_role(aws, "emulator-test")


def put_target(aws: Any, rule: str, target: dict) -> None:
    """PutTargets of one SQS queue or SNS topic, with the resource policy that lets the rule deliver to it:
    EventBridge needs one (EventBridge User Guide, "Using resource-based policies for Amazon
    EventBridge"), and the emulator enforces it."""
    rule_arn = aws.client("events").describe_rule(Name=rule)["Arn"]
    arn = target["Arn"]
    service = arn.split(":")[2]
    policy = json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"},
        "Action": {"sqs": "sqs:SendMessage", "sns": "sns:Publish"}[service], "Resource": arn,
        "Condition": {"ArnEquals": {"aws:SourceArn": rule_arn}}}]})
    if service == "sqs":
        sqs = aws.client("sqs")
        sqs.set_queue_attributes(QueueUrl=sqs.get_queue_url(QueueName=arn.split(":")[5])["QueueUrl"], Attributes={"Policy": policy})
    else:
        aws.client("sns").set_topic_attributes(TopicArn=arn, AttributeName="Policy", AttributeValue=policy)
    aws.client("events").put_targets(Rule=rule, Targets=[target])

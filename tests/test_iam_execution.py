"""IAM enforced in the emulator: each construct's grants are what its executions need, one by one.

For each row, one action is taken out of one deployed policy (the role's inline policy through
IAM PutRolePolicy, or the status topic's policy through SNS SetTopicAttributes), the smallest run
that needs it is made, and the policy is put back. AWS refuses such a call with AccessDenied and the
message "User: arn:aws:sts::<account>:assumed-role/<role>/<session> is not authorized to perform:
<action> on resource: <arn> because no identity-based policy allows the <action> action" (IAM User
Guide, "Troubleshooting access denied error messages"); a Step Functions task fails with the
service's error prefixed by its name (Step Functions Developer Guide, "Handling errors in Step
Functions workflows"); an EventBridge delivery refused for permissions goes to the target's
dead-letter queue with ERROR_CODE NO_PERMISSIONS (EventBridge User Guide, "Using dead-letter queues
to process undelivered events").
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from typing import Any, Iterator

import pytest

from emulator import samples
from emulator.follow import run
from tests.emulator_helpers import SERVICES_TRUST, create_function, function_log, unique, wait_for

ACCOUNT = "123456789012"


def without(document: dict, action: str) -> dict:
    """``document`` with ``action`` taken out of every statement (a statement left with none goes)."""
    def actions(statement: dict) -> list[str]:
        return statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]

    statements = [{**s, "Action": [a for a in actions(s) if a != action]} for s in document["Statement"]]
    kept = [s for s in statements if s["Action"]]
    assert sum(map(len, map(actions, kept))) < sum(map(len, map(actions, document["Statement"]))), f"no grant of {action}"
    return {**document, "Statement": kept}


@contextlib.contextmanager
def role_policy_without(deployment: Any, stack: str, policy_part: str, action: str) -> Iterator[str]:
    """The deployed role policy ``policy_part`` of ``stack`` without ``action`` meanwhile; yields the role name."""
    iam = deployment.client("iam")
    resources = deployment.client("cloudformation").list_stack_resources(StackName=stack)["StackResourceSummaries"]
    # CDK names a role's policy after its logical id
    [policy_name] = [r["LogicalResourceId"] for r in resources
                     if r["ResourceType"] == "AWS::IAM::Policy" and policy_part in r["LogicalResourceId"]]
    [role] = [r["PhysicalResourceId"] for r in resources if r["ResourceType"] == "AWS::IAM::Role"
              and policy_name in iam.list_role_policies(RoleName=r["PhysicalResourceId"])["PolicyNames"]]
    original = iam.get_role_policy(RoleName=role, PolicyName=policy_name)["PolicyDocument"]
    iam.put_role_policy(RoleName=role, PolicyName=policy_name, PolicyDocument=json.dumps(without(original, action)))
    try:
        yield role
    finally:
        iam.put_role_policy(RoleName=role, PolicyName=policy_name, PolicyDocument=json.dumps(original))


def session_of(role: str) -> str:
    """How AWS's denial names the caller, a session of ``role`` (whatever the session's name)."""
    return f"User: arn:aws:sts::{ACCOUNT}:assumed-role/{role}/"


def assert_denied_in_history(result: Any, role: str, action: str) -> None:
    history = json.dumps(result.events, default=str)
    assert result.status == "FAILED", result.status
    assert session_of(role) in history, history[-2000:]
    assert f"is not authorized to perform: {action} on resource: arn:aws:" in history
    assert f"because no identity-based policy allows the {action} action" in history


def run_sample(deployment: Any, machine: str, sample: str) -> Any:
    payload = samples.sample(machine, sample).input
    deployment.seed(machine, payload)
    return deployment.run(machine, payload)


@dataclass(frozen=True)
class Grant:
    stack: str
    policy: str  # a part of the AWS::IAM::Policy's logical id
    action: str
    machine: str
    sample: str


GRANTS = {
    "alert machine reads the alert": Grant(
        "AlertNotificationStack", "MachineStateMachineRoleDefaultPolicy", "dynamodb:GetItem", "alert", "disk-full-web-1"),
    "alert machine invokes its functions": Grant(
        "AlertNotificationStack", "MachineStateMachineRoleDefaultPolicy", "lambda:InvokeFunction", "alert", "disk-full-web-1"),
    "alert notifier reads the webhook secret": Grant(
        "AlertNotificationStack", "NotifyUserRoleDefaultPolicy", "secretsmanager:GetSecretValue", "alert", "disk-full-web-1"),
    "poller machine invokes its functions": Grant(
        "JobPollerStack", "JobPollerMachineStateMachineRoleDefaultPolicy", "lambda:InvokeFunction", "poller", "poll-every-minute"),
    "poller status reader reads the job's status": Grant(
        "JobPollerStack", "GetJobStatusRoleDefaultPolicy", "s3:GetObject", "poller", "poll-every-minute"),
    "export poller starts the export": Grant(
        "JobPollerStack", "ExportPollerMachineStateMachineRoleDefaultPolicy", "dynamodb:ExportTableToPointInTime",
        "export-poller", "defaults"),
    "callback machine invokes its runner": Grant(
        "JobPollerStack", "CallbackMachineStateMachineRoleDefaultPolicy", "lambda:InvokeFunction", "callback", "880-second-job"),
    "map retry machine invokes its processor": Grant(
        "MapRetryStack", "MapRetryMachineStateMachineRoleDefaultPolicy", "lambda:InvokeFunction", "map-retry",
        "one-item-fails-once"),
}


@pytest.mark.parametrize("grant", GRANTS.values(), ids=GRANTS.keys())
def test_an_execution_fails_with_the_denial_of_the_grant_taken_away(deployment, grant: Grant):
    # Given: the construct's role without one of its grants
    with role_policy_without(deployment, grant.stack, grant.policy, grant.action) as role:
        # When: the smallest run that needs it
        result = run_sample(deployment, grant.machine, grant.sample)
    # Then: it fails, and the failure names the role's session and the action refused
    assert_denied_in_history(result, role, grant.action)


def test_the_callback_runner_is_refused_its_heartbeat_and_the_job_times_out(deployment):
    # Given: the callback runner's role without states:SendTaskHeartbeat
    with role_policy_without(deployment, "JobPollerStack", "CallbackJobRunnerSendTaskResult", "states:SendTaskHeartbeat") as role:
        # When: a callback job runs
        result = run_sample(deployment, "callback", "880-second-job")
    # Then: the runner's first heartbeat is refused (its log says so), so the task never hears from
    # it and the machine ends as its design says a dead runner ends it
    runner = deployment.stack_resource("JobPollerStack", "AWS::Lambda::Function", "CallbackJobRunner")
    log = "\n".join(function_log(deployment.aws, runner))
    assert session_of(role) in log
    assert ("is not authorized to perform: states:SendTaskHeartbeat on resource: "
            f"{deployment.machine_arn('callback')} because no identity-based policy allows") in log
    assert (result.status, result.error) == ("FAILED", "JobTimeout")


def test_monitoring_without_its_topic_policy_grant_dead_letters_the_status_event(deployment):
    # Given: the status topic's policy without the statement that lets the status rule publish
    sns, sqs = deployment.client("sns"), deployment.client("sqs")
    topic = deployment.output("MonitoringStack", "StatusTopicArn")
    original = sns.get_topic_attributes(TopicArn=topic)["Attributes"]["Policy"]
    document = json.loads(original)
    kept = [s for s in document["Statement"] if s.get("Sid") != "StatusRulePublishes"]
    assert len(kept) == len(document["Statement"]) - 1
    dead_letters = deployment.stack_resource("MonitoringStack", "AWS::SQS::Queue", "NotificationDeadLetterQueue")
    sns.set_topic_attributes(TopicArn=topic, AttributeName="Policy", AttributeValue=json.dumps({**document, "Statement": kept}))
    try:
        # When: an execution of a monitored machine fails
        result = run_sample(deployment, "poller", "job-that-fails")
    finally:
        sns.set_topic_attributes(TopicArn=topic, AttributeName="Policy", AttributeValue=original)
    assert result.status == "FAILED"
    # Then: EventBridge could not publish its status event; the event is on the rule's dead-letter queue
    found: list[dict] = []

    def dead_lettered() -> bool:
        for message in sqs.receive_message(QueueUrl=dead_letters, MaxNumberOfMessages=10,
                                           MessageAttributeNames=["All"]).get("Messages", []):
            if result.execution_arn in message["Body"]:
                found.append(message)
        return bool(found)

    wait_for(dead_lettered, "the status event on the dead-letter queue", timeout=10)
    attributes = {k: v["StringValue"] for k, v in found[0]["MessageAttributes"].items()}
    assert attributes["ERROR_CODE"] == "NO_PERMISSIONS"
    assert attributes["TARGET_ARN"] == topic
    assert "sns:Publish" in attributes["ERROR_MESSAGE"]


def test_a_state_machine_whose_role_does_not_trust_step_functions_is_refused(deployment):
    # Given: a role only Lambda may assume, and one that does not exist
    iam = deployment.client("iam")
    lambda_only = iam.create_role(RoleName=unique("lambda-only"), AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }))["Role"]["Arn"]
    missing = f"arn:aws:iam::{ACCOUNT}:role/{unique('missing')}"
    trusted = iam.create_role(RoleName=unique("trusted"), AssumeRolePolicyDocument=SERVICES_TRUST)["Role"]["Arn"]
    sfn = deployment.client("stepfunctions")
    definition = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}})
    for role in (lambda_only, missing):
        # When: a machine is created with it
        with pytest.raises(sfn.exceptions.ClientError) as refused:
            sfn.create_state_machine(name=unique("untrusted"), definition=definition, roleArn=role)
        # Then: Step Functions refuses it as AWS does
        assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
        assert refused.value.response["Error"]["Message"] == (
            "Neither the global service principal states.amazonaws.com, nor the regional one is authorized to "
            "assume the provided role.")
    # And: a role that trusts Step Functions is accepted
    assert sfn.create_state_machine(name=unique("trusted"), definition=definition, roleArn=trusted)["stateMachineArn"]



PROBE = '''
import boto3

def lambda_handler(event, context):
    dynamodb = boto3.client("dynamodb")
    calls = {"GetItem": dynamodb.get_item, "PutItem": dynamodb.put_item}
    answers = []
    for operation, table in event["calls"]:
        key = {"id": {"S": "1"}}
        try:
            calls[operation](TableName=table, **({"Key": key} if operation == "GetItem" else {"Item": key}))
            answers.append("ok")
        except Exception as error:
            answers.append([error.response["Error"]["Code"], error.response["Error"]["Message"]])
    return answers
'''


def test_a_function_may_make_only_the_calls_its_role_allows_on_the_resources_it_names(deployment):
    # Given: tables A and B, and a function whose role allows only dynamodb:GetItem on table A
    dynamodb, iam = deployment.client("dynamodb"), deployment.client("iam")
    tables = [unique("iam-table") for _ in range(2)]
    for table in tables:
        dynamodb.create_table(TableName=table, KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                              AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                              BillingMode="PAY_PER_REQUEST")
    role = unique("get-item-on-a")
    role_arn = iam.create_role(RoleName=role, AssumeRolePolicyDocument=SERVICES_TRUST)["Role"]["Arn"]
    table_a = f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/{tables[0]}"
    iam.put_role_policy(RoleName=role, PolicyName="read-a", PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": table_a}]}))
    function = create_function(deployment.aws, role_arn, "iam-probe", "probe", PROBE, Timeout=30)["FunctionName"]
    # When: it gets from A, puts into A and gets from B
    calls = [["GetItem", tables[0]], ["PutItem", tables[0]], ["GetItem", tables[1]]]
    answer = deployment.client("lambda").invoke(FunctionName=function, Payload=json.dumps({"calls": calls}))
    # Then: only the first is allowed; the others are refused with DynamoDB's AccessDeniedException, as
    # the function's session (Lambda names it after the function)
    get_a, put_a, get_b = json.loads(answer["Payload"].read())
    session = f"arn:aws:sts::{ACCOUNT}:assumed-role/{role}/{function}"
    assert get_a == "ok"
    assert put_a == ["AccessDeniedException", f"User: {session} is not authorized to perform: dynamodb:PutItem on resource: "
                     f"{table_a} because no identity-based policy allows the dynamodb:PutItem action"]
    assert get_b == ["AccessDeniedException", f"User: {session} is not authorized to perform: dynamodb:GetItem on resource: "
                     f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/{tables[1]} because no identity-based policy allows "
                     "the dynamodb:GetItem action"]


def test_the_team_example_without_its_queue_grant_shows_the_denial_docs_own_function_quotes(deployment):
    # Given: the team's notifier (examples/) without sqs:SendMessage on its queue, and an alert of one user, one round
    stack = "TeamPatternsStack"
    alert_id = unique("team-denied")
    deployment.client("dynamodb").put_item(TableName=deployment.output(stack, "AlertTableName"), Item={
        "alert_id": {"S": alert_id}, "notification_count": {"N": "1"}, "user_accounts": {"L": [{"S": "ops@example.com"}]},
        "interval_seconds": {"N": "60"}, "message": {"S": "Queue depth above 1,000"}})
    with role_policy_without(deployment, stack, "NotifierRoleDefaultPolicy", "sqs:SendMessage") as role:
        # When: the alert runs
        result = run(deployment.aws, deployment.output(stack, "AlertStateMachineArn"), {"alert_id": alert_id},
                     name=unique("team-denied"))
    # Then: its one notification fails, so the alert does; the Notify User task's cause is SQS's denial
    notifier = deployment.stack_resource(stack, "AWS::Lambda::Function", "NotifierFunction")
    queue = deployment.output(stack, "NotificationQueueUrl").rpartition("/")[2]
    assert (result.status, result.error) == ("FAILED", "NotificationDeliveryFailed"), result.cause
    assert (f"An error occurred (AccessDenied) when calling the SendMessage operation: User: "
            f"arn:aws:sts::{ACCOUNT}:assumed-role/{role}/{notifier} is not authorized to perform: sqs:SendMessage on "
            f"resource: arn:aws:sqs:us-east-1:{ACCOUNT}:{queue} because no identity-based policy allows the "
            "sqs:SendMessage action") in json.dumps(result.events, default=str)


def test_a_function_whose_role_lambda_may_not_assume_is_refused(deployment):
    # Given: a role only Step Functions may assume
    role = deployment.client("iam").create_role(RoleName=unique("states-only"), AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "states.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }))["Role"]["Arn"]
    lam = deployment.client("lambda")
    # When: a function is created with it
    with pytest.raises(lam.exceptions.InvalidParameterValueException) as refused:
        create_function(deployment.aws, role, "untrusted", "probe", PROBE)
    # Then: Lambda refuses it in its own words
    assert refused.value.response["Error"]["Message"] == "The role defined for the function cannot be assumed by Lambda."

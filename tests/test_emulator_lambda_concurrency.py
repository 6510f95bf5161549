"""Lambda's account concurrency in the emulator: the 100-unreserved rule, throttling, and its retries.

Each test uses small functions of its own, not the app's. Pages followed:
- Reserved concurrency, and the unreserved minimum PutFunctionConcurrency keeps:
  https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html
- Throttling (TooManyRequestsException, HTTP 429, its Reason):
  https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html#API_Invoke_Errors
- A function URL answers 429 when the function is throttled: https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html
- Throttled asynchronous events go back to the queue and are retried for up to the event's maximum age,
  from 1 second apart doubling to 5 minutes:
  https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html
The refusal's text is AWS's as CloudFormation and the CLI report it ("... below its minimum value of [100].").
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from botocore.exceptions import ClientError

from emulator.follow import run
from tests.emulator_helpers import create_function, unique, wait_for

# Runs until the object its event names exists in the bucket: its instance stays busy in real time,
# whatever the simulated clock does, so invocations the test makes meanwhile meet it running.
BLOCKING_CODE = '''
import boto3, time

def lambda_handler(event, context):
    s3 = boto3.client("s3")
    while "Contents" not in s3.list_objects_v2(Bucket=event["bucket"], Prefix=event["release"]):
        time.sleep(0.05)
    return {"released": True}
'''
ECHO_CODE = '''
def lambda_handler(event, context):
    return {"statusCode": 200, "body": "ran"}
'''


def _unreserved(aws) -> int:
    return aws.client("lambda").get_account_settings()["AccountLimit"]["UnreservedConcurrentExecutions"]


def test_account_settings_give_the_quota_and_what_the_reservations_leave(aws):
    # GetAccountSettings: AccountLimit.ConcurrentExecutions, UnreservedConcurrentExecutions
    client = aws.client("lambda")
    functions = [f for page in client.get_paginator("list_functions").paginate() for f in page["Functions"]]
    reserved = [client.get_function_concurrency(FunctionName=f["FunctionName"]).get("ReservedConcurrentExecutions") for f in functions]
    limit = client.get_account_settings()["AccountLimit"]
    assert (limit["ConcurrentExecutions"], limit["UnreservedConcurrentExecutions"]) == (
        1000, 1000 - sum(r for r in reserved if r is not None))


@pytest.fixture
def small_function(aws, role_arn):
    return create_function(aws, role_arn, "quota", "echo", ECHO_CODE)["FunctionName"]


def test_a_reservation_that_leaves_less_than_100_unreserved_is_refused(aws, small_function):
    # Given: what the account leaves unreserved now (1,000 less the reservations already made)
    client = aws.client("lambda")
    leaving_99 = _unreserved(aws) - 99
    # When / Then: leaving 99 is refused, as AWS words it
    with pytest.raises(ClientError) as refused:
        client.put_function_concurrency(FunctionName=small_function, ReservedConcurrentExecutions=leaving_99)
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValueException"
    assert refused.value.response["Error"]["Message"] == (
        "Specified ReservedConcurrentExecutions for function decreases account's UnreservedConcurrentExecution "
        "below its minimum value of [100].")
    # ... and leaving exactly 100 is accepted
    client.put_function_concurrency(FunctionName=small_function, ReservedConcurrentExecutions=leaving_99 - 1)
    try:
        assert _unreserved(aws) == 100
    finally:
        client.delete_function_concurrency(FunctionName=small_function)


def test_a_new_accounts_quota_of_10_refuses_any_reservation(aws, small_function):
    # Given: the account's quota as a new account's (10), which is all of it its minimum unreserved
    before = aws.client("lambda").get_account_settings()["AccountLimit"]
    with aws.account_concurrency_quota(10):
        limit = aws.client("lambda").get_account_settings()["AccountLimit"]
        # When / Then
        with pytest.raises(ClientError) as refused:
            aws.client("lambda").put_function_concurrency(FunctionName=small_function, ReservedConcurrentExecutions=1)
    assert (limit["ConcurrentExecutions"], limit["UnreservedConcurrentExecutions"]) == (10, 10)
    assert refused.value.response["Error"]["Message"].endswith("below its minimum value of [10].")
    # Then: the account is back at its own quota
    assert aws.client("lambda").get_account_settings()["AccountLimit"] == before


def test_an_account_whose_reservations_need_more_cannot_run_at_a_new_accounts_quota(aws, small_function):
    # Given: one function reserves 5 (a new account could not: its 10 must all stay unreserved)
    client = aws.client("lambda")
    client.put_function_concurrency(FunctionName=small_function, ReservedConcurrentExecutions=5)
    try:
        # When / Then
        with pytest.raises(ValueError, match="reserve 5 of the account's concurrency: a quota of 10 cannot hold them"):
            with aws.account_concurrency_quota(10):
                pass
    finally:
        client.delete_function_concurrency(FunctionName=small_function)
    assert aws.concurrency.quota == 1000


def test_a_stack_reserving_too_much_fails_to_deploy_naming_the_function(aws, role_arn):
    # Given: a stack whose function reserves what would leave 50 unreserved, deployed as `cdk deploy` does
    template = {"Resources": {"Greedy": {"Type": "AWS::Lambda::Function", "Properties": {
        "Runtime": "python3.13", "Handler": "index.lambda_handler", "Role": role_arn,
        "Code": {"ZipFile": "def lambda_handler(event, context):\n    return 1\n"},
        "ReservedConcurrentExecutions": _unreserved(aws) - 50}}}}
    cfn, stack = aws.client("cloudformation"), unique("GreedyStack")
    cfn.create_change_set(StackName=stack, ChangeSetName="cdk-deploy-change-set", ChangeSetType="CREATE",
                          TemplateBody=json.dumps(template))
    # When
    cfn.execute_change_set(StackName=stack, ChangeSetName="cdk-deploy-change-set")
    # Then: CloudFormation reports Lambda's refusal on the function, and the stack rolled back
    assert cfn.describe_stacks(StackName=stack)["Stacks"][0]["StackStatus"] == "ROLLBACK_COMPLETE"
    [(logical_id, reason)] = [(e["LogicalResourceId"], e["ResourceStatusReason"])
                              for e in cfn.describe_stack_events(StackName=stack)["StackEvents"] if e["ResourceStatus"] == "CREATE_FAILED"]
    assert logical_id == "Greedy"
    assert reason.startswith('Resource handler returned message: "Specified ReservedConcurrentExecutions for function '
                             "decreases account's UnreservedConcurrentExecution below its minimum value of [100]. (Service: Lambda, Status Code: 400")
    assert reason.endswith("HandlerErrorCode: InvalidRequest)")


def test_invocations_beyond_a_functions_reservation_are_throttled_with_429(aws, role_arn):
    # Given: a function reserved at 1, one invocation of it running
    bucket = unique("release")
    aws.client("s3").create_bucket(Bucket=bucket)
    name = create_function(aws, role_arn, "reserved", "blocking", BLOCKING_CODE, Timeout=60)["FunctionName"]
    client = aws.client("lambda")
    client.put_function_concurrency(FunctionName=name, ReservedConcurrentExecutions=1)
    event = json.dumps({"bucket": bucket, "release": "go"})
    # (the reservation goes after: the session's account must be able to run at a new account's
    # quota, which holds no reservation, for tests/test_small_account_execution.py)
    try:
        with ThreadPoolExecutor(1) as pool:
            running = pool.submit(client.invoke, FunctionName=name, Payload=event)
            wait_for(lambda: aws.concurrency.running(name) == 1, "the first invocation to start")
            # When: two more
            throttles = []
            for _ in range(2):
                with pytest.raises(ClientError) as throttled:
                    client.invoke(FunctionName=name, Payload=event)
                throttles.append(throttled.value.response)
            aws.client("s3").put_object(Bucket=bucket, Key="go", Body=b"")
            first = running.result(timeout=60)
    finally:
        client.delete_function_concurrency(FunctionName=name)
    # Then: the first ran; the others were refused as Lambda refuses them
    assert json.loads(first["Payload"].read()) == {"released": True}
    assert [(t["ResponseMetadata"]["HTTPStatusCode"], t["Error"]["Code"], t["Reason"]) for t in throttles] == [
        (429, "TooManyRequestsException", "ReservedFunctionConcurrentInvocationLimitExceeded")] * 2


def test_a_function_url_of_a_throttled_function_answers_429(aws, role_arn):
    # Given: a public function URL whose function is reserved at 0 (every invocation throttled)
    name = create_function(aws, role_arn, "url-throttled", "echo", ECHO_CODE)["FunctionName"]
    client = aws.client("lambda")
    url = client.create_function_url_config(FunctionName=name, AuthType="NONE")["FunctionUrl"]
    client.add_permission(FunctionName=name, StatementId="url", Action="lambda:InvokeFunctionUrl",
                          Principal="*", FunctionUrlAuthType="NONE")
    client.add_permission(FunctionName=name, StatementId="invoke", Action="lambda:InvokeFunction", Principal="*")
    client.put_function_concurrency(FunctionName=name, ReservedConcurrentExecutions=0)
    # When
    with pytest.raises(urllib.error.HTTPError) as answered:
        urllib.request.urlopen(url, timeout=10)
    # Then
    assert answered.value.code == 429
    # ... and once the reservation is gone, it runs
    client.delete_function_concurrency(FunctionName=name)
    with urllib.request.urlopen(url, timeout=10) as response:
        assert (response.status, response.read()) == (200, b"ran")


def test_a_throttled_event_is_retried_until_its_maximum_age_then_recorded(aws, role_arn):
    # Given: a function reserved at 0, its events kept at most 60 s, failures sent to a queue
    sqs = aws.client("sqs")
    queue_url = sqs.create_queue(QueueName=unique("throttled-events"))["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    name = create_function(aws, role_arn, "event-throttled", "echo", ECHO_CODE)["FunctionName"]
    client = aws.client("lambda")
    client.put_function_concurrency(FunctionName=name, ReservedConcurrentExecutions=0)
    client.put_function_event_invoke_config(FunctionName=name, MaximumEventAgeInSeconds=60,
                                            DestinationConfig={"OnFailure": {"Destination": queue_arn}})
    accepted = aws.clock.now()
    # When
    assert client.invoke(FunctionName=name, InvocationType="Event", Payload="{}")["StatusCode"] == 202
    # Then: retried 1, 2, 4, 8, 16 s apart (31 s) and dropped at 60 s, never having run
    deadline, messages = time.monotonic() + 30, []
    while not messages and time.monotonic() < deadline:
        messages = sqs.receive_message(QueueUrl=queue_url, WaitTimeSeconds=0).get("Messages", [])
        time.sleep(0.05)
    record = json.loads(messages[0]["Body"])
    assert (record["requestContext"]["condition"], record["requestContext"]["approximateInvokeCount"]) == ("EventAgeExceeded", 0)
    recorded = time.mktime(time.strptime(record["timestamp"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    assert recorded - accepted == pytest.approx(60, abs=1.5)
    assert aws.runtime.count(name) == 0



def test_a_state_machine_task_on_a_throttled_function_fails_with_lambdas_throttling_error(aws, role_arn):
    # Given: a lambda:invoke task on a function reserved at 0; Step Functions names Lambda's errors
    # "Lambda.<code>" (https://docs.aws.amazon.com/step-functions/latest/dg/connect-lambda.html)
    name = create_function(aws, role_arn, "task-throttled", "echo", ECHO_CODE)["FunctionName"]
    aws.client("lambda").put_function_concurrency(FunctionName=name, ReservedConcurrentExecutions=0)
    definition = {"StartAt": "Call", "States": {"Call": {
        "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": name}, "End": True}}}
    arn = aws.client("stepfunctions").create_state_machine(
        name=unique("throttled"), definition=json.dumps(definition), roleArn=role_arn)["stateMachineArn"]
    # When
    result = run(aws, arn, {})
    # Then
    assert (result.status, result.error) == ("FAILED", "Lambda.TooManyRequestsException"), result.cause

"""Mocked service integrations: the mock configuration file as AWS documents it for Step Functions Local.

The file's checks run on the file alone; the engine's behaviour runs small machines in the session's
deployment whose tasks call a function that does not exist, so any call that is not mocked fails.
https://docs.aws.amazon.com/step-functions/latest/dg/sfn-local-mock-cfg-file.html
https://docs.aws.amazon.com/step-functions/latest/dg/sfn-local-test-sm-exec.html
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from emulator.follow import run
from emulator.stepfunctions.mocks import MockConfig, MockConfigError
from tests.conftest import HANG_SECONDS
from tests.emulator_helpers import permissive_role, unique

ROOT = Path(__file__).resolve().parents[1]
MOCK_CFG = "https://docs.aws.amazon.com/step-functions/latest/dg/sfn-local-mock-cfg-file.html"

# The guide's own example file (sfn-local-mock-cfg-file.html), as printed there.
GUIDE_EXAMPLE = {
    "StateMachines": {
        "LambdaSQSIntegration": {
            "TestCases": {
                "HappyPath": {"LambdaState": "MockedLambdaSuccess", "SQSState": "MockedSQSSuccess"},
                "RetryPath": {"LambdaState": "MockedLambdaRetry", "SQSState": "MockedSQSSuccess"},
                "HybridPath": {"LambdaState": "MockedLambdaSuccess"},
            }
        }
    },
    "MockedResponses": {
        "MockedLambdaSuccess": {"0": {"Return": {"StatusCode": 200, "Payload": {"StatusCode": 200, "body": "Hello from Lambda!"}}}},
        "LambdaMockedResourceNotReady": {
            "0": {"Throw": {"Error": "Lambda.ResourceNotReadyException", "Cause": "Lambda resource is not ready."}}
        },
        "MockedSQSSuccess": {
            "0": {"Return": {"MD5OfMessageBody": "3bcb6e8e-7h85-4375-b0bc-1a59812c6e51", "MessageId": "3bcb6e8e-8b51-4375-b0bc-1a59812c6e51"}}
        },
        "MockedLambdaRetry": {
            "0": {"Throw": {"Error": "Lambda.ResourceNotReadyException", "Cause": "Lambda resource is not ready."}},
            "1-2": {"Throw": {"Error": "Lambda.TimeoutException", "Cause": "Lambda timed out."}},
            "3": {"Return": {"StatusCode": 200, "Payload": {"StatusCode": 200, "body": "Hello from Lambda!"}}},
        },
    },
}

# The guide's LambdaSQSIntegration machine (sfn-local-test-sm-exec.html), its function and queue
# replaced by ones that do not exist: only a mocked state can succeed.
GUIDE_MACHINE = {
    "StartAt": "LambdaState",
    "States": {
        "LambdaState": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Parameters": {"Payload.$": "$", "FunctionName": "no-such-function"},
            "Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 2, "MaxAttempts": 3, "BackoffRate": 2}],
            "Next": "SQSState",
        },
        "SQSState": {
            "Type": "Task",
            "Resource": "arn:aws:states:::sqs:sendMessage",
            "Parameters": {"QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/no-such-queue", "MessageBody.$": "$"},
            "End": True,
        },
    },
}


def _changed(path: str, value: object) -> dict:
    """The guide's example with the field at ``path`` ("MockedResponses/MockedLambdaSuccess/0") set to ``value``."""
    document = json.loads(json.dumps(GUIDE_EXAMPLE))
    *parents, last = path.split("/")
    target = document
    for key in parents:
        target = target[key]
    target[last] = value
    return document


# -- The file ----------------------------------------------------------------------------------------
def test_the_guides_example_file_is_accepted_with_every_test_case():
    config = MockConfig(GUIDE_EXAMPLE)
    assert config.test_cases() == [
        "LambdaSQSIntegration#HappyPath", "LambdaSQSIntegration#RetryPath", "LambdaSQSIntegration#HybridPath"]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "must be a JSON object"),
        ({"StateMachines": {}, "MockedResponse": {}}, "unknown field(s) MockedResponse"),
        (_changed("StateMachines/LambdaSQSIntegration/TestCases/HappyPath/SQSState", "NoSuchResponse"),
         'uses mocked response "NoSuchResponse", which MockedResponses does not define'),
        (_changed("MockedResponses/MockedLambdaRetry/3", {"Return": {}, "Throw": {"Error": "E", "Cause": "C"}}),
         "must have exactly one field, Return or Throw"),
        (_changed("MockedResponses/MockedLambdaSuccess/0", {"Throw": {"Error": "E"}}), "Throw needs Cause as a string"),
        (_changed("MockedResponses/MockedLambdaSuccess", {"1": {"Return": {}}}), '"1" starts at 1, the next undefined invocation is 0'),
        (_changed("MockedResponses/MockedLambdaSuccess", {"0-1": {"Return": {}}, "1": {"Return": {}}}), "without gaps or overlaps"),
        (_changed("MockedResponses/MockedLambdaSuccess", {"2-1": {"Return": {}}}), '"2-1" is not an invocation number'),
        (_changed("MockedResponses/MockedLambdaSuccess", {"first": {"Return": {}}}), '"first" is not an invocation number'),
        (_changed("MockedResponses/MockedLambdaSuccess", {}), "defines no invocation"),
    ],
)
def test_a_file_that_breaks_the_documented_structure_is_refused_saying_where(document, message):
    # MockedResponses: 'a single field named Return or Throw'; Throw 'must be an object containing an
    # Error and Cause fields with string values'; invocations "0", "1-2"... consecutively numbered.
    with pytest.raises(MockConfigError) as refused:
        MockConfig(document, "MockConfigFile.json")
    assert message in str(refused.value)
    assert str(refused.value).startswith("MockConfigFile.json")


def test_serve_refuses_a_mock_file_that_is_not_json_before_deploying(tmp_path):
    bad = tmp_path / "MockConfigFile.json"
    bad.write_text('{"StateMachines": {}, ')
    completed = subprocess.run(
        [sys.executable, "-m", "emulator", "serve"], cwd=ROOT, capture_output=True, text=True, timeout=HANG_SECONDS,
        env={**os.environ, "SFN_MOCK_CONFIG": str(bad)},
    )
    assert completed.returncode == 2
    assert completed.stderr.startswith(f"error: SFN_MOCK_CONFIG: {bad} is not JSON: ")
    assert "Deploying" not in completed.stdout


# -- The engine --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def guide_machine(deployment):
    aws = deployment.aws
    role = permissive_role(aws, "mocks")
    name = unique("LambdaSQSIntegration")
    arn = aws.client("stepfunctions").create_state_machine(name=name, definition=json.dumps(GUIDE_MACHINE), roleArn=role)["stateMachineArn"]
    document = json.loads(json.dumps(GUIDE_EXAMPLE))
    document["StateMachines"][name] = document["StateMachines"].pop("LambdaSQSIntegration")
    previous = aws.mock_config
    aws.use_mock_config(MockConfig(document))
    yield arn
    aws.use_mock_config(previous)


def test_happy_path_passes_the_mocked_results_on_as_real_ones_would_be(deployment, guide_machine):
    result = run(deployment.aws, f"{guide_machine}#HappyPath", {})
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output == GUIDE_EXAMPLE["MockedResponses"]["MockedSQSSuccess"]["0"]["Return"]
    [sqs_entered] = [e for e in result.events if e["type"] == "TaskStateEntered"
                     and e["stateEnteredEventDetails"]["name"] == "SQSState"]
    lambda_return = GUIDE_EXAMPLE["MockedResponses"]["MockedLambdaSuccess"]["0"]["Return"]
    assert json.loads(sqs_entered["stateEnteredEventDetails"]["input"]) == lambda_return


def test_retry_path_takes_one_mocked_response_per_attempt(deployment, guide_machine):
    # "The initial attempt ... The first and second retry attempts ... The third retry attempt ends
    # with a task success" (sfn-local-test-sm-exec.html)
    result = run(deployment.aws, f"{guide_machine}#RetryPath", {})
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    failed = [(e["taskFailedEventDetails"]["error"], e["taskFailedEventDetails"]["cause"]) for e in result.events if e["type"] == "TaskFailed"]
    assert failed == [("Lambda.ResourceNotReadyException", "Lambda resource is not ready."),
                      ("Lambda.TimeoutException", "Lambda timed out."), ("Lambda.TimeoutException", "Lambda timed out.")]
    assert (result.stop - result.start).total_seconds() == pytest.approx(2 + 4 + 8, abs=1)  # the back-off, simulated


def test_hybrid_path_calls_the_service_of_the_state_it_does_not_mock(deployment, guide_machine):
    # "SQSState performs an actual service call": here to a queue that does not exist.
    result = run(deployment.aws, f"{guide_machine}#HybridPath", {})
    assert (result.status, result.cause) == ("FAILED", "The specified queue does not exist."), (result.error, result.cause)
    assert [e["type"] for e in result.events if e["type"].startswith("Task")].count("TaskSucceeded") == 1  # LambdaState


def test_an_invocation_the_mocked_response_does_not_cover_fails_the_execution(deployment, guide_machine):
    # "If you do not specify a mocked response for a specific retry attempt ... the state machine
    # execution will fail": LambdaMockedResourceNotReady answers only invocation 0, and Retry asks for more.
    aws = deployment.aws
    name = guide_machine.rpartition(":")[2]
    document = json.loads(json.dumps(GUIDE_EXAMPLE))
    document["StateMachines"] = {name: {"TestCases": {"NotReady": {"LambdaState": "LambdaMockedResourceNotReady"}}}}
    previous = aws.mock_config
    aws.use_mock_config(MockConfig(document))
    try:
        result = run(aws, f"{guide_machine}#NotReady", {})
    finally:
        aws.use_mock_config(previous)
    assert (result.status, result.error) == ("FAILED", "States.Runtime")
    assert "has no response for invocation 1" in result.cause


def test_an_unknown_test_case_is_refused_naming_the_defined_ones(deployment, guide_machine):
    with pytest.raises(ClientError) as refused:
        deployment.client("stepfunctions").start_execution(stateMachineArn=f"{guide_machine}#SadPath")
    assert refused.value.response["Error"]["Code"] == "ValidationException"
    assert "Test case 'SadPath' is not defined" in str(refused.value)
    assert "HappyPath, HybridPath, RetryPath" in str(refused.value)


def test_serve_lists_the_test_cases_and_warns_of_a_machine_name_nothing_deployed_has(deployment):
    from emulator.cli import mock_config_lines

    document = json.loads((ROOT / "samples" / "MockConfigFile.json").read_text())
    document["StateMachines"]["NoSuchMachine"] = {"TestCases": {}}
    lines = mock_config_lines(MockConfig(document, "MockConfigFile.json"), deployment)
    assert lines[0].startswith("Mocked service integrations (SFN_MOCK_CONFIG=MockConfigFile.json)")
    assert "  poller#JobFailsOnThirdPoll" in lines and "  alert#SlackFlakyThenAcknowledged" in lines
    assert [line for line in lines if "warning" in line] == [
        "  warning: no deployed state machine is named 'NoSuchMachine' "
        "(the app's: alert, callback, export-poller, map-retry, poller)"]


# -- A Throw on every kind of integration -----------------------------------------------------------
# (resource, Parameters, the error a team would write a Retry for). The kinds the app's machines use
# (statemachines/*.asl.json) and the ones a team's adds most often; the services called do not exist.
_NO_SUCH_TABLE = "no-such-table"
THROWN_BY_INTEGRATION = [
    ("arn:aws:states:::lambda:invoke", {"FunctionName": "no-such-function", "Payload.$": "$"}, "Lambda.TooManyRequestsException"),
    ("arn:aws:states:::lambda:invoke.waitForTaskToken",
     {"FunctionName": "no-such-function", "Payload": {"token.$": "$$.Task.Token"}}, "Lambda.ServiceException"),
    ("arn:aws:lambda:us-east-1:123456789012:function:no-such-function", None, "Lambda.ServiceException"),
    ("arn:aws:states:::dynamodb:getItem", {"TableName": _NO_SUCH_TABLE, "Key": {"id": {"S": "a"}}}, "DynamoDB.ThrottlingException"),
    ("arn:aws:states:::dynamodb:updateItem",
     {"TableName": _NO_SUCH_TABLE, "Key": {"id": {"S": "a"}}, "UpdateExpression": "SET n = :n",
      "ExpressionAttributeValues": {":n": {"N": "1"}}}, "DynamoDB.ConditionalCheckFailedException"),
    ("arn:aws:states:::dynamodb:putItem", {"TableName": _NO_SUCH_TABLE, "Item": {"id": {"S": "a"}}},
     "DynamoDB.ProvisionedThroughputExceededException"),
    ("arn:aws:states:::aws-sdk:dynamodb:describeExport", {"ExportArn": "arn:aws:dynamodb:us-east-1:123456789012:table/t/export/x"},
     "DynamoDb.ExportNotFoundException"),
    ("arn:aws:states:::aws-sdk:s3:getObject", {"Bucket": "no-such-bucket", "Key": "k"}, "S3.NoSuchKeyException"),
    ("arn:aws:states:::sqs:sendMessage",
     {"QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/no-such-queue", "MessageBody": "m"}, "SQS.KmsThrottledException"),
    ("arn:aws:states:::sns:publish", {"TopicArn": "arn:aws:sns:us-east-1:123456789012:no-such-topic", "Message": "m"},
     "SNS.ThrottledException"),
    ("arn:aws:states:::states:startExecution",
     {"StateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:no-such-machine", "Input": {}},
     "StepFunctions.ExecutionLimitExceededException"),
    ("arn:aws:states:::events:putEvents", {"Entries": [{"Source": "s", "DetailType": "d", "Detail": {}}]},
     "EventBridge.InternalException"),
]


@pytest.mark.parametrize(("resource", "parameters", "error"), THROWN_BY_INTEGRATION, ids=[r[0].rpartition(":::")[2] or "lambda-arn" for r in THROWN_BY_INTEGRATION])
def test_a_mocked_throw_keeps_its_error_and_cause_so_retry_and_catch_match_it(aws, role_arn, resource, parameters, error):
    # Given: a task whose Retry and Catch name the mocked error, mocked to throw on both attempts
    # ("Throw ... Error and Cause", sfn-local-mock-cfg-file.html; Retry and Catch match the task's
    # Error: concepts-error-handling.html)
    task = {"Type": "Task", "Resource": resource, "Retry": [{"ErrorEquals": [error], "IntervalSeconds": 1, "MaxAttempts": 1}],
            "Catch": [{"ErrorEquals": [error], "ResultPath": "$.caught", "Next": "Caught"}], "End": True}
    if parameters is not None:
        task["Parameters"] = parameters
    definition = {"StartAt": "Call Service", "States": {"Call Service": task, "Caught": {"Type": "Pass", "End": True}}}
    name = unique("throw")
    arn = aws.client("stepfunctions").create_state_machine(name=name, definition=json.dumps(definition), roleArn=role_arn)["stateMachineArn"]
    config = MockConfig({"StateMachines": {name: {"TestCases": {"Throws": {"Call Service": "Thrown"}}}},
                         "MockedResponses": {"Thrown": {"0-1": {"Throw": {"Error": error, "Cause": "mocked failure"}}}}})
    previous = aws.mock_config
    aws.use_mock_config(config)
    try:
        # When
        result = run(aws, f"{arn}#Throws", {})
    finally:
        aws.use_mock_config(previous)
    # Then: retried once (a second answer taken, at least IntervalSeconds later), then caught, Error and Cause intact
    failed = [(e["taskFailedEventDetails"]["error"], e["taskFailedEventDetails"]["cause"]) for e in result.events if e["type"] == "TaskFailed"]
    assert failed == [(error, "mocked failure")] * 2, (result.error, result.cause)
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output == {"caught": {"Error": error, "Cause": "mocked failure"}}
    assert (result.stop - result.start).total_seconds() >= 1

"""Fault injection (``aws.faults``) makes Lambda, S3, DynamoDB and Step Functions fail as AWS does, only while asked.

Each test names the AWS behaviour a fault reproduces. They use small functions, tables, buckets
and machines of their own in the shared deployment, so no fault can touch the app's resources.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qsl, urlsplit

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from emulator.faults import s3_operation
from emulator.follow import run
from tests.emulator_helpers import create_function, unique

PROBE_CODE = """
import boto3

def lambda_handler(event, context):
    action = event.get("action")
    if action == "put":
        boto3.client("s3").put_object(Bucket=event["bucket"], Key=event["key"], Body=b"written by the probe")
        return {"put": event["key"]}
    if action == "get":
        body = boto3.client("s3").get_object(Bucket=event["bucket"], Key=event["key"])["Body"].read()
        return {"body": body.decode()}
    return {"echo": event}
"""

RETRYABLE = {"IntervalSeconds": 1, "MaxAttempts": 3, "BackoffRate": 2}


@pytest.fixture(scope="module")
def aws(deployment):
    yield deployment.aws
    deployment.aws.faults.clear()


@pytest.fixture(scope="module")
def probe(aws, role_arn) -> str:
    """A function of this module's own; its name is unique, so faults on it touch nothing else."""
    return create_function(aws, role_arn, "fault-probe", "probe", PROBE_CODE, Timeout=30, MemorySize=128)["FunctionName"]


@pytest.fixture(scope="module")
def bucket(aws) -> str:
    name = unique("fault-bucket")
    aws.client("s3").create_bucket(Bucket=name)
    return name


@pytest.fixture(scope="module")
def table(aws) -> str:
    name = unique("fault-table")
    aws.client("dynamodb").create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    aws.client("dynamodb").put_item(TableName=name, Item={"pk": {"S": "present"}})
    return name


def _no_retry_client(aws, service: str):
    """A client that reports the first answer, as the Step Functions engine does (no SDK retries)."""
    return boto3.client(
        service,
        endpoint_url=aws.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="emulator",
        aws_secret_access_key="emulator",
        config=Config(retries={"total_max_attempts": 1}),
    )


def _invoke(aws, function: str, payload: dict):
    response = _no_retry_client(aws, "lambda").invoke(FunctionName=function, Payload=json.dumps(payload))
    return response, json.loads(response["Payload"].read())


def _machine(aws, role_arn, task: dict, *, catch_all: bool = False) -> str:
    if catch_all:
        task = {**task, "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Caught"}]}
    definition = {
        "StartAt": "Task",
        "TimeoutSeconds": 3600,
        "States": {"Task": {"Type": "Task", "End": True, **task}, "Caught": {"Type": "Pass", "End": True}},
    }
    return aws.client("stepfunctions").create_state_machine(
        name=unique("faults"), definition=json.dumps(definition), roleArn=role_arn
    )["stateMachineArn"]


def _invoke_task(function: str, payload: dict | None = None, retry_on: str | None = None) -> dict:
    task = {
        "Resource": "arn:aws:states:::lambda:invoke",
        "Parameters": {"FunctionName": function, "Payload": payload or {"action": "echo"}},
        "OutputPath": "$.Payload",
    }
    if retry_on:
        task["Retry"] = [{"ErrorEquals": [retry_on], **RETRYABLE}]
    return task


def _task_failures(result) -> list[tuple[str, str]]:
    return [
        (e["taskFailedEventDetails"]["error"], e["taskFailedEventDetails"].get("cause", ""))
        for e in result.events
        if e["type"] == "TaskFailed"
    ]


# -- Lambda: API errors ------------------------------------------------------------------------
def test_throttled_function_answers_429_for_its_first_calls_then_runs(aws, probe):
    # AWS: Invoke beyond the function's concurrency answers HTTP 429 TooManyRequestsException
    # (with Retry-After) and the handler does not run.
    before = aws.runtime.count(probe)
    with aws.faults.lambda_throttled(probe, times=2) as fault:
        errors = []
        for _ in range(2):
            with pytest.raises(ClientError) as raised:
                _invoke(aws, probe, {"n": 1})
            errors.append(raised.value.response)
        response, body = _invoke(aws, probe, {"n": 2})
    assert [(e["Error"]["Code"], e["ResponseMetadata"]["HTTPStatusCode"]) for e in errors] == [
        ("TooManyRequestsException", 429)
    ] * 2
    assert errors[0]["ResponseMetadata"]["HTTPHeaders"]["retry-after"] == "1"
    assert body == {"echo": {"n": 2}} and "FunctionError" not in response
    assert fault.hits == 2 and fault.failed == [probe, probe]
    assert aws.runtime.count(probe) == before + 1  # only the call that got through ran


@pytest.mark.parametrize(
    ("arm", "error", "cause_part"),
    [
        (lambda f, fn: f.lambda_throttled(fn), "Lambda.TooManyRequestsException", "Status Code: 429"),
        (lambda f, fn: f.lambda_service_error(fn), "Lambda.ServiceException", "Status Code: 500"),
        # A code the Lambda API does not model: the Java SDK's base exception class.
        (
            lambda f, fn: f.lambda_error(fn, status=502, code="BadGateway"),
            "Lambda.AWSLambdaException",
            "Status Code: 502",
        ),
        # No answer at all: the SDK's client-side exception.
        (lambda f, fn: f.lambda_disconnected(fn), "Lambda.SdkClientException", "Unable to execute HTTP request"),
    ],
    ids=["throttled", "service-error", "unmodelled-error", "disconnected"],
)
def test_step_functions_names_lambda_api_failures_as_aws_does(aws, role_arn, probe, arm, error, cause_part):
    # AWS: lambda:invoke surfaces Invoke API failures as Lambda.<Java SDK exception>, the names
    # the documented Retry on Lambda.ServiceException/AWSLambdaException/SdkClientException/
    # TooManyRequestsException matches.
    machine = _machine(aws, role_arn, _invoke_task(probe))
    with arm(aws.faults, probe) as fault:
        result = run(aws, machine, {})
    assert (result.status, result.error) == ("FAILED", error)
    assert cause_part in result.cause
    assert fault.hits == 1


def test_retry_on_lambda_throttling_succeeds_once_the_throttling_stops(aws, role_arn, probe):
    # Given: a task retrying Lambda.TooManyRequestsException 3 times, and a function throttled twice
    machine = _machine(
        aws, role_arn, _invoke_task(probe, {"action": "echo", "v": 1}, retry_on="Lambda.TooManyRequestsException")
    )
    before = aws.runtime.count(probe)
    # When
    with aws.faults.lambda_throttled(probe, times=2):
        result = run(aws, machine, {})
    # Then: two attempts failed by name, the third ran the handler once, after 1 s + 2 s back-off
    assert result.status == "SUCCEEDED" and result.output == {"echo": {"action": "echo", "v": 1}}
    assert [e for e, _ in _task_failures(result)] == ["Lambda.TooManyRequestsException"] * 2
    assert result.retries == 2
    assert 3 <= result.simulated_seconds < 5
    assert aws.runtime.count(probe) == before + 1


def test_matching_limits_a_fault_to_calls_whose_payload_contains_the_text(aws, probe):
    # Given: a fault for one execution's payloads only
    with aws.faults.lambda_service_error(probe, times=None, matching="execution-A") as fault:
        # When
        _, other = _invoke(aws, probe, {"execution": "execution-B"})
        with pytest.raises(ClientError) as raised:
            _invoke(aws, probe, {"execution": "execution-A"})
    # Then
    assert other == {"echo": {"execution": "execution-B"}}
    assert raised.value.response["Error"]["Code"] == "ServiceException"
    assert fault.hits == 1


# -- Lambda: timeouts --------------------------------------------------------------------------
def test_timed_out_function_lasts_its_timeout_then_fails_with_sandbox_timedout(aws, probe, bucket):
    # AWS: a function still running at its timeout (30 s here) is stopped; the error type is
    # Sandbox.Timedout and the invocation lasted the whole timeout.
    key = unique("never-written")
    started = aws.clock.now()
    with aws.faults.lambda_timed_out(probe) as fault:
        response, error = _invoke(aws, probe, {"action": "put", "bucket": bucket, "key": key})
        elapsed = aws.clock.now() - started
        _, after = _invoke(aws, probe, {"n": 3})
    assert response["FunctionError"] == "Unhandled"
    assert error["errorType"] == "Sandbox.Timedout"
    assert "Task timed out after 30.00 seconds" in error["errorMessage"]
    assert elapsed >= 30
    assert fault.hits == 1 and after == {"echo": {"n": 3}}
    # The handler never ran: nothing was written.
    assert aws.client("s3").list_objects_v2(Bucket=bucket, Prefix=key)["KeyCount"] == 0
    assert [r["error"] for r in aws.runtime.invocations if r["function"] == probe][-2:] == ["Sandbox.Timedout", None]


def test_timed_out_function_with_run_handler_keeps_its_side_effects_but_loses_its_answer(aws, probe, bucket):
    # A handler that did its work and then hung: what a retried task must not do twice.
    key = unique("written-then-timed-out")
    with aws.faults.lambda_timed_out(probe, run_handler=True):
        response, error = _invoke(aws, probe, {"action": "put", "bucket": bucket, "key": key})
    assert error["errorType"] == "Sandbox.Timedout"
    assert aws.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read() == b"written by the probe"


def test_step_functions_sees_the_timeout_as_sandbox_timedout_and_can_retry_it(aws, role_arn, probe):
    machine = _machine(aws, role_arn, _invoke_task(probe, retry_on="Sandbox.Timedout"))
    with aws.faults.lambda_timed_out(probe, times=1):
        result = run(aws, machine, {})
    assert result.status == "SUCCEEDED"
    assert [e for e, _ in _task_failures(result)] == ["Sandbox.Timedout"]
    assert 31 <= result.simulated_seconds < 35  # the 30 s timeout, then 1 s back-off


# -- S3 ----------------------------------------------------------------------------------------
def test_throttled_s3_operation_answers_503_slow_down_for_its_first_calls(aws, bucket):
    # AWS: S3 asks clients to slow down with HTTP 503 and error code SlowDown.
    s3 = _no_retry_client(aws, "s3")
    key = unique("object")
    s3.put_object(Bucket=bucket, Key=key, Body=b"payload")
    with aws.faults.s3_throttled("GetObject", bucket=bucket, times=1) as fault:
        with pytest.raises(ClientError) as raised:
            s3.get_object(Bucket=bucket, Key=key)
        s3.put_object(Bucket=bucket, Key=key, Body=b"payload")  # another operation goes through
        second = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert raised.value.response["Error"]["Code"] == "SlowDown"
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert second == b"payload" and fault.hits == 1 and fault.failed == [key]


def test_s3_fault_names_its_bucket_and_key(aws, bucket):
    # Given: PutObject throttled in this module's bucket, for keys containing "slow/" only
    s3 = _no_retry_client(aws, "s3")
    other_bucket = unique("fault-other")
    s3.create_bucket(Bucket=other_bucket)
    with aws.faults.s3_throttled("PutObject", bucket=bucket, matching="slow/", times=None) as fault:
        # When
        s3.put_object(Bucket=other_bucket, Key="slow/a", Body=b"x")
        s3.put_object(Bucket=bucket, Key="fast/a", Body=b"x")
        with pytest.raises(ClientError) as raised:
            s3.put_object(Bucket=bucket, Key="slow/a", Body=b"x")
    # Then
    assert raised.value.response["Error"]["Code"] == "SlowDown"
    assert fault.failed == ["slow/a"]
    assert s3.list_objects_v2(Bucket=bucket, Prefix="slow/")["KeyCount"] == 0


def test_boto3_inside_a_handler_retries_s3_throttling_by_itself(aws, probe, bucket):
    # AWS SDKs retry SlowDown with back-off: two throttled GetObject calls cost the handler
    # nothing but time.
    key = unique("read-by-handler")
    aws.client("s3").put_object(Bucket=bucket, Key=key, Body=b"stored")
    with aws.faults.s3_throttled("GetObject", bucket=bucket, times=2) as fault:
        response, body = _invoke(aws, probe, {"action": "get", "bucket": bucket, "key": key})
    assert "FunctionError" not in response and body == {"body": "stored"}
    assert fault.hits == 2


# -- DynamoDB ----------------------------------------------------------------------------------
@pytest.mark.parametrize("error", ["ProvisionedThroughputExceededException", "ThrottlingException"])
def test_throttled_dynamodb_operation_answers_400_with_the_throttling_error(aws, table, error):
    dynamodb = _no_retry_client(aws, "dynamodb")
    with aws.faults.dynamodb_throttled("GetItem", table=table, error=error) as fault:
        dynamodb.put_item(TableName=table, Item={"pk": {"S": unique("other-operation")}})
        with pytest.raises(ClientError) as raised:
            dynamodb.get_item(TableName=table, Key={"pk": {"S": "present"}})
        item = dynamodb.get_item(TableName=table, Key={"pk": {"S": "present"}})["Item"]
    assert raised.value.response["Error"]["Code"] == error
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert item == {"pk": {"S": "present"}} and fault.hits == 1 and fault.failed == [table]


def test_step_functions_dynamodb_integration_names_and_retries_throttling(aws, role_arn, table):
    # AWS: the dynamodb:getItem integration fails with DynamoDB.ProvisionedThroughputExceededException.
    task = {
        "Resource": "arn:aws:states:::dynamodb:getItem",
        "Parameters": {"TableName": table, "Key": {"pk": {"S": "present"}}},
        "ResultSelector": {"pk.$": "$.Item.pk.S"},
        "Retry": [{"ErrorEquals": ["DynamoDB.ProvisionedThroughputExceededException"], **RETRYABLE}],
    }
    with aws.faults.dynamodb_throttled("GetItem", table=table, times=2):
        result = run(aws, _machine(aws, role_arn, task), {})
    assert (result.status, result.output) == ("SUCCEEDED", {"pk": "present"})
    assert [e for e, _ in _task_failures(result)] == ["DynamoDB.ProvisionedThroughputExceededException"] * 2


# -- Step Functions ----------------------------------------------------------------------------
def _pass_machine(aws, role_arn) -> str:
    definition = {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}
    return aws.client("stepfunctions").create_state_machine(
        name=unique("faults"), definition=json.dumps(definition), roleArn=role_arn
    )["stateMachineArn"]


def test_throttled_start_execution_answers_400_throttling_exception_for_the_matching_input(aws, role_arn):
    # AWS (Step Functions API Reference, "Common Errors"): a request over the API's rate is denied
    # with ThrottlingException, HTTP 400. ``matching`` singles out one execution's input.
    machine = _pass_machine(aws, role_arn)
    sfn = _no_retry_client(aws, "stepfunctions")
    with aws.faults.stepfunctions_throttled("StartExecution", machine=machine, times=None, matching="throttled") as fault:
        with pytest.raises(ClientError) as raised:
            sfn.start_execution(stateMachineArn=machine, input=json.dumps({"alert_id": "throttled"}))
        started = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"alert_id": "other"}))
    assert raised.value.response["Error"] == {"Code": "ThrottlingException", "Message": "Rate exceeded"}
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert started["executionArn"] and fault.hits == 1 and fault.failed == [machine]


def test_boto3_standard_retries_take_step_functions_throttling_as_throttling(aws, role_arn):
    # botocore's standard retry mode retries ThrottlingException with back-off (boto3 guide, "Retries").
    machine = _pass_machine(aws, role_arn)
    sfn = boto3.client(
        "stepfunctions", endpoint_url=aws.endpoint_url, region_name="us-east-1", aws_access_key_id="emulator",
        aws_secret_access_key="emulator", config=Config(retries={"mode": "standard", "max_attempts": 3}),
    )
    with aws.faults.stepfunctions_throttled("StartExecution", machine=machine, times=2) as fault:
        started = sfn.start_execution(stateMachineArn=machine, input="{}")
    assert started["executionArn"] and fault.hits == 2


# -- switching faults on and off ---------------------------------------------------------------
def test_a_fault_is_removed_when_its_block_ends_even_by_an_exception(aws, probe):
    with pytest.raises(RuntimeError), aws.faults.lambda_throttled(probe, times=None):
        assert len(aws.faults.armed) == 1
        raise RuntimeError("the test failed half-way")
    assert aws.faults.armed == []
    _, body = _invoke(aws, probe, {"n": 4})
    assert body == {"echo": {"n": 4}}


def test_times_none_fails_every_matching_call(aws, probe):
    with aws.faults.lambda_throttled(probe, times=None) as fault:
        for _ in range(4):
            with pytest.raises(ClientError):
                _invoke(aws, probe, {})
    assert fault.hits == 4 and not fault.exhausted


def test_an_operation_the_service_does_not_have_is_refused(aws):
    with pytest.raises(ValueError, match="GetObjects"):
        aws.faults.s3_throttled("GetObjects")
    with pytest.raises(ValueError, match="get_item"):
        aws.faults.dynamodb_throttled("get_item")
    with pytest.raises(ValueError, match="start_execution"):
        aws.faults.stepfunctions_throttled("start_execution")
    assert aws.faults.armed == []


# -- recognising S3 operations -----------------------------------------------------------------
class _Sent(Exception):
    pass


S3_CALLS = {
    "GetObject": lambda s3: s3.get_object(Bucket="b", Key="a/b.json"),
    "HeadObject": lambda s3: s3.head_object(Bucket="b", Key="k"),
    "PutObject": lambda s3: s3.put_object(Bucket="b", Key="a/b c.json", Body=b"x"),
    "CopyObject": lambda s3: s3.copy_object(Bucket="b", Key="k2", CopySource="b/k"),
    "DeleteObject": lambda s3: s3.delete_object(Bucket="b", Key="k"),
    "DeleteObjects": lambda s3: s3.delete_objects(Bucket="b", Delete={"Objects": [{"Key": "a"}]}),
    "ListObjectsV2": lambda s3: s3.list_objects_v2(Bucket="b", Prefix="x"),
    "ListObjects": lambda s3: s3.list_objects(Bucket="b"),
    "ListBuckets": lambda s3: s3.list_buckets(),
    "HeadBucket": lambda s3: s3.head_bucket(Bucket="b"),
    "CreateMultipartUpload": lambda s3: s3.create_multipart_upload(Bucket="b", Key="k"),
    "UploadPart": lambda s3: s3.upload_part(Bucket="b", Key="k", UploadId="u", PartNumber=1, Body=b"x"),
    "ListParts": lambda s3: s3.list_parts(Bucket="b", Key="k", UploadId="u"),
    "GetObjectTagging": lambda s3: s3.get_object_tagging(Bucket="b", Key="k"),
    "GetBucketPolicy": lambda s3: s3.get_bucket_policy(Bucket="b"),
}


@pytest.mark.parametrize("operation", sorted(S3_CALLS))
def test_s3_requests_are_recognised_by_operation_from_botocores_model(operation):
    # Given: the request boto3 would send (path-style, as to the emulator's endpoint)
    s3 = boto3.client(
        "s3",
        endpoint_url="http://127.0.0.1:1",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )

    def recognise(request, **kwargs):
        url = urlsplit(request.url)
        bucket, _, key = url.path.lstrip("/").partition("/")
        query = dict(parse_qsl(url.query, keep_blank_values=True))
        raise _Sent(
            s3_operation(request.method, bucket, key, query, {k.lower(): v for k, v in request.headers.items()})
        )

    s3.meta.events.register("before-send", recognise)
    # When
    with pytest.raises(_Sent) as sent:
        S3_CALLS[operation](s3)
    # Then
    assert sent.value.args[0] == operation

"""The local emulator behaves as AWS documents, where moto alone does not.

Each test names the AWS behaviour it pins. They run against the emulator the whole app is
deployed into (the ``deployment`` fixture), using small machines and functions of their own.
"""

from __future__ import annotations

import io
import json
import re
import time
import uuid
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from emulator.follow import run

ROOT = Path(__file__).resolve().parents[1]

PROBE_CODE = '''
import datetime, json, os, time

class ProbeFailed(Exception):
    pass

def lambda_handler(event, context):
    action = event.get("action")
    if action == "fail":
        raise ProbeFailed("asked to fail")
    if action == "overrun":
        time.sleep(10_000)
    started = time.time()
    time.sleep(event.get("sleep", 0))
    return {
        "slept": round(time.time() - started, 3),
        "now": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "greeting": os.environ.get("GREETING"),
        "function_name": context.function_name,
        "memory": context.memory_limit_in_mb,
        "remaining_ms": context.get_remaining_time_in_millis(),
    }
'''


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def aws(deployment):
    return deployment.aws


@pytest.fixture(scope="module")
def role_arn(aws):
    iam = aws.client("iam")
    return iam.create_role(RoleName=_unique("fidelity"), AssumeRolePolicyDocument="{}")["Role"]["Arn"]


@pytest.fixture(scope="module")
def probe_arn(aws, role_arn):
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("probe.py", PROBE_CODE)
    return aws.client("lambda").create_function(
        FunctionName=_unique("probe"),
        Runtime="python3.13",
        Role=role_arn,
        Handler="probe.lambda_handler",
        Code={"ZipFile": archive.getvalue()},
        Timeout=900,
        MemorySize=512,
        Environment={"Variables": {"GREETING": "hello from the function's environment"}},
    )["FunctionArn"]


def _machine(aws, role_arn, definition: dict) -> str:
    return aws.client("stepfunctions").create_state_machine(
        name=_unique("fidelity"), definition=json.dumps(definition), roleArn=role_arn
    )["stateMachineArn"]


def _invoke(aws, function_arn: str, payload: dict, **kwargs):
    response = aws.client("lambda").invoke(FunctionName=function_arn, Payload=json.dumps(payload), **kwargs)
    return response, response["Payload"].read()


# -- Lambda runtime ----------------------------------------------------------------------------
def test_lambda_runs_the_functions_own_code_with_its_environment_and_context(aws, probe_arn):
    # When
    response, body = _invoke(aws, probe_arn, {})
    # Then
    result = json.loads(body)
    assert "FunctionError" not in response
    assert result["greeting"] == "hello from the function's environment"
    assert result["function_name"] == probe_arn.rsplit(":", 1)[-1]
    assert result["memory"] == 512
    assert 0 < result["remaining_ms"] <= 900_000


def test_lambda_exception_follows_the_lambda_error_contract(aws, probe_arn):
    # AWS: an unhandled exception answers 200 with X-Amz-Function-Error: Unhandled and a body
    # carrying errorType (the exception class), errorMessage and stackTrace.
    response, body = _invoke(aws, probe_arn, {"action": "fail"})
    error = json.loads(body)
    assert response["FunctionError"] == "Unhandled"
    assert error["errorType"] == "ProbeFailed"
    assert error["errorMessage"] == "asked to fail"
    assert isinstance(error["stackTrace"], list)


def test_lambda_past_its_timeout_fails_as_sandbox_timedout(aws, probe_arn):
    # AWS: a function still running at its configured timeout is stopped; the error type is
    # Sandbox.Timedout. Here the timeout (900 s) passes in simulated time.
    started = time.monotonic()
    response, body = _invoke(aws, probe_arn, {"action": "overrun"})
    error = json.loads(body)
    assert response["FunctionError"] == "Unhandled"
    assert error["errorType"] == "Sandbox.Timedout"
    assert "Task timed out after 900.00 seconds" in error["errorMessage"]
    assert time.monotonic() - started < 30


def test_lambda_event_invocation_returns_202_at_once_and_runs_later(aws, probe_arn):
    before = aws.runtime.count(probe_arn.rsplit(":", 1)[-1])
    response, body = _invoke(aws, probe_arn, {"sleep": 60}, InvocationType="Event")
    assert response["StatusCode"] == 202 and body == b""
    deadline = time.monotonic() + 30
    while aws.runtime.count(probe_arn.rsplit(":", 1)[-1]) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert aws.runtime.count(probe_arn.rsplit(":", 1)[-1]) == before + 1


def test_handler_sleep_and_clock_are_simulated(aws, probe_arn):
    # Given: a handler that sleeps 10 minutes
    started_wall = time.monotonic()
    started_sim = aws.clock.now()
    # When
    _, body = _invoke(aws, probe_arn, {"sleep": 600})
    # Then: the handler saw 600 s pass on its own clock, the emulator's clock agrees, and it
    # took a small fraction of that in real time.
    result = json.loads(body)
    assert 600 <= result["slept"] < 601
    assert aws.clock.now() - started_sim >= 600
    handler_now = datetime.fromisoformat(result["now"]).timestamp()
    assert abs(handler_now - aws.clock.now()) < 5
    assert time.monotonic() - started_wall < 10


# -- Step Functions: simulated time -----------------------------------------------------------
def test_wait_states_and_retry_backoff_take_simulated_time(aws, role_arn, probe_arn):
    # Given: a 15-minute Wait, then a task retried twice with 60 s and 120 s back-off
    definition = {
        "StartAt": "Wait A Quarter Hour",
        "TimeoutSeconds": 7200,
        "States": {
            "Wait A Quarter Hour": {"Type": "Wait", "Seconds": 900, "Next": "Fail Twice"},
            "Fail Twice": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": probe_arn, "Payload": {"action": "fail"}},
                "Retry": [{"ErrorEquals": ["ProbeFailed"], "IntervalSeconds": 60, "MaxAttempts": 2, "BackoffRate": 2}],
                "Catch": [{"ErrorEquals": ["ProbeFailed"], "Next": "Caught"}],
                "End": True,
            },
            "Caught": {"Type": "Pass", "End": True},
        },
    }
    # When
    result = run(aws, _machine(aws, role_arn, definition), {})
    # Then: Retry/Catch matched the handler's exception class name, and 900 + 60 + 120 s passed
    assert result.status == "SUCCEEDED"
    assert result.entered("Caught") == 1
    assert result.retries == 2
    assert 1080 <= result.simulated_seconds < 1090
    assert result.wall_seconds < 15


def test_machine_timeout_is_enforced_in_simulated_time(aws, role_arn):
    definition = {
        "StartAt": "Wait An Hour",
        "TimeoutSeconds": 60,
        "States": {"Wait An Hour": {"Type": "Wait", "Seconds": 3600, "End": True}},
    }
    result = run(aws, _machine(aws, role_arn, definition), {})
    assert result.status == "TIMED_OUT"
    assert 60 <= result.simulated_seconds < 65
    assert result.wall_seconds < 15


def test_wait_timestamp_is_read_as_utc_whatever_the_local_timezone(aws, role_arn, monkeypatch):
    # AWS: a Wait Timestamp ("...Z") is an absolute UTC instant. moto compared it with the
    # local wall clock, off by the UTC offset on any machine not running in UTC.
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        target = datetime.fromtimestamp(aws.clock.now(), timezone.utc) + timedelta(minutes=30)
        definition = {
            "StartAt": "Wait Until",
            "TimeoutSeconds": 86400,
            "States": {"Wait Until": {"Type": "Wait", "TimestampPath": "$.until", "End": True}},
        }
        result = run(aws, _machine(aws, role_arn, definition), {"until": target.strftime("%Y-%m-%dT%H:%M:%SZ")})
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert result.status == "SUCCEEDED"
    assert 1790 <= result.simulated_seconds <= 1801


def test_a_slow_host_does_not_make_simulated_time_run_ahead(aws, role_arn, probe_arn):
    # AWS: time passes only as it passes. The emulator jumps its clock when nothing is working;
    # the engine's calls to Lambda must count as work from start to end, however slow the host,
    # while a handler's sleep inside such a call still passes in simulated time.
    # Given: every engine call to Lambda delayed 200 ms of real time before it is sent
    from moto.stepfunctions.parser.asl.utils import boto_client

    engine_lambda = boto_client.boto_client_for("us-east-1", "lambda")

    def slow_host(**_):
        time.sleep(0.2)

    definition = {
        "StartAt": "Sleep Ten Minutes",
        "TimeoutSeconds": 3600,
        "States": {
            "Sleep Ten Minutes": {
                "Type": "Task",
                "Resource": "arn:aws:states:::lambda:invoke",
                "Parameters": {"FunctionName": probe_arn, "Payload": {"sleep": 600}},
                "End": True,
            }
        },
    }
    engine_lambda.meta.events.register("before-send", slow_host)
    try:
        # When
        result = run(aws, _machine(aws, role_arn, definition), {})
    finally:
        engine_lambda.meta.events.unregister("before-send", slow_host)
    # Then: no jump to the machine's timeout during the delay; the handler's 600 s passed
    assert result.status == "SUCCEEDED", result.error
    assert 600 <= result.simulated_seconds < 620
    assert result.wall_seconds < 15


# -- Step Functions: fidelity fixes -----------------------------------------------------------
def test_concurrent_lambda_tasks_in_a_map_each_succeed(aws, role_arn, probe_arn):
    # AWS: a Map's iterations call Lambda independently. moto built a boto3 client per call from
    # one shared session, and concurrent iterations failed at random with States.Runtime.
    definition = {
        "StartAt": "Call Probe For Each",
        "TimeoutSeconds": 300,
        "States": {
            "Call Probe For Each": {
                "Type": "Map",
                "ItemsPath": "$.items",
                "MaxConcurrency": 40,
                "ItemProcessor": {
                    "ProcessorConfig": {"Mode": "INLINE"},
                    "StartAt": "Call Probe",
                    "States": {
                        "Call Probe": {
                            "Type": "Task",
                            "Resource": "arn:aws:states:::lambda:invoke",
                            "Parameters": {"FunctionName": probe_arn, "Payload": {}},
                            "ResultSelector": {"ok": True},
                            "End": True,
                        }
                    },
                },
                "End": True,
            }
        },
    }
    result = run(aws, _machine(aws, role_arn, definition), {"items": list(range(40))})
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output == [{"ok": True}] * 40


def test_empty_jsonpath_filter_result_is_an_empty_list(aws, role_arn):
    # AWS: "$[?(@.status == 'failed')]" over results with no failure yields []; moto raised
    # States.Runtime ("could not be found in the input").
    definition = {
        "StartAt": "Filter Failed Items",
        "TimeoutSeconds": 60,
        "States": {
            "Filter Failed Items": {
                "Type": "Pass",
                "Parameters": {"failed.$": "$.results[?(@.status == 'failed')]"},
                "End": True,
            }
        },
    }
    result = run(aws, _machine(aws, role_arn, definition), {"results": [{"id": "A", "status": "succeeded"}]})
    assert result.status == "SUCCEEDED"
    assert result.output == {"failed": []}


def test_executions_started_without_a_name_get_unique_names(aws, role_arn):
    # AWS: StartExecution without a name generates a UUID; moto named every one "None".
    arn = _machine(aws, role_arn, {"StartAt": "Done", "TimeoutSeconds": 60, "States": {"Done": {"Type": "Succeed"}}})
    sfn = aws.client("stepfunctions")
    first = sfn.start_execution(stateMachineArn=arn)["executionArn"]
    second = sfn.start_execution(stateMachineArn=arn)["executionArn"]
    assert first != second
    assert uuid.UUID(first.rsplit(":", 1)[-1]) and uuid.UUID(second.rsplit(":", 1)[-1])


@pytest.mark.parametrize("value", ["plain text", None, 42, [1, 2], {"a": "b"}, True])
def test_describe_execution_output_is_json_text_for_every_output_type(aws, role_arn, value):
    # AWS: output is the JSON encoding of the result ("\"plain text\"", "null", ...); moto
    # returned a string unquoted and left a null output out.
    definition = {"StartAt": "Echo", "TimeoutSeconds": 60, "States": {"Echo": {"Type": "Pass", "InputPath": "$.value", "End": True}}}
    result = run(aws, _machine(aws, role_arn, definition), {"value": value})
    description = aws.client("stepfunctions").describe_execution(executionArn=result.execution_arn)
    assert json.loads(description["output"]) == value


# -- Events ------------------------------------------------------------------------------------
def _queue(aws) -> tuple[str, str]:
    sqs = aws.client("sqs")
    url = sqs.create_queue(QueueName=_unique("fidelity"))["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return url, arn


def _receive(aws, url: str, expected: int, timeout: float = 10) -> list[str]:
    sqs, bodies, deadline = aws.client("sqs"), [], time.monotonic() + timeout
    while len(bodies) < expected and time.monotonic() < deadline:
        for message in sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", []):
            bodies.append(message["Body"])
        time.sleep(0.05)
    return bodies


def test_execution_status_change_event_reaches_sns_through_rule_and_input_transformer(aws, role_arn):
    # Given: a rule on FAILED executions of one machine, to a topic (subscribed by a queue),
    # with an input transformer; and a machine that fails
    arn = _machine(aws, role_arn, {"StartAt": "Boom", "TimeoutSeconds": 60, "States": {
        "Boom": {"Type": "Fail", "Error": "Exploded", "Cause": 'a "quoted" cause'}}})
    queue_url, queue_arn = _queue(aws)
    topic = aws.client("sns").create_topic(Name=_unique("status"))["TopicArn"]
    aws.client("sns").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "true"})
    events = aws.client("events")
    rule = _unique("status")
    events.put_rule(Name=rule, EventPattern=json.dumps({
        "source": ["aws.states"], "detail-type": ["Step Functions Execution Status Change"],
        "detail": {"status": ["FAILED"], "stateMachineArn": [arn]}}))
    events.put_targets(Rule=rule, Targets=[{"Id": "topic", "Arn": topic, "InputTransformer": {
        "InputPathsMap": {"name": "$.detail.name", "status": "$.detail.status", "error": "$.detail.error", "cause": "$.detail.cause"},
        "InputTemplate": '{"summary": "Execution <name> <status>", "error": <error>, "cause": <cause>}'}}])
    # When
    result = run(aws, arn, {}, name="doomed")
    # Then: one message, rendered; the RUNNING event did not match the rule
    bodies = _receive(aws, queue_url, expected=1)
    assert result.status == "FAILED"
    assert [json.loads(b) for b in bodies] == [{"summary": "Execution doomed FAILED", "error": "Exploded", "cause": 'a "quoted" cause'}]


def test_scheduled_rule_fires_on_demand_with_a_scheduled_event(deployment, aws):
    queue_url, queue_arn = _queue(aws)
    events = aws.client("events")
    rule = _unique("hourly")
    events.put_rule(Name=rule, ScheduleExpression="rate(1 hour)")
    events.put_targets(Rule=rule, Targets=[{"Id": "queue", "Arn": queue_arn}])
    assert aws.router.fire_schedule(rule) == 1
    [body] = _receive(aws, queue_url, expected=1)
    event = json.loads(body)
    assert event["detail-type"] == "Scheduled Event" and event["source"] == "aws.events"
    assert event["resources"] == [f"arn:aws:events:us-east-1:123456789012:rule/{rule}"]


# -- Deployment ----------------------------------------------------------------------------------
def test_every_stack_deployed_with_outputs_and_fully_resolved_machines(deployment):
    cfn = deployment.client("cloudformation")
    stacks = {s["StackName"]: s for s in cfn.describe_stacks()["Stacks"]}
    for name in ("AlertNotificationStack", "JobPollerStack", "MapRetryStack", "MonitoringStack"):
        assert stacks[name]["StackStatus"] == "CREATE_COMPLETE", name
        assert stacks[name].get("Outputs"), f"{name} published no outputs"
    sfn = deployment.client("stepfunctions")
    for machine in sfn.list_state_machines()["stateMachines"]:
        if "fidelity" in machine["name"]:
            continue
        definition = sfn.describe_state_machine(stateMachineArn=machine["stateMachineArn"])["definition"]
        assert definition and "${" not in definition, machine["name"]
        assert "States" in json.loads(definition)


def test_functions_deployed_by_cloudformation_keep_their_layers(deployment):
    # AWS: AWS::Lambda::Function Layers attach the layers; moto's CloudFormation dropped them, so
    # every function importing the shared layer failed with Runtime.ImportModuleError.
    lambda_ = deployment.client("lambda")
    functions = [f for f in lambda_.list_functions()["Functions"] if f["FunctionName"].startswith("MapRetryStack-")]
    assert functions
    for function in functions:
        layers = [layer["Arn"] for layer in function.get("Layers", [])]
        assert any(":layer:MapRetryStack-LambdaLayersShared" in arn for arn in layers), function["FunctionName"]
        assert any(":layer:AWSLambdaPowertoolsPythonV3" in arn for arn in layers), function["FunctionName"]


def test_the_app_never_imports_the_emulator():
    sources = [ROOT / "app.py", *(ROOT / "stacks").rglob("*.py"), *(ROOT / "lambdas").rglob("*.py")]
    imports = re.compile(r"^\s*(from|import)\s+emulator\b", re.MULTILINE)
    offenders = [str(p.relative_to(ROOT)) for p in sources if imports.search(p.read_text())]
    assert offenders == []

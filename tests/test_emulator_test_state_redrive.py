"""TestState and RedriveExecution in the local emulator, as AWS documents them.

The TestState tests test the project's own decisions state by state, on the definitions the app
deployed (read back with DescribeStateMachine), with plain boto3 calls: pointed at AWS with the
same machine ARNs they would run unchanged. Expected values come from the ASL and the API pages:
https://docs.aws.amazon.com/step-functions/latest/apireference/API_TestState.html
https://docs.aws.amazon.com/step-functions/latest/dg/test-state-isolation.html
"""

from __future__ import annotations

import datetime
import json
import time

import boto3
import pytest
from botocore.config import Config

from emulator.follow import follow
from tests.emulator_helpers import permissive_role, put_target, unique, wait_for_event


@pytest.fixture(scope="module")
def sfn(aws):
    # TestState is host-prefixed ("sync-"): against a local endpoint the prefix must not be added.
    env = aws.environment
    return boto3.client(
        "stepfunctions",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        region_name=env["AWS_REGION"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=env["AWS_SESSION_TOKEN"],
        config=Config(inject_host_prefix=False),
    )


def test_a_client_given_the_variables_serve_prints_reaches_test_state(aws, role_arn, monkeypatch):
    # TestState is host-prefixed ("sync-"); AWS_DISABLE_HOST_PREFIX_INJECTION=true leaves the prefix off
    # (AWS SDKs and Tools Reference Guide, "Host prefix injection"), as the AWS CLI and botocore read it.
    # Given: only the environment `serve` prints, as a shell that exported its lines has
    for key, value in aws.environment.items():
        monkeypatch.setenv(key, value)
    assert aws.environment["AWS_DISABLE_HOST_PREFIX_INJECTION"] == "true"
    # When
    result = boto3.client("stepfunctions").test_state(
        definition=json.dumps({"Type": "Pass", "Result": {"reached": True}, "End": True}), roleArn=role_arn, input="{}")
    # Then
    assert (result["status"], json.loads(result["output"])) == ("SUCCEEDED", {"reached": True})


@pytest.fixture(scope="module")
def machines(deployment, sfn):
    """Each deployed machine's definition and role, as DescribeStateMachine gives them."""
    names = ("alert", "poller", "callback", "export-poller", "map-retry")
    described = {name: sfn.describe_state_machine(stateMachineArn=deployment.machine_arn(name)) for name in names}
    return {name: (d["definition"], d["roleArn"]) for name, d in described.items()}


def _test_state(sfn, machines, machine: str, state: str, payload: dict, **kwargs) -> dict:
    definition, role_arn = machines[machine]
    return sfn.test_state(definition=definition, stateName=state, roleArn=role_arn, input=json.dumps(payload), **kwargs)


@pytest.mark.parametrize(
    ("status", "next_state"),
    [("succeeded", "Job Succeeded"), ("failed", "Job Failed"), ("running", "Wait Before Next Poll")],
)
def test_job_complete_routes_each_job_status(sfn, machines, status, next_state):
    # Given the poller's status read (a variable), When "Job Complete?" decides
    payload = {"job": {}, "poll_interval_seconds": 30}
    result = _test_state(
        sfn, machines, "poller", "Job Complete?", payload,
        variables=json.dumps({"job_status": {"status": status, "elapsed_seconds": 5}}),
    )
    # Then a Choice passes its input on unchanged to the rule's Next, or to Default
    assert result["status"] == "SUCCEEDED"
    assert result["nextState"] == next_state
    assert json.loads(result["output"]) == payload


def test_get_job_status_assigns_the_status_read(sfn, machines):
    # Given the function's answer (mocked), When "Get Job Status" runs at DEBUG
    answer = {"StatusCode": 200, "Payload": {"status": "running", "elapsed_seconds": 40, "error_message": None}}
    payload = {"job": {}, "poll_interval_seconds": 30}
    result = _test_state(
        sfn, machines, "poller", "Get Job Status", payload, mock={"result": json.dumps(answer)}, inspectionLevel="DEBUG",
    )
    # Then the answer's Payload is assigned to $job_status and the state's input passes on
    assert result["status"] == "SUCCEEDED"
    assert result["nextState"] == "Job Complete?"
    assert json.loads(result["output"]) == payload
    inspection = result["inspectionData"]
    assert json.loads(inspection["input"]) == payload
    assert json.loads(inspection["result"]) == answer
    assert json.loads(inspection["variables"])["job_status"] == answer["Payload"]


def test_get_job_status_catches_job_timeout(sfn, machines):
    # Given the function raises JobTimeout, When "Get Job Status" runs
    error = {"error": "JobTimeout", "cause": "The job ran longer than 60 seconds"}
    result = _test_state(sfn, machines, "poller", "Get Job Status", {"job": {}}, mock={"errorOutput": error}, inspectionLevel="DEBUG")
    # Then its only Catcher (no Output: the state output is the error output) goes to the Fail state
    assert result["status"] == "CAUGHT_ERROR"
    assert result["nextState"] == "Fail With Error Message"
    assert (result["error"], result["cause"]) == (error["error"], error["cause"])
    assert json.loads(result["output"]) == {"Error": "JobTimeout", "Cause": error["cause"]}
    assert result["inspectionData"]["errorDetails"]["catchIndex"] == 0


def test_get_job_status_retries_a_lambda_service_error_then_gives_up(sfn, machines):
    # Given Lambda.ServiceException, which the second Retrier matches (the first is throttling's,
    # Lambda.TooManyRequestsException; IntervalSeconds 2, BackoffRate 2, MaxAttempts 6, JitterStrategy FULL),
    # after one retry already made
    error = {"error": "Lambda.ServiceException", "cause": "Service unavailable"}
    retriable = _test_state(
        sfn, machines, "poller", "Get Job Status", {}, mock={"errorOutput": error},
        stateConfiguration={"retrierRetryCount": 1}, inspectionLevel="DEBUG",
    )
    # Then the state is retried by that Retrier, within 2 * 2^1 seconds (full jitter waits
    # anywhere from 0 to the interval)
    assert retriable["status"] == "RETRIABLE"
    assert retriable["nextState"] == "Get Job Status"
    details = retriable["inspectionData"]["errorDetails"]
    assert details["retryIndex"] == 1
    assert 0 <= details["retryBackoffIntervalSeconds"] <= 4
    # And once its six retries are spent, no Catcher matches: the state fails
    exhausted = _test_state(sfn, machines, "poller", "Get Job Status", {}, mock={"errorOutput": error}, stateConfiguration={"retrierRetryCount": 6})
    assert exhausted["status"] == "FAILED"
    assert (exhausted["error"], exhausted["cause"]) == (error["error"], error["cause"])
    assert "nextState" not in exhausted


ALERT_LOOP = {
    "config": {"alert_id": "a-1", "message": "m", "levels": [["u1", "u2"]], "rounds": 2, "interval_seconds": 60},
    "status": "active",
    "acted_by": {"acknowledged_by": "U012AB3CD"},
    "outcome": {"stopped_reason": "count_reached"},
    "rounds_done": 0,
    "due": True,
    "sent": 0,
    "failed": [],
}


@pytest.mark.parametrize(
    ("changes", "next_state"),
    [
        ({}, "Notify This Round's Users"),
        ({"rounds_done": 1, "due": False, "sent": 2}, "Wait Before Next Round"),
        ({"rounds_done": 1, "due": True, "sent": 2}, "Notify This Round's Users"),
        ({"rounds_done": 2, "due": False, "sent": 4}, "End Escalation"),
        ({"rounds_done": 2, "due": False, "failed": [{"round": 1, "user": "u1", "error": "E"}]}, "Notification Delivery Failed"),
        ({"status": "snoozed"}, "Alert Status Is Invalid"),
    ],
)
def test_alert_loop_decides_each_round(sfn, machines, changes, next_state):
    result = _test_state(sfn, machines, "alert", "Keep Escalating?", {}, variables=json.dumps({**ALERT_LOOP, **changes}))
    assert (result["status"], result["nextState"]) == ("SUCCEEDED", next_state)


def test_an_acknowledged_alert_ends_naming_who_acknowledged(sfn, machines):
    variables = {**ALERT_LOOP, "status": "acknowledged", "rounds_done": 1, "sent": 2}
    result = _test_state(
        sfn, machines, "alert", "Keep Escalating?", {}, variables=json.dumps(variables), inspectionLevel="DEBUG"
    )
    assert (result["status"], result["nextState"]) == ("SUCCEEDED", "End Escalation")
    assigned = json.loads(result["inspectionData"]["variables"])
    assert assigned["outcome"] == {"stopped_reason": "acknowledged", "acknowledged_by": "U012AB3CD"}


@pytest.mark.parametrize(
    ("record", "next_state"),
    [
        ({"retry": True, "remaining_count": 2, "fail_on_remaining": True}, "Wait Before Next Item Pass"),
        ({"retry": True, "remaining_count": 2, "fail_on_remaining": True, "manifest": {}}, "Wait Before Next Chunk Pass"),
        ({"retry": False, "remaining_count": 2, "fail_on_remaining": True}, "Give Up On Failed Items"),
        ({"retry": False, "remaining_count": 2, "fail_on_remaining": False}, "Report Results"),
        ({"retry": False, "remaining_count": 0, "fail_on_remaining": True}, "Report Results"),
    ],
)
def test_map_retry_pass_decision(sfn, machines, record, next_state):
    result = _test_state(sfn, machines, "map-retry", "Retry Failed Items?", record)
    assert (result["status"], result["nextState"]) == ("SUCCEEDED", next_state)


@pytest.mark.parametrize(
    ("status", "waited", "next_state"),
    [
        ("COMPLETED", 0, "Export Succeeded"),
        ("FAILED", 0, "Export Failed"),
        ("COMPLETED", 600, "Export Succeeded"),  # a final status wins over the clock
        ("IN_PROGRESS", 599, "Wait Before Next Check"),
        ("IN_PROGRESS", 600, "Export Timed Out"),  # the limit itself included
    ],
)
def test_export_complete_routes_each_export_status_and_times_out_at_the_limit(sfn, machines, status, waited, next_state):
    variables = {"export": {"ExportArn": "arn:x", "ExportStatus": status}, "waited": waited, "settings": {"timeout_seconds": 600}}
    result = _test_state(sfn, machines, "export-poller", "Export Complete?", {}, variables=json.dumps(variables))
    assert (result["status"], result["nextState"]) == ("SUCCEEDED", next_state)


def test_export_wait_counts_the_seconds_it_waits(sfn, machines):
    # The loop's clock is the Wait's own Assign: no state of its own per poll
    variables = {"waited": 120, "settings": {"poll_interval_seconds": 60}}
    result = _test_state(
        sfn, machines, "export-poller", "Wait Before Next Check", {}, variables=json.dumps(variables), inspectionLevel="DEBUG"
    )
    assert (result["status"], result["nextState"]) == ("SUCCEEDED", "Describe Export")
    assert json.loads(result["inspectionData"]["variables"])["waited"] == 180


@pytest.mark.parametrize(("timeout_seconds", "window"), [(120, 119), (1800, 300)])
def test_callback_validation_sets_a_heartbeat_window_under_the_timeout(sfn, machines, timeout_seconds, window):
    # HeartbeatSeconds must be smaller than TimeoutSeconds (https://states-language.net/spec.html#task-state)
    answer = {"StatusCode": 200, "Payload": {"job": {}, "timeout_seconds": timeout_seconds}}
    result = _test_state(
        sfn, machines, "callback", "Validate Job Input", {"job": {}, "timeout_seconds": timeout_seconds},
        mock={"result": json.dumps(answer)}, inspectionLevel="DEBUG",
    )
    assert (result["status"], result["nextState"]) == ("SUCCEEDED", "Timeout Too Short For A Heartbeat?")
    assert json.loads(result["inspectionData"]["variables"])["heartbeat_seconds"] == window


@pytest.mark.parametrize(
    ("state", "error", "cause"),
    [
        ("Alert Status Is Invalid", "InvalidAlertConfig", "status: must be active"),
        ("Alert Was Deleted", "AlertNotFound", "The item of alert a-1 was deleted"),
        ("Notification Delivery Failed", "NotificationDeliveryFailed", "All 2 notifications of alert a-1 failed"),
    ],
)
def test_an_alert_ends_in_an_error_a_person_can_search_for(sfn, machines, state, error, cause):
    variables = {**ALERT_LOOP, "failed": [{"round": 1, "user": "u1", "error": "E"}, {"round": 1, "user": "u2", "error": "E"}]}
    result = _test_state(sfn, machines, "alert", state, {}, variables=json.dumps(variables))
    assert (result["status"], result["error"]) == ("FAILED", error)
    assert result["cause"].startswith(cause), result["cause"]


JSONATA_LOOP = {
    "QueryLanguage": "JSONata",
    "StartAt": "Notify Next User",
    "States": {
        "Notify Next User": {
            "Type": "Task",
            "Resource": "arn:aws:states:::lambda:invoke",
            "Arguments": {"FunctionName": "notify", "Payload": {"user": "{% $users[$index] %}"}},
            "Assign": {"index": "{% $index + 1 %}", "sent": "{% $sent + ($states.result.Payload.posted ? 1 : 0) %}"},
            "Output": "{% $states.result.Payload %}",
            "Next": "More Users To Notify?",
        },
        "More Users To Notify?": {
            "Type": "Choice",
            "Choices": [{"Condition": "{% $index < $count($users) %}", "Next": "Notify Next User"}],
            "Default": "Done",
        },
        "Done": {"Type": "Succeed"},
    },
}


def test_jsonata_task_assigns_variables_from_its_result(sfn):
    # Given the variables a JSONata loop carries, When its Task runs with a mocked answer
    result = sfn.test_state(
        definition=json.dumps(JSONATA_LOOP), stateName="Notify Next User", inspectionLevel="DEBUG",
        variables=json.dumps({"users": ["ana", "bo"], "index": 0, "sent": 0}),
        mock={"result": json.dumps({"Payload": {"posted": True}})},
    )
    # Then Arguments read the variables, Assign updates them and Output is the payload
    assert (result["status"], result["nextState"]) == ("SUCCEEDED", "More Users To Notify?")
    assert json.loads(result["output"]) == {"posted": True}
    inspection = result["inspectionData"]
    assert json.loads(inspection["afterArguments"]) == {"FunctionName": "notify", "Payload": {"user": "ana"}}
    assert json.loads(inspection["variables"]) == {"users": ["ana", "bo"], "index": 1, "sent": 1}


@pytest.mark.parametrize(("index", "next_state"), [(1, "Notify Next User"), (2, "Done")])
def test_jsonata_choice_reads_variables(sfn, index, next_state):
    result = sfn.test_state(
        definition=json.dumps(JSONATA_LOOP), stateName="More Users To Notify?",
        variables=json.dumps({"users": ["ana", "bo"], "index": index}),
    )
    assert (result["status"], result["nextState"]) == ("SUCCEEDED", next_state)


def test_a_single_state_definition_and_a_fail_state(sfn):
    # A lone state (no stateName) is tested as it is; a Fail state fails with its Error and Cause.
    fail = sfn.test_state(definition=json.dumps({"Type": "Fail", "Error": "JobFailed", "Cause": "runner exited 1"}))
    assert (fail["status"], fail["error"], fail["cause"]) == ("FAILED", "JobFailed", "runner exited 1")
    passed = sfn.test_state(definition=json.dumps({"Type": "Pass", "Result": {"x": 1}, "ResultPath": "$.r", "End": True}), input='{"a": 0}')
    assert (passed["status"], json.loads(passed["output"])) == ("SUCCEEDED", {"a": 0, "r": {"x": 1}})
    assert "nextState" not in passed  # an End state has no next state


def test_an_invalid_definition_is_refused(sfn):
    with pytest.raises(sfn.exceptions.InvalidDefinition):
        sfn.test_state(definition="{not json")


# -- RedriveExecution -------------------------------------------------------------------------------
# https://docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html: "it continues the
# failed execution from the unsuccessful step and uses the same input ... successful steps ... aren't
# rerun"; redriveCount counts redrives and $$.Execution.RedriveCount is the same number.
READ_AFTER_PREPARE = {
    "StartAt": "Prepare",
    "States": {
        "Prepare": {"Type": "Pass", "Parameters": {"Bucket.$": "$.bucket", "Key": "ready.txt"}, "ResultPath": "$.object", "Next": "Read Object"},
        "Read Object": {
            "Type": "Task",
            "Resource": "arn:aws:states:::aws-sdk:s3:headObject",
            "Parameters": {"Bucket.$": "$.object.Bucket", "Key.$": "$.object.Key"},
            "ResultSelector": {"size.$": "$.ContentLength", "redrive_count.$": "$$.Execution.RedriveCount"},
            "End": True,
        },
    },
}


def _finished(sfn, execution_arn: str) -> dict:
    deadline = time.monotonic() + 30
    while (described := sfn.describe_execution(executionArn=execution_arn))["status"] == "RUNNING":
        assert time.monotonic() < deadline, f"{execution_arn} still running"
        time.sleep(0.05)
    return described


@pytest.fixture(scope="module")
def read_machine(aws, sfn):
    role = permissive_role(aws, "redrive")
    return sfn.create_state_machine(name=unique("redrive"), definition=json.dumps(READ_AFTER_PREPARE), roleArn=role)["stateMachineArn"]


def test_redrive_reruns_only_the_failed_state(aws, sfn, read_machine):
    # Given an execution that failed reading an object that was not there yet
    s3 = aws.client("s3")
    bucket = unique("redrive-bucket")
    s3.create_bucket(Bucket=bucket)
    execution_arn = sfn.start_execution(stateMachineArn=read_machine, input=json.dumps({"bucket": bucket}))["executionArn"]
    failed = _finished(sfn, execution_arn)
    assert (failed["status"], failed["redriveCount"], failed["redriveStatus"]) == ("FAILED", 0, "REDRIVABLE")
    # When the object is written and the execution redriven
    s3.put_object(Bucket=bucket, Key="ready.txt", Body=b"ready")
    redriven_at = sfn.redrive_execution(executionArn=execution_arn)["redriveDate"]
    # Then it succeeds under the same ARN, the succeeded Pass state is not entered again, and the
    # failed Task is entered again with its original input
    done = _finished(sfn, execution_arn)
    assert done["status"] == "SUCCEEDED", (done.get("error"), done.get("cause"))
    assert json.loads(done["output"]) == {"size": 5, "redrive_count": 1}
    assert (done["redriveCount"], done["redriveDate"]) == (1, redriven_at)
    assert done["redriveStatus"] == "NOT_REDRIVABLE"
    events = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    types = [event["type"] for event in events]
    assert types.count("PassStateEntered") == 1
    entered = [event["stateEnteredEventDetails"] for event in events if event["type"] == "TaskStateEntered"]
    assert len(entered) == 2 and entered[0]["input"] == entered[1]["input"]
    assert types.index("ExecutionFailed") < types.index("ExecutionRedriven") < types.index("ExecutionSucceeded")
    redriven = next(event for event in events if event["type"] == "ExecutionRedriven")
    assert redriven["executionRedrivenEventDetails"] == {"redriveCount": 1}
    # And ListExecutions' redriveFilter tells redriven executions from the others
    def listed(redrive_filter: str) -> set[str]:
        executions = sfn.list_executions(stateMachineArn=read_machine, redriveFilter=redrive_filter)["executions"]
        return {execution["executionArn"] for execution in executions}

    assert execution_arn in listed("REDRIVEN")
    assert execution_arn not in listed("NOT_REDRIVEN")


def test_a_poller_failed_on_a_transient_error_completes_without_a_second_job(deployment, aws, sfn):
    # Given a poller whose status reads time out until its retries are spent
    payload = {"job": {"duration_seconds": 20}, "timeout_seconds": 180, "poll_interval_seconds": 10}
    with aws.faults.lambda_timed_out("GetJobStatus", times=None):
        failed = deployment.run("poller", payload, name=unique("redrive-poller"))
    assert (failed.status, failed.error) == ("FAILED", "Sandbox.Timedout")
    # When the transient fault is gone and the execution is redriven
    sfn.redrive_execution(executionArn=failed.execution_arn)
    done = follow(aws, failed.execution_arn)
    # Then it polls the job it started to the end: "Run Job" ran once, before the redrive
    assert done.status == "SUCCEEDED"
    run_job = [e for e in done.events if e["type"] == "TaskStateEntered" and e["stateEnteredEventDetails"]["name"] == "Run Job"]
    assert len(run_job) == 1
    redriven_id = next(e["id"] for e in done.events if e["type"] == "ExecutionRedriven")
    assert run_job[0]["id"] < redriven_id


def test_an_aborted_execution_resumes_in_the_state_it_was_stopped_in(aws, sfn, read_machine):
    # Given an execution stopped in its Wait state
    role_arn = sfn.describe_state_machine(stateMachineArn=read_machine)["roleArn"]
    definition = {
        "StartAt": "Mark",
        "States": {
            "Mark": {"Type": "Pass", "Result": "marked", "ResultPath": "$.mark", "Next": "Wait"},
            "Wait": {"Type": "Wait", "Seconds": 60, "End": True},
        },
    }
    machine = sfn.create_state_machine(name=unique("redrive"), definition=json.dumps(definition), roleArn=role_arn)["stateMachineArn"]
    # The clock is paused until the stop: on the instant clock a pause of a few ms between two calls
    # (a loaded machine, a garbage collection) let the 60 s Wait end before the stop arrived.
    aws.clock.pause()
    try:
        execution_arn = sfn.start_execution(stateMachineArn=machine, input='{"n": 1}')["executionArn"]
        wait_for_event(sfn, execution_arn, "WaitStateEntered")
        sfn.stop_execution(executionArn=execution_arn, error="Operator", cause="stopped to test redrive")
        assert _finished(sfn, execution_arn)["status"] == "ABORTED"
    finally:
        aws.clock.resume()
    # When it is redriven, Then the Wait runs again with the input it was entered with
    sfn.redrive_execution(executionArn=execution_arn)
    done = _finished(sfn, execution_arn)
    assert done["status"] == "SUCCEEDED"
    assert json.loads(done["output"]) == {"n": 1, "mark": "marked"}
    events = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    assert [e["type"] for e in events].count("PassStateEntered") == 1


def test_a_succeeded_or_running_execution_is_not_redrivable(aws, sfn, read_machine):
    # A SUCCEEDED execution (the one above) and a RUNNING one are refused with ExecutionNotRedrivable
    s3 = aws.client("s3")
    bucket = unique("redrive-bucket")
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="ready.txt", Body=b"ready")
    succeeded = sfn.start_execution(stateMachineArn=read_machine, input=json.dumps({"bucket": bucket}))["executionArn"]
    assert _finished(sfn, succeeded)["status"] == "SUCCEEDED"
    with pytest.raises(sfn.exceptions.ExecutionNotRedrivable):
        sfn.redrive_execution(executionArn=succeeded)
    waiting = sfn.create_state_machine(
        name=unique("redrive"), roleArn=sfn.describe_state_machine(stateMachineArn=read_machine)["roleArn"],
        definition=json.dumps({"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 3600, "End": True}}}),
    )["stateMachineArn"]
    running = sfn.start_execution(stateMachineArn=waiting)["executionArn"]
    with pytest.raises(sfn.exceptions.ExecutionNotRedrivable):
        sfn.redrive_execution(executionArn=running)
    sfn.stop_execution(executionArn=running)


HEAD_EACH_KEY = {
    "StartAt": "Check Each Object",
    "States": {
        "Check Each Object": {
            "Type": "Map",
            "MaxConcurrency": 1,
            "ItemsPath": "$.keys",
            "ItemSelector": {"Bucket.$": "$.bucket", "Key.$": "$$.Map.Item.Value"},
            "ItemProcessor": {
                "ProcessorConfig": {"Mode": "INLINE"},
                "StartAt": "Head Object",
                "States": {
                    "Head Object": {
                        "Type": "Task",
                        "Resource": "arn:aws:states:::aws-sdk:s3:headObject",
                        "Parameters": {"Bucket.$": "$.Bucket", "Key.$": "$.Key"},
                        "ResultSelector": {"redrive_count.$": "$$.Execution.RedriveCount"},
                        "End": True,
                    }
                },
            },
            "End": True,
        }
    },
}


def test_a_redriven_inline_map_runs_only_the_iterations_that_did_not_succeed(aws, sfn, read_machine):
    # Given a Map over three keys, one at a time, whose second object is missing; and a rule that
    # queues the machine's status-change events
    s3, sqs, events = aws.client("s3"), aws.client("sqs"), aws.client("events")
    bucket = unique("redrive-bucket")
    s3.create_bucket(Bucket=bucket)
    for key in ("a", "c"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    role_arn = sfn.describe_state_machine(stateMachineArn=read_machine)["roleArn"]
    machine = sfn.create_state_machine(name=unique("redrive"), definition=json.dumps(HEAD_EACH_KEY), roleArn=role_arn)["stateMachineArn"]
    queue_url = sqs.create_queue(QueueName=unique("redrive"))["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    rule = unique("redrive")
    events.put_rule(Name=rule, EventPattern=json.dumps({
        "source": ["aws.states"], "detail-type": ["Step Functions Execution Status Change"], "detail": {"stateMachineArn": [machine]}}))
    put_target(aws, rule, {"Id": "queue", "Arn": queue_arn})
    execution_arn = sfn.start_execution(stateMachineArn=machine, input=json.dumps({"bucket": bucket, "keys": ["a", "b", "c"]}))["executionArn"]
    assert _finished(sfn, execution_arn)["status"] == "FAILED"
    # When the missing object is written and the execution redriven
    s3.put_object(Bucket=bucket, Key="b", Body=b"x")
    sfn.redrive_execution(executionArn=execution_arn)
    done = _finished(sfn, execution_arn)
    # Then "a" keeps its first output, "b" (failed) and "c" (never started) run in the redrive
    assert done["status"] == "SUCCEEDED"
    assert json.loads(done["output"]) == [{"redrive_count": 0}, {"redrive_count": 1}, {"redrive_count": 1}]
    history = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    heads = [json.loads(e["taskScheduledEventDetails"]["parameters"])["Key"] for e in history if e["type"] == "TaskScheduled"]
    assert heads == ["a", "b", "b", "c"]
    # And the status-change event is emitted for the redrive's start and end too
    statuses, deadline = [], time.monotonic() + 10
    while len(statuses) < 4 and time.monotonic() < deadline:
        for message in sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
            statuses.append(json.loads(message["Body"])["detail"]["status"])
        time.sleep(0.05)
    assert sorted(statuses) == sorted(["RUNNING", "FAILED", "RUNNING", "SUCCEEDED"])


PARALLEL_ONE_BRANCH_FAILS_ONCE = {
    "QueryLanguage": "JSONata",
    "StartAt": "Run Both Branches",
    "States": {
        "Run Both Branches": {
            "Type": "Parallel",
            "Branches": [
                {"StartAt": "Answer A", "States": {"Answer A": {
                    "Type": "Pass", "Output": "{% 'a' & $states.context.Execution.RedriveCount %}", "End": True}}},
                # (a minute's Wait first: branch A has answered before branch B fails, however loaded the
                # machine, as simulated time jumps only once A is done; without it the branches raced, and A,
                # cancelled unfinished, ran again on redrive)
                {"StartAt": "Let Branch A Answer First", "States": {
                    "Let Branch A Answer First": {"Type": "Wait", "Seconds": 60, "Next": "Redriven Yet?"},
                    "Redriven Yet?": {"Type": "Choice", "Choices": [
                        {"Condition": "{% $states.context.Execution.RedriveCount > 0 %}", "Next": "Answer B"}],
                        "Default": "Break Once"},
                    "Answer B": {"Type": "Pass", "Output": "{% 'b' & $states.context.Execution.RedriveCount %}", "End": True},
                    "Break Once": {"Type": "Fail", "Error": "BrokenOnce"},
                }},
            ],
            "End": True,
        },
    },
}


def test_a_redriven_parallel_runs_only_the_branches_that_did_not_succeed(sfn, read_machine):
    # Given a Parallel whose second branch fails until the execution is redriven
    role_arn = sfn.describe_state_machine(stateMachineArn=read_machine)["roleArn"]
    machine = sfn.create_state_machine(
        name=unique("redrive-parallel"), definition=json.dumps(PARALLEL_ONE_BRANCH_FAILS_ONCE), roleArn=role_arn
    )["stateMachineArn"]
    execution_arn = sfn.start_execution(stateMachineArn=machine, input="{}")["executionArn"]
    assert (_finished(sfn, execution_arn)["status"], _finished(sfn, execution_arn)["error"]) == ("FAILED", "BrokenOnce")
    # When it is redriven
    sfn.redrive_execution(executionArn=execution_arn)
    done = _finished(sfn, execution_arn)
    # Then branch A keeps the output of its first run, and only branch B ran again
    assert done["status"] == "SUCCEEDED"
    assert json.loads(done["output"]) == ["a0", "b1"]
    history = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    entered = [e["stateEnteredEventDetails"]["name"] for e in history if e["type"].endswith("StateEntered")]
    assert entered.count("Answer A") == 1 and entered.count("Redriven Yet?") == 2


def test_a_map_retry_execution_that_gave_up_only_fails_again_when_redriven(deployment, sfn):
    # Given a map retry execution that ended in its "Give Up On Failed Items" Fail state
    payload = {"items": [{"id": "A-1"}, {"id": "B-2", "fail_attempts": 5}], "max_attempts": 2, "fail_on_remaining": True}
    failed = deployment.run("map-retry", payload, name=unique("redrive-map-retry"))
    assert (failed.status, failed.error) == ("FAILED", "RetryFailed")
    # When it is redriven, Then the unsuccessful state is that Fail state: the execution fails
    # again at once, and no item is processed again (as docs/emulator.md says: start a new execution)
    sfn.redrive_execution(executionArn=failed.execution_arn)
    again = _finished(sfn, failed.execution_arn)
    assert (again["status"], again["error"], again["redriveCount"]) == ("FAILED", "RetryFailed", 1)
    history = sfn.get_execution_history(executionArn=failed.execution_arn, maxResults=1000)["events"]
    after = [e["type"] for e in history[[e["type"] for e in history].index("ExecutionRedriven") + 1 :]]
    assert after == ["FailStateEntered", "ExecutionFailed"]


def test_test_state_debug_reports_after_parameters_of_a_jsonpath_pass_state(sfn):
    # API_InspectionData.html: afterInputPath, afterParameters ("the effective input after Step
    # Functions applies the Parameters filter"), afterResultPath (ResultPath places the result in
    # the state's raw input: input-output-resultpath.html).
    state = {"Type": "Pass", "InputPath": "$.order", "Parameters": {"id.$": "$.id"}, "ResultPath": "$.picked", "End": True}
    result = sfn.test_state(
        definition=json.dumps(state), input=json.dumps({"order": {"id": 7, "note": "x"}}), inspectionLevel="DEBUG")
    inspection = result["inspectionData"]
    assert json.loads(inspection["afterInputPath"]) == {"id": 7, "note": "x"}
    assert json.loads(inspection["afterParameters"]) == {"id": 7}
    assert json.loads(inspection["afterResultPath"]) == {"order": {"id": 7, "note": "x"}, "picked": {"id": 7}}
    assert json.loads(result["output"]) == {"order": {"id": 7, "note": "x"}, "picked": {"id": 7}}


@pytest.mark.parametrize(("hours_ago", "next_state"), [(11, "Wait Before Next Chunk Pass"), (13, "Give Up On Failed Items")])
def test_no_map_pass_starts_twelve_hours_after_the_execution_did(deployment, sfn, machines, hours_ago, next_state):
    # Given: items still failed and passes left, in an execution started hours_ago (simulated clock)
    now = datetime.datetime.fromtimestamp(deployment.aws.clock.now(), tz=datetime.timezone.utc)
    started = (now - datetime.timedelta(hours=hours_ago)).isoformat().replace("+00:00", "Z")
    payload = {"retry": True, "manifest": {"Bucket": "b", "Key": "k"}, "remaining_count": 3, "fail_on_remaining": True}
    # When "Retry Failed Items?" decides
    result = _test_state(
        sfn, machines, "map-retry", "Retry Failed Items?", payload,
        context=json.dumps({"Execution": {"StartTime": started}}),
    )
    # Then: past 12 hours the run ends with its summary, well inside the machine's timeout
    assert result["status"] == "SUCCEEDED"
    assert result["nextState"] == next_state

"""Job poller machines end to end: the deployed templates run in the local emulator, in simulated time.

Each test starts its own executions, so the tests share one deployment in any order. Durations come
from the execution history (simulated time); none of these tests measures wall-clock speed.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import uuid

import pytest

from emulator.dynamodb.patches import DYNAMODB_EXPORT_SECONDS
from patterns_common.job_demo import MAX_DURATION_SECONDS
from tests.lambda_loader import load_lambda_module

# Lambda work (cold starts, S3 calls) takes a little real time, which the simulated clock counts too.
SLACK_SECONDS = 5


def poller_transitions(polls: int) -> int:
    """State transitions of an S3-poller execution that succeeds on its ``polls``-th Get Job Status.

    Validate Job Input, Run Job and Wait For Job To Start once; Get Job Status and Job Complete? per
    poll; Wait Before Next Poll between two polls; Job Succeeded once: 3 + 2P + (P - 1) + 1.
    """
    return 3 * polls + 3


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def md5_of(execution_arn: str) -> str:
    return hashlib.md5(execution_arn.encode("utf-8"), usedforsecurity=False).hexdigest()


def entered_at(result, state_name: str) -> list[float]:
    """Simulated seconds from the execution's start at which ``state_name`` was entered, in order."""
    return [
        (event["timestamp"] - result.start).total_seconds()
        for event in result.events
        if event["type"].endswith("StateEntered") and event["stateEnteredEventDetails"]["name"] == state_name
    ]


def assert_near(actual: list[float], expected: list[float]) -> None:
    assert len(actual) == len(expected), (actual, expected)
    for seen, due in zip(actual, expected):
        assert due <= seen < due + SLACK_SECONDS, (actual, expected)


def waits_entered(result) -> int:
    return sum(1 for event in result.events if event["type"] == "WaitStateEntered")


@pytest.fixture(scope="module")
def bucket(deployment) -> str:
    return deployment.output("JobPollerStack", "JobBucketName")


def read_object(deployment, bucket: str, key: str) -> str:
    return deployment.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read().decode("utf-8")


# ---------------------------------------------------------------------------------------------
# S3-backed poller
# ---------------------------------------------------------------------------------------------
def test_poller_succeeds_and_keeps_the_job_record_under_the_md5_of_the_execution_arn(deployment, bucket):
    # Given: a 30-second job polled every 10 s
    job = {"duration_seconds": 30}
    # When
    result = deployment.run(
        "poller", {"job": job, "timeout_seconds": 300, "poll_interval_seconds": 10}, name=unique("success")
    )
    # Then
    md5 = md5_of(result.execution_arn)
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["status"] == "succeeded"
    assert result.output["execution_md5"] == md5
    assert result.output["job"] == job
    context = json.loads(read_object(deployment, bucket, f"jobs/{md5}/context.json"))
    assert context["job"] == job
    assert context["timeout_seconds"] == 300
    assert context["execution_arn"] == result.execution_arn
    assert 0 <= context["job_start_timestamp"] - result.start.timestamp() < SLACK_SECONDS
    assert read_object(deployment, bucket, f"jobs/{md5}/status.txt") == "succeeded"


def test_poller_fails_with_the_runners_message(deployment):
    # Given
    job = {"duration_seconds": 20, "fail": True, "error_message": "disk quota exceeded on /data"}
    # When
    result = deployment.run("poller", {"job": job, "poll_interval_seconds": 10}, name=unique("failure"))
    # Then
    assert result.status == "FAILED"
    assert result.error == "JobFailed"
    assert result.cause == "disk quota exceeded on /data"
    assert result.entered("Job Failed") == 1


def test_poller_gives_up_on_a_job_still_running_at_its_timeout(deployment):
    # Given: a 10-minute job allowed 2 minutes, polled every 30 s
    payload = {"job": {"duration_seconds": 600}, "timeout_seconds": 120, "poll_interval_seconds": 30}
    # When
    result = deployment.run("poller", payload, name=unique("timeout"))
    # Then: the poll at 120 s finds it still running and ends the execution, saying by how much
    assert result.status == "FAILED"
    assert result.error == "JobTimeout"
    elapsed, limit = re.fullmatch(r"job still running after ([\d.]+) s; timeout_seconds is (\d+)", result.cause).groups()
    assert 120 <= float(elapsed) < 120 + SLACK_SECONDS
    assert limit == "120"
    assert result.entered("Get Job Status") == 5  # at 0, 30, 60, 90 and 120 s


def test_a_runner_that_dies_after_writing_running_ends_in_job_timeout(deployment, bucket):
    # Given: a runner that crashes after 30 s of work, without a final status
    payload = {"job": {"duration_seconds": 30, "crash": True}, "timeout_seconds": 180, "poll_interval_seconds": 60}
    # When
    result = deployment.run("poller", payload, name=unique("crash"))
    # Then: polling stops at the timeout instead of looping for ever
    assert result.status == "FAILED"
    assert result.error == "JobTimeout"
    assert result.cause.endswith("timeout_seconds is 180")
    assert result.entered("Get Job Status") == 4  # at 0, 60, 120 and 180 s
    # ...and the bucket says what the execution says (docs/job-poller.md: "What a reader of the bucket sees")
    job = f"jobs/{md5_of(result.execution_arn)}"
    assert read_object(deployment, bucket, f"{job}/status.txt") == "timed_out"
    assert json.loads(read_object(deployment, bucket, f"{job}/result.json"))["status"] == "timed_out"
    runner_errors = [
        call["error"]
        for call in deployment.aws.runtime.invocations
        if "JobPollerJobRunner" in call["function"] and call["start"] >= result.start.timestamp()
    ]
    assert runner_errors == ["SimulatedCrash"]


def test_the_history_model_counts_the_events_of_a_job_that_never_finishes(deployment):
    # Given: the poller's worst case, a runner that dies and is polled every second until the timeout
    validation = load_lambda_module("job_validate_input", "job_validate_input_logic")
    payload = {"job": {"duration_seconds": 1, "crash": True}, "timeout_seconds": 20, "poll_interval_seconds": 1}
    # When
    result = deployment.run("poller", payload, name=unique("history-model"))
    # Then: the history is what the model that bounds the input says, poll for poll
    assert result.error == "JobTimeout"
    polls = result.entered("Get Job Status")
    assert 0 < polls <= validation.polls_until_timeout(20, 0, 1)
    assert len(result.events) == validation.EVENTS_PER_POLL * polls + validation.EVENTS_OUTSIDE_POLLS


def test_poller_waits_the_initial_wait_then_polls_at_the_interval(deployment):
    # Given: a 100-second job, first checked after 60 s, then every 15 s
    payload = {
        "job": {"duration_seconds": 100},
        "timeout_seconds": 600,
        "initial_wait_seconds": 60,
        "poll_interval_seconds": 15,
    }
    # When
    result = deployment.run("poller", payload, name=unique("cadence"))
    # Then: no poll before 60 s, then one every 15 s until the job is done (at 105 s)
    assert result.status == "SUCCEEDED", result.cause
    assert_near(entered_at(result, "Wait For Job To Start"), [0])
    assert_near(entered_at(result, "Get Job Status"), [60, 75, 90, 105])
    assert_near(entered_at(result, "Wait Before Next Poll"), [60, 75, 90])
    assert result.transitions == poller_transitions(4)


def test_a_long_job_polled_every_minute_after_an_initial_wait_costs_nine_transitions(deployment):
    # Given: the longest job the demo runner allows (it is a Lambda function: 880 s of work),
    # polled every 60 s, once with the initial wait set just under the job's duration, once without
    job = {"duration_seconds": MAX_DURATION_SECONDS}
    common = {"job": job, "timeout_seconds": 1800, "poll_interval_seconds": 60}
    # When
    tuned = deployment.run("poller", {**common, "initial_wait_seconds": 840}, name=unique("long-tuned"))
    from_start = deployment.run("poller", {**common, "initial_wait_seconds": 0}, name=unique("long-from-start"))
    # Then: two polls (840 s: running, 900 s: succeeded) and nine transitions in all
    assert tuned.status == "SUCCEEDED", tuned.cause
    assert_near(entered_at(tuned, "Get Job Status"), [840, 900])
    assert tuned.transitions == poller_transitions(2) == 9
    # and polling from the start costs one poll per minute of the job: 16 polls, 51 transitions
    assert from_start.status == "SUCCEEDED", from_start.cause
    assert from_start.entered("Get Job Status") == 16
    assert from_start.transitions == poller_transitions(16) == 51


def test_polling_every_second_costs_three_transitions_per_second_of_the_job(deployment, bucket):
    # Given: a 1-minute job, polled every second from the start, or once just before it is done
    # (the same comparison on the 880-second job is about 2,500 transitions against 9: too slow
    # for the suite)
    job = {"duration_seconds": 60}
    # When
    every_second = deployment.run(
        "poller", {"job": job, "timeout_seconds": 600, "poll_interval_seconds": 1}, name=unique("every-second")
    )
    tuned = deployment.run(
        "poller",
        {"job": job, "timeout_seconds": 600, "initial_wait_seconds": 55, "poll_interval_seconds": 10},
        name=unique("tuned"),
    )
    # Then: each poll of a second's interval costs Get Job Status, Job Complete? and a Wait. A poll
    # cycle also spends the Lambda call's own (simulated) time, so how many fit in the job's 60 s
    # depends on the host; what does not is read from the history: polls at least a second apart,
    # the last one the first at or after the job's end, three transitions each
    assert every_second.status == "SUCCEEDED", every_second.cause
    polls_at = entered_at(every_second, "Get Job Status")
    assert all(later - earlier >= 1 for earlier, later in zip(polls_at, polls_at[1:]))
    # (the job's minute starts with its runner, which Run Job starts asynchronously, so it ends a
    # little after the execution's 60th second: when, its result.json says (docs/job-poller.md); the
    # poll before the last saw it running, the last one did not)
    result = json.loads(read_object(deployment, bucket, f"jobs/{md5_of(every_second.execution_arn)}/result.json"))
    finished = result["finished_at"] - every_second.start.timestamp()
    assert polls_at[-2] < finished <= polls_at[-1] + SLACK_SECONDS and finished >= 60
    assert every_second.transitions == poller_transitions(len(polls_at))
    assert tuned.status == "SUCCEEDED", tuned.cause
    assert tuned.transitions == poller_transitions(2) == 9


def test_job_parameters_the_runner_refuses_fail_the_job_naming_the_field(deployment):
    # Given: a job the demo runner cannot run (the machine hands `job` over as it is)
    payload = {"job": {"duration_seconds": MAX_DURATION_SECONDS + 1}, "poll_interval_seconds": 10}
    # When
    result = deployment.run("poller", payload, name=unique("bad-job"))
    # Then
    assert result.status == "FAILED"
    assert result.error == "JobFailed"
    assert result.cause.startswith("job.duration_seconds must be a number from 0 to 880")


# ---------------------------------------------------------------------------------------------
# SDK-integration variant: DynamoDB export, no Lambda
# ---------------------------------------------------------------------------------------------
def test_export_poller_exports_its_table_under_the_job_prefix(deployment, bucket):
    # Given: an item in the stack's own table to export (point-in-time recovery on, as the template asks)
    table = deployment.output("JobPollerStack", "ExportTableName")
    item_id = unique("export")
    deployment.client("dynamodb").put_item(TableName=table, Item={"id": {"S": item_id}})
    # When: first check after 60 s, then every 50 s
    result = deployment.run(
        "export-poller", {"initial_wait_seconds": 60, "poll_interval_seconds": 50}, name=unique("export")
    )
    # Then: IN_PROGRESS until the export has run (the emulator's exports take 240 s), then COMPLETED:
    # checks at 60, 110, 160, 210 and 260 s
    checks = list(range(60, DYNAMODB_EXPORT_SECONDS + 50, 50))
    md5 = md5_of(result.execution_arn)
    assert result.status == "SUCCEEDED", result.cause
    assert_near(entered_at(result, "Describe Export"), checks)
    table_arn = deployment.client("dynamodb").describe_table(TableName=table)["Table"]["TableArn"]
    assert result.output["export_arn"].startswith(f"{table_arn}/export/")
    assert result.output["status"] == "succeeded"
    assert result.output["execution_md5"] == md5
    assert result.output["s3_bucket"] == bucket
    assert result.output["s3_prefix"] == f"jobs/{md5}/export"
    assert result.output["waited_seconds"] == checks[-1]
    listed = deployment.client("s3").list_objects_v2(Bucket=bucket, Prefix=f"jobs/{md5}/export/")
    keys = [item["Key"] for item in listed.get("Contents", [])]
    assert keys and all(key.endswith(".gz") for key in keys)
    s3 = deployment.client("s3")
    exported = b"".join(gzip.decompress(s3.get_object(Bucket=bucket, Key=key)["Body"].read()) for key in keys)
    assert item_id.encode() in exported


def test_export_poller_times_out_once_it_has_waited_timeout_seconds(deployment):
    # When: the export takes longer than the 120 s allowed
    payload = {"timeout_seconds": 120, "initial_wait_seconds": 60, "poll_interval_seconds": 60}
    result = deployment.run("export-poller", payload, name=unique("export-timeout"))
    # Then
    assert result.status == "FAILED"
    assert result.error == "JobTimeout"
    assert re.fullmatch(r"export \S+ still IN_PROGRESS after 120 s of waiting; timeout_seconds is 120", result.cause)
    assert result.entered("Describe Export") == 2
    # ... and its history has the 9 events per poll and 12 around them that Check Export Input's
    # history budget counts
    assert len(result.events) == 9 * 2 + 12


# ---------------------------------------------------------------------------------------------
# Callback variant
# ---------------------------------------------------------------------------------------------
def test_callback_job_succeeds_with_no_polling(deployment):
    # Given: a job longer than the task's HeartbeatSeconds (300)
    job = {"duration_seconds": 330}
    # When
    with deployment.aws.api_calls.counting() as calls:
        result = deployment.run("callback", {"job": job, "timeout_seconds": 600}, name=unique("callback"))
    # Then: the runner's own report ends the task and the execution; no Wait, no poll; three
    # transitions in all (validate, check the timeout, run)
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {"status": "succeeded", "job": job}
    assert waits_entered(result) == 0
    assert result.entered("Run Job And Wait For Callback") == 1
    assert result.transitions == 3
    # (each heartbeat is a real call, whose real time the simulated clock counts too)
    assert 330 <= result.simulated_seconds < 330 + 2 * SLACK_SECONDS
    # ... and the runner kept it alive: a heartbeat at once, then one every 15 s of work (0, 15 ... 315)
    assert calls["SendTaskHeartbeat"] == 22


def test_callback_job_that_finishes_at_once_is_reported_at_once(deployment):
    # Given: a job that reports before the task has even begun waiting for its token
    payload = {"job": {"duration_seconds": 0}, "timeout_seconds": 600}
    # When
    result = deployment.run("callback", payload, name=unique("callback-instant"))
    # Then: no HeartbeatSeconds (300 s) wait for a result that is already there
    assert result.status == "SUCCEEDED", result.cause
    assert result.simulated_seconds < SLACK_SECONDS


def test_callback_job_fails_with_the_runners_message(deployment):
    job = {"duration_seconds": 30, "fail": True, "error_message": "upstream API answered 503"}
    result = deployment.run("callback", {"job": job, "timeout_seconds": 600}, name=unique("callback-fail"))
    assert result.status == "FAILED"
    assert result.error == "JobFailed"
    assert result.cause == "upstream API answered 503"


def machine_log_events(deployment, machine: str, execution_arn: str) -> tuple[str, list[dict]]:
    """The machine's log group name and the log events of one execution, as Step Functions wrote them."""
    config = deployment.client("stepfunctions").describe_state_machine(stateMachineArn=deployment.machine_arn(machine))
    group_arn = config["loggingConfiguration"]["destinations"][0]["cloudWatchLogsLogGroup"]["logGroupArn"]
    group = group_arn.split(":log-group:", 1)[1].removesuffix(":*")
    pages = deployment.client("logs").get_paginator("filter_log_events").paginate(logGroupName=group)
    events = [json.loads(event["message"]) for page in pages for event in page["events"]]
    return group, [event for event in events if event["execution_arn"] == execution_arn]


def test_machine_logs_name_the_failure_but_hold_no_input_output_or_task_token(deployment):
    # Given: a callback job whose runner fails it; its task token and job parameters are execution data
    job = {"duration_seconds": 30, "fail": True, "error_message": "upstream API answered 503"}
    # When
    result = deployment.run("callback", {"job": job, "timeout_seconds": 600}, name=unique("callback-logs"))
    # Then: the log group is under the prefix AWS asks for (https://docs.aws.amazon.com/step-functions/latest/dg/cw-logs.html)
    group, logged = machine_log_events(deployment, "callback", result.execution_arn)
    assert group.startswith("/aws/vendedlogs/states/")
    # ... and an operator reads there which execution failed, with which error
    failed = [event for event in logged if event["type"] == "ExecutionFailed"]
    assert [event["details"]["error"] for event in failed] == ["JobFailed"]
    assert failed[0]["details"]["cause"] == "upstream API answered 503"
    # ... but nothing the execution carried: no input, output or parameters, no task token
    token = next(
        json.loads(event["taskScheduledEventDetails"]["parameters"])["Payload"]["task_token"]
        for event in result.events
        if event["type"] == "TaskScheduled"
        and "task_token" in event["taskScheduledEventDetails"]["parameters"]
    )
    text = json.dumps(logged)
    assert token not in text
    assert not any(key in event.get("details", {}) for event in logged for key in ("input", "output", "parameters"))


def test_callback_runner_that_stops_heartbeating_ends_in_job_timeout_after_heartbeat_seconds(deployment):
    # Given: a runner that heartbeats every 15 s, then dies at 120 s without reporting; the job
    # was allowed 30 minutes
    job = {"duration_seconds": 120, "crash": True}
    # When
    result = deployment.run("callback", {"job": job, "timeout_seconds": 1800}, name=unique("callback-crash"))
    # Then: HeartbeatSeconds (300) after the last heartbeat (105 s), not at the 30-minute timeout
    assert result.status == "FAILED"
    assert result.error == "JobTimeout"
    assert result.cause.startswith("no heartbeat from the job runner for 300 s")
    timed_out = [e["taskTimedOutEventDetails"]["error"] for e in result.events if e["type"] == "TaskTimedOut"]
    assert timed_out == ["States.HeartbeatTimeout"]
    assert 405 <= result.simulated_seconds < 405 + SLACK_SECONDS


def test_a_one_minute_callback_job_with_a_two_minute_timeout_succeeds(deployment):
    # Given: a timeout shorter than the usual 300 s heartbeat window (the bench's "1 min job" row)
    job = {"duration_seconds": 60}
    # When
    result = deployment.run("callback", {"job": job, "timeout_seconds": 120}, name=unique("callback-short"))
    # Then: it runs; the heartbeat window follows the timeout instead of refusing it
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {"status": "succeeded", "job": job}
    assert 60 <= result.simulated_seconds < 60 + SLACK_SECONDS
    # ... a window 1 s under the timeout, since HeartbeatSeconds must be smaller than TimeoutSeconds
    # (https://states-language.net/spec.html#task-state); the history records both
    # (https://docs.aws.amazon.com/step-functions/latest/apireference/API_TaskScheduledEventDetails.html)
    [scheduled] = [e["taskScheduledEventDetails"] for e in result.events if e["type"] == "TaskScheduled"
                   and "task_token" in e["taskScheduledEventDetails"]["parameters"]]
    assert (scheduled["heartbeatInSeconds"], scheduled["timeoutInSeconds"]) == (119, 120)


def test_callback_job_past_its_timeout_ends_in_job_timeout(deployment):
    # Given: a 10-minute job, heartbeating all along, allowed 400 s
    job = {"duration_seconds": 600}
    # When
    result = deployment.run("callback", {"job": job, "timeout_seconds": 400}, name=unique("callback-timeout"))
    # Then
    assert result.status == "FAILED"
    assert result.error == "JobTimeout"
    assert result.cause == "job still running after 400 s; timeout_seconds is 400"
    assert 400 <= result.simulated_seconds < 400 + SLACK_SECONDS


def test_callback_runner_refusing_the_job_parameters_fails_the_job_naming_the_field(deployment):
    payload = {"job": {"duration_seconds": 10, "fail": "yes"}, "timeout_seconds": 600}
    result = deployment.run("callback", payload, name=unique("callback-bad-job"))
    assert result.status == "FAILED"
    assert result.error == "JobFailed"
    assert result.cause == "job.fail must be true or false, got 'yes'"


# ---------------------------------------------------------------------------------------------
# Bad input: refused before any job starts
# ---------------------------------------------------------------------------------------------
# (other refusals, one execution per path: tests/test_bad_inputs_execution.py)
FIRST_JOB_STATE = {"poller": "Run Job", "export-poller": "Start Table Export"}


@pytest.mark.parametrize("machine", ["poller", "export-poller"])
def test_a_day_polled_every_30_s_is_refused_before_it_passes_the_history_limit(deployment, machine):
    # Given: 2,881 polls of 9 events, past the 25,000 events a history may hold
    # (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html)
    payload = {"timeout_seconds": 86_400, "initial_wait_seconds": 0, "poll_interval_seconds": 30}
    if machine == "poller":
        payload["job"] = {"duration_seconds": 1}
    # When
    result = deployment.run(machine, payload, name=unique("history-limit"))
    # Then: refused up front, naming the field and the interval that fits
    assert result.error == "InvalidJobInput"
    assert result.cause == (
        "poll_interval_seconds must be at least 35 with timeout_seconds 86400 and initial_wait_seconds 0: "
        "polling every 30 s would make 2,881 polls of 9 history events, past the 25,000-event history "
        "limit of Step Functions, got 30"
    )
    assert result.entered(FIRST_JOB_STATE[machine]) == 0

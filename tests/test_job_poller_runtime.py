"""Job poller runtime: the S3 contract, input validation, the timeout edge, and the handlers on moto."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import boto3
import pytest
from moto import mock_aws

from patterns_common.job_demo import (
    MAX_DURATION_SECONDS,
    DemoJob,
    InvalidDemoJob,
    SimulatedCrash,
    work_slices,
)
from patterns_common.job_protocol import (
    NO_FAILURE_MESSAGE,
    JobContext,
    JobKeys,
    JobStatus,
    execution_md5,
    failure_message,
    parse_status,
    result_json,
    result_status,
)
from tests.emf import emf_metrics
from tests.lambda_loader import load_lambda_module

EXECUTION_ARN = "arn:aws:states:us-east-1:123456789012:execution:JobPoller:demo-1"
EXECUTION_MD5 = "b2fd23fb117421ae7ec6b2a4fcf98642"  # md5 hex of EXECUTION_ARN
BUCKET = "job-bucket"
REGION = "us-east-1"


@dataclass(frozen=True)
class LambdaContext:
    """The attributes of the Lambda context object that Powertools reads."""

    function_name: str = "test-function"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:123456789012:function:test-function"
    aws_request_id: str = "request-1"


# ---------------------------------------------------------------------------------------------
# The S3 contract (pure)
# ---------------------------------------------------------------------------------------------


def test_keys_live_under_the_md5_hex_of_the_execution_arn():
    # When
    keys = JobKeys.for_execution(EXECUTION_ARN)
    # Then
    assert execution_md5(EXECUTION_ARN) == EXECUTION_MD5
    assert keys.context == f"jobs/{EXECUTION_MD5}/context.json"
    assert keys.status == f"jobs/{EXECUTION_MD5}/status.txt"
    assert keys.result == f"jobs/{EXECUTION_MD5}/result.json"


def test_different_executions_get_different_keys():
    assert execution_md5(EXECUTION_ARN) != execution_md5(EXECUTION_ARN + "x")


def test_execution_md5_refuses_an_empty_arn():
    with pytest.raises(ValueError, match="^execution ARN must be a non-empty string$"):
        execution_md5("")


@pytest.mark.parametrize(
    "text, status",
    [
        (None, JobStatus.NOT_STARTED),
        ("running", JobStatus.RUNNING),
        ("succeeded\n", JobStatus.SUCCEEDED),
        ("  failed ", JobStatus.FAILED),
    ],
)
def test_parse_status_reads_the_runner_values_and_a_missing_object(text, status):
    assert parse_status(text) is status


@pytest.mark.parametrize("text", ["", "done", "SUCCEEDED", "not_started"])
def test_parse_status_refuses_anything_else(text):
    with pytest.raises(ValueError, match="running, succeeded, failed"):
        parse_status(text)


def test_context_record_holds_the_start_timestamp_and_the_job_parameters():
    # Given
    parameters = {"job": {"duration_seconds": 15}, "timeout_seconds": 30, "initial_wait_seconds": 0}
    # When
    text = JobContext(job_start_timestamp=1700000000.5, timeout_seconds=30).to_json(
        execution_arn=EXECUTION_ARN, parameters=parameters
    )
    # Then
    record = json.loads(text)
    assert record["job_start_timestamp"] == 1700000000.5
    assert record["job"] == {"duration_seconds": 15}
    assert record["execution_arn"] == EXECUTION_ARN
    assert JobContext.from_json(text) == JobContext(job_start_timestamp=1700000000.5, timeout_seconds=30)


def test_result_record_carries_the_failure_message_and_only_final_statuses():
    # When
    failed = json.loads(result_json(JobStatus.FAILED, finished_at=5.0, error_message="disk full"))
    succeeded = json.loads(result_json(JobStatus.SUCCEEDED, finished_at=6.0))
    # Then
    assert failed == {"status": "failed", "finished_at": 5.0, "error_message": "disk full"}
    assert succeeded == {"status": "succeeded", "finished_at": 6.0}
    with pytest.raises(ValueError, match="final status"):
        result_json(JobStatus.RUNNING, finished_at=1.0)


@pytest.mark.parametrize(
    "text, status",
    [
        ('{"status": "succeeded", "finished_at": 6.0}', JobStatus.SUCCEEDED),
        ('{"status": "failed", "finished_at": 5.0, "error_message": "disk full"}', JobStatus.FAILED),
        ('{"status": "timed_out", "finished_at": 30.0}', JobStatus.TIMED_OUT),
        # result.json is the final record (module docstring): a status that is not final decides nothing.
        ('{"status": "running"}', None),
        ('{"status": "not_started"}', None),
        (None, None),
        ("", None),
        ("not json", None),
        ('["succeeded"]', None),
        ('{"status": "SUCCEEDED"}', None),
    ],
)
def test_result_status_reads_only_a_final_status(text, status):
    assert result_status(text) is status


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"status": "failed", "error_message": "disk full"}', "disk full"),
        (None, NO_FAILURE_MESSAGE),
        ('{"status": "failed"}', NO_FAILURE_MESSAGE),
        ('{"error_message": "   "}', NO_FAILURE_MESSAGE),
        ("not json", NO_FAILURE_MESSAGE),
        ("[1, 2]", NO_FAILURE_MESSAGE),
    ],
)
def test_failure_message_falls_back_when_the_runner_left_none(text, message):
    assert failure_message(text) == message


# ---------------------------------------------------------------------------------------------
# Validate Job Input (pure)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def validation():
    return load_lambda_module("job_validate_input", "job_validate_input_logic")


def test_validation_fills_in_the_documented_defaults(validation):
    # When
    normalized = validation.normalize_job_input({"job": {"duration_seconds": 15}})
    # Then
    assert normalized == {
        "job": {"duration_seconds": 15},
        "timeout_seconds": 900,
        "initial_wait_seconds": 0,
        "poll_interval_seconds": 30,
    }


def test_the_default_poll_interval_never_makes_a_short_timeout_invalid(validation):
    # Given: a 10 s timeout (the callback variant does not poll at all), no interval given
    normalized = validation.normalize_job_input({"job": {}, "timeout_seconds": 10})
    # Then: polls every timeout_seconds instead of refusing its own default
    assert normalized["poll_interval_seconds"] == 10


def test_validation_keeps_given_values_and_hands_the_job_over_untouched(validation):
    # Given
    event = {
        "job": {"anything": ["the", "runner", "reads"]},
        "timeout_seconds": 86400,
        "initial_wait_seconds": 86400,
        "poll_interval_seconds": 3600,
    }
    # Then: the largest accepted values are accepted, and the job is opaque to the machine
    assert validation.normalize_job_input(event) == event


@pytest.mark.parametrize(
    "event, field",
    [
        ([], "input"),
        ({}, "job"),
        ({"job": "run it"}, "job"),
        ({"job": {}, "timeout": 30}, "timeout"),
        ({"job": {}, "timeout_seconds": 0}, "timeout_seconds"),
        ({"job": {}, "timeout_seconds": -5}, "timeout_seconds"),
        ({"job": {}, "timeout_seconds": 86401}, "timeout_seconds"),
        ({"job": {}, "timeout_seconds": 30.5}, "timeout_seconds"),
        ({"job": {}, "timeout_seconds": "30"}, "timeout_seconds"),
        ({"job": {}, "timeout_seconds": True}, "timeout_seconds"),
        ({"job": {}, "timeout_seconds": None}, "timeout_seconds"),
        ({"job": {}, "initial_wait_seconds": -1}, "initial_wait_seconds"),
        ({"job": {}, "timeout_seconds": 30, "initial_wait_seconds": 31}, "initial_wait_seconds"),
        ({"job": {}, "initial_wait_seconds": 1.5}, "initial_wait_seconds"),
        ({"job": {}, "poll_interval_seconds": 0}, "poll_interval_seconds"),
        ({"job": {}, "poll_interval_seconds": 3601, "timeout_seconds": 7200}, "poll_interval_seconds"),
        ({"job": {}, "timeout_seconds": 30, "poll_interval_seconds": 31}, "poll_interval_seconds"),
        ({"job": {}, "poll_interval_seconds": "5"}, "poll_interval_seconds"),
    ],
)
def test_validation_rejects_bad_input_naming_the_field(validation, event, field):
    # When
    with pytest.raises(validation.InvalidJobInput) as raised:
        validation.normalize_job_input(event)
    # Then: the message starts with the field, so the execution's cause says what to fix
    assert str(raised.value).startswith(f"{field} ")


@pytest.mark.parametrize(
    "event, cause",
    [
        ([], "input must be a JSON object, got list"),
        ({"job": {}, "timeout": 30}, "timeout is not an input field (expected job, timeout_seconds, initial_wait_seconds, poll_interval_seconds)"),
        ({}, "job is required: the parameters handed to the job runner"),
        ({"job": "run it"}, "job must be a JSON object, got str"),
        ({"job": {}, "timeout_seconds": "30"}, "timeout_seconds must be a whole number of seconds, got '30'"),
        ({"job": {}, "timeout_seconds": 86_401}, "timeout_seconds must be from 1 to 86400 (at most one day), got 86401"),
        (
            {"job": {}, "timeout_seconds": 30, "initial_wait_seconds": 31},
            "initial_wait_seconds must be from 0 to 30 (no longer than timeout_seconds), got 31",
        ),
        (
            {"job": {}, "timeout_seconds": 7200, "poll_interval_seconds": 3601},
            "poll_interval_seconds must be from 1 to 3600 (at most 3600 and no longer than timeout_seconds), got 3601",
        ),
    ],
)
def test_a_rejected_job_input_is_the_executions_cause_word_for_word(validation, event, cause):
    with pytest.raises(validation.InvalidJobInput) as raised:
        validation.normalize_job_input(event)
    assert str(raised.value) == cause


@pytest.mark.parametrize(
    "event, accepted",
    [
        ({"timeout_seconds": 1}, {"timeout_seconds": 1, "initial_wait_seconds": 0, "poll_interval_seconds": 1}),
        ({"timeout_seconds": 86_400}, {"timeout_seconds": 86_400, "initial_wait_seconds": 0, "poll_interval_seconds": 30}),
        ({"timeout_seconds": 29}, {"timeout_seconds": 29, "initial_wait_seconds": 0, "poll_interval_seconds": 29}),
        ({"timeout_seconds": 31}, {"timeout_seconds": 31, "initial_wait_seconds": 0, "poll_interval_seconds": 30}),
        ({"initial_wait_seconds": 900}, {"timeout_seconds": 900, "initial_wait_seconds": 900, "poll_interval_seconds": 30}),
        ({"poll_interval_seconds": 1}, {"timeout_seconds": 900, "initial_wait_seconds": 0, "poll_interval_seconds": 1}),
        ({"poll_interval_seconds": 900}, {"timeout_seconds": 900, "initial_wait_seconds": 0, "poll_interval_seconds": 900}),
        (
            {"timeout_seconds": 7200, "poll_interval_seconds": 3600},
            {"timeout_seconds": 7200, "initial_wait_seconds": 0, "poll_interval_seconds": 3600},
        ),
    ],
)
def test_every_job_input_range_includes_its_bounds(validation, event, accepted):
    assert validation.normalize_job_input({"job": {"n": 1}, **event}) == {"job": {"n": 1}, **accepted}


def _polls_of_a_job_that_never_finishes(timeout: int, initial_wait: int, poll_interval: int) -> int:
    """Get Job Status calls, walked in simulated seconds: the first after the initial wait, then one per
    interval, until one sees the job running at or past its timeout."""
    now, polls = initial_wait, 1
    while now < timeout:
        now += poll_interval
        polls += 1
    return polls


def _s3_poller_history(polls: int) -> list[str]:
    """The events of an S3-poller execution whose job never finishes (API_HistoryEvent names)."""
    def task(outcome):
        return ["TaskStateEntered", "LambdaFunctionScheduled", "LambdaFunctionStarted", outcome, "TaskStateExited"]

    events = ["ExecutionStarted", *task("LambdaFunctionSucceeded"), *task("LambdaFunctionSucceeded")]
    events += ["WaitStateEntered", "WaitStateExited"]  # Wait For Job To Start
    for _ in range(polls - 1):
        events += task("LambdaFunctionSucceeded") + ["ChoiceStateEntered", "ChoiceStateExited"]
        events += ["WaitStateEntered", "WaitStateExited"]  # Wait Before Next Poll
    events += task("LambdaFunctionFailed")  # JobTimeout, caught
    return events + ["FailStateEntered", "ExecutionFailed"]


@pytest.mark.parametrize(
    "timeout, initial_wait, poll_interval",
    [(1, 0, 1), (30, 0, 30), (31, 0, 30), (60, 0, 30), (59, 0, 30), (900, 15, 30), (86_400, 0, 35), (100, 100, 7)],
)
def test_the_history_estimate_counts_every_event_of_a_job_that_never_finishes(validation, timeout, initial_wait, poll_interval):
    polls = _polls_of_a_job_that_never_finishes(timeout, initial_wait, poll_interval)
    assert validation.polls_until_timeout(timeout, initial_wait, poll_interval) == polls
    assert validation.worst_case_history_events(timeout, initial_wait, poll_interval) == len(_s3_poller_history(polls))


@pytest.mark.parametrize(
    "timeout, refused",
    # Every 10 s: 2,498 polls make 22,493 events, inside 25,000 less the 2,500 kept for retries; 2,499 do not.
    [(24_970, False), (24_971, True), (24_980, True)],
)
def test_the_history_budget_accepts_up_to_its_last_event(validation, timeout, refused):
    settings = {"job": {}, "timeout_seconds": timeout, "initial_wait_seconds": 0, "poll_interval_seconds": 10}
    assert len(_s3_poller_history(_polls_of_a_job_that_never_finishes(timeout, 0, 10))) == (22_502 if refused else 22_493)
    if not refused:
        assert validation.check_history_budget(settings) == settings
        return
    with pytest.raises(validation.InvalidJobInput) as raised:
        validation.check_history_budget(settings)
    assert str(raised.value) == (
        f"poll_interval_seconds must be at least 11 with timeout_seconds {timeout} and initial_wait_seconds 0: "
        "polling every 10 s would make 2,499 polls of 9 history events, "
        "past the 25,000-event history limit of Step Functions, got 10"
    )


def test_invalid_job_input_is_the_step_functions_error_name(validation):
    # Then: Lambda reports the exception class name as the error the ASL catches
    assert validation.InvalidJobInput.__name__ == "InvalidJobInput"


# ---------------------------------------------------------------------------------------------
# Get Job Status (pure): the timeout edge and status parsing
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def status_logic():
    return load_lambda_module("job_get_status", "job_get_status_logic")


START = 1_700_000_000.0
CONTEXT = JobContext(job_start_timestamp=START, timeout_seconds=30)


def no_result() -> str | None:
    raise AssertionError("result.json must only be read when the job failed")


@pytest.mark.parametrize("status_text, status", [(None, "not_started"), ("running", "running")])
def test_an_unfinished_job_just_before_the_limit_keeps_polling(status_logic, status_text, status):
    # When
    report = status_logic.job_report(
        context=CONTEXT, status_text=status_text, read_result=no_result, now=START + 29.999
    )
    # Then
    assert report.to_dict() == {"status": status, "elapsed_seconds": 29.999, "error_message": None}


@pytest.mark.parametrize("status_text", [None, "running"])
def test_an_unfinished_job_at_exactly_the_limit_times_out(status_logic, status_text):
    # When
    with pytest.raises(status_logic.JobTimeout) as raised:
        status_logic.job_report(context=CONTEXT, status_text=status_text, read_result=no_result, now=START + 30)
    # Then: elapsed and limit are in the message (the execution's cause)
    assert str(raised.value) == f"job still {parse_status(status_text).value} after 30 s; timeout_seconds is 30"
    assert status_logic.JobTimeout.__name__ == "JobTimeout"


def test_a_finished_job_is_reported_even_past_the_limit(status_logic):
    # When
    report = status_logic.job_report(
        context=CONTEXT, status_text="succeeded", read_result=no_result, now=START + 95
    )
    # Then
    assert report.status == "succeeded" and report.elapsed_seconds == 95


def test_a_failed_job_reports_the_runners_message(status_logic):
    # When
    report = status_logic.job_report(
        context=CONTEXT,
        status_text="failed",
        read_result=lambda: '{"status": "failed", "error_message": "disk full"}',
        now=START + 12,
    )
    # Then
    assert report.to_dict() == {"status": "failed", "elapsed_seconds": 12, "error_message": "disk full"}


def test_a_status_the_runner_should_never_write_fails_the_job_at_once(status_logic):
    # When
    report = status_logic.job_report(context=CONTEXT, status_text="exploded", read_result=no_result, now=START + 1)
    # Then: failing now beats polling until the timeout hides the broken runner
    assert report.status == "failed"
    assert "'exploded'" in report.error_message


# ---------------------------------------------------------------------------------------------
# Run Job (pure)
# ---------------------------------------------------------------------------------------------


def test_run_job_plan_derives_the_key_and_the_runner_payload_from_the_context_object():
    # Given
    logic = load_lambda_module("run_job", "run_job_logic")
    context_object = {"Execution": {"Id": EXECUTION_ARN, "Input": {"job": {}}}, "State": {"Name": "Run Job"}}
    job_input = {"job": {"duration_seconds": 3}, "timeout_seconds": 30, "initial_wait_seconds": 0,
                 "poll_interval_seconds": 5}
    # When
    start = logic.plan_job_start(context_object=context_object, job_input=job_input, now=START)
    # Then
    assert start.keys.md5 == EXECUTION_MD5
    assert start.runner_payload == {"execution_md5": EXECUTION_MD5, "job": {"duration_seconds": 3}}
    assert start.result == {"execution_md5": EXECUTION_MD5, "job_start_timestamp": START}
    assert JobContext.from_json(start.context_json) == JobContext(job_start_timestamp=START, timeout_seconds=30)


# ---------------------------------------------------------------------------------------------
# The demo job (pure)
# ---------------------------------------------------------------------------------------------


def test_demo_job_defaults_to_an_instant_success():
    job = DemoJob.parse({})
    assert job == DemoJob(duration_seconds=0, fail=False, crash=False, error_message=job.error_message)
    assert job.outcome() is None


def test_demo_job_fails_with_its_message_or_crashes_when_asked():
    assert DemoJob.parse({"fail": True, "error_message": "disk full"}).outcome() == "disk full"
    with pytest.raises(SimulatedCrash):
        DemoJob.parse({"crash": True}).outcome()


def test_demo_job_accepts_the_longest_duration_its_lambda_can_hold():
    assert DemoJob.parse({"duration_seconds": MAX_DURATION_SECONDS}).duration_seconds == MAX_DURATION_SECONDS


@pytest.mark.parametrize(
    "job, field",
    [
        ("x", "job"),
        ({"duration": 5}, "job.duration"),
        ({"duration_seconds": -1}, "job.duration_seconds"),
        ({"duration_seconds": MAX_DURATION_SECONDS + 1}, "job.duration_seconds"),
        ({"duration_seconds": "5"}, "job.duration_seconds"),
        ({"duration_seconds": True}, "job.duration_seconds"),
        ({"fail": "yes"}, "job.fail"),
        ({"crash": 1}, "job.crash"),
        ({"fail": True, "error_message": ""}, "job.error_message"),
        ({"fail": True, "crash": True}, "job.fail"),
    ],
)
def test_demo_job_rejects_bad_parameters_naming_the_field(job, field):
    with pytest.raises(InvalidDemoJob) as raised:
        DemoJob.parse(job)
    assert str(raised.value).startswith(f"{field} ")


@pytest.mark.parametrize(
    "duration, slice_, slices",
    [(0, 15, [0]), (15, 15, [15]), (40, 15, [15, 15, 10]), (2.5, 1, [1, 1, 0.5])],
)
def test_work_is_sliced_so_heartbeats_fit_between_slices(duration, slice_, slices):
    assert work_slices(duration, slice_) == slices
    assert sum(work_slices(duration, slice_)) == pytest.approx(duration)


# ---------------------------------------------------------------------------------------------
# Handlers on moto
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def aws(monkeypatch):
    """A moto account with a versioned job bucket (versions show every status the runner wrote)."""
    monkeypatch.setenv("JOB_BUCKET_NAME", BUCKET)
    monkeypatch.setenv("JOB_RUNNER_FUNCTION_NAME", "job-runner")
    with mock_aws(config={"lambda": {"use_docker": False}}):
        s3 = boto3.client("s3", region_name=REGION)
        s3.create_bucket(Bucket=BUCKET)
        s3.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
        yield s3


def read(s3, key: str) -> str:
    return s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()


def status_history(s3, key: str) -> list[str]:
    """Every body status.txt ever had, oldest first (S3 lists versions newest first)."""
    versions = s3.list_object_versions(Bucket=BUCKET, Prefix=key).get("Versions", [])
    return [read_version(s3, key, version["VersionId"]) for version in reversed(versions)]


def read_version(s3, key: str, version: str) -> str:
    return s3.get_object(Bucket=BUCKET, Key=key, VersionId=version)["Body"].read().decode()


def put_context(s3, *, started: float, timeout_seconds: int) -> None:
    s3.put_object(
        Bucket=BUCKET,
        Key=f"jobs/{EXECUTION_MD5}/context.json",
        Body=JobContext(job_start_timestamp=started, timeout_seconds=timeout_seconds).to_json(
            execution_arn=EXECUTION_ARN, parameters={"job": {}}
        ),
    )


def test_run_job_writes_context_json_and_starts_the_runner(aws):
    # Given: the Invoke request the handler sends is recorded on its way to moto
    handler = load_lambda_module("run_job", "handler")
    invocations: list[dict] = []
    handler.lambda_client.meta.events.register(
        "before-parameter-build.lambda.Invoke", lambda params, **_: invocations.append(dict(params))
    )
    job_input = {"job": {"duration_seconds": 15}, "timeout_seconds": 30, "initial_wait_seconds": 10,
                 "poll_interval_seconds": 5}
    before = time.time()
    # When
    result = handler.lambda_handler(
        {"context": {"Execution": {"Id": EXECUTION_ARN}}, "input": job_input}, LambdaContext()
    )
    # Then
    after = time.time()
    record = json.loads(read(aws, f"jobs/{EXECUTION_MD5}/context.json"))
    assert before <= record["job_start_timestamp"] <= after
    assert {k: record[k] for k in job_input} == job_input
    assert record["execution_arn"] == EXECUTION_ARN
    assert result == {"execution_md5": EXECUTION_MD5, "job_start_timestamp": record["job_start_timestamp"]}
    assert [(i["FunctionName"], i["InvocationType"], json.loads(i["Payload"])) for i in invocations] == [
        ("job-runner", "Event", {"execution_md5": EXECUTION_MD5, "job": {"duration_seconds": 15}})
    ]


def test_get_job_status_treats_a_missing_status_object_as_not_started(aws):
    # Given: Run Job recorded the start 5 s ago, the runner has written nothing yet
    put_context(aws, started=time.time() - 5, timeout_seconds=30)
    handler = load_lambda_module("job_get_status", "handler")
    # When
    report = handler.lambda_handler({"execution_arn": EXECUTION_ARN}, LambdaContext())
    # Then
    assert report["status"] == "not_started"
    assert 5 <= report["elapsed_seconds"] < 30
    assert report["error_message"] is None


def test_get_job_status_raises_job_timeout_for_a_job_still_running_past_its_limit(aws, capsys):
    # Given
    put_context(aws, started=time.time() - 31, timeout_seconds=30)
    aws.put_object(Bucket=BUCKET, Key=f"jobs/{EXECUTION_MD5}/status.txt", Body=b"running")
    handler = load_lambda_module("job_get_status", "handler")
    # Then: the timeout is raised and counted as a business metric
    with pytest.raises(Exception) as raised:
        handler.lambda_handler({"execution_arn": EXECUTION_ARN}, LambdaContext())
    assert type(raised.value).__name__ == "JobTimeout"
    assert "timeout_seconds is 30" in str(raised.value)
    timed_out = [m["JobsTimedOut"] for m in emf_metrics(capsys.readouterr().out) if "JobsTimedOut" in m]
    assert timed_out == [[1.0]]


def test_s3_refuses_a_second_create_only_write_as_aws_does(aws):
    # AWS: PutObject with If-None-Match: * fails with 412 Precondition Failed when the key exists
    # (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html); the job
    # protocol relies on it, and moto 5.2.5 does the same (no emulator fix needed).
    aws.put_object(Bucket=BUCKET, Key="jobs/x/result.json", Body=b"first", IfNoneMatch="*")
    with pytest.raises(aws.exceptions.ClientError) as raised:
        aws.put_object(Bucket=BUCKET, Key="jobs/x/result.json", Body=b"second", IfNoneMatch="*")
    assert raised.value.response["Error"]["Code"] == "PreconditionFailed"
    assert read(aws, "jobs/x/result.json") == "first"


def test_a_timed_out_job_is_recorded_as_timed_out_and_a_late_runner_cannot_change_that(aws):
    # Given: a job still running past its limit
    put_context(aws, started=time.time() - 31, timeout_seconds=30)
    aws.put_object(Bucket=BUCKET, Key=f"jobs/{EXECUTION_MD5}/status.txt", Body=b"running")
    status = load_lambda_module("job_get_status", "handler")
    # When: the poll times it out, then the runner finishes late, then the poll is retried
    with pytest.raises(Exception) as raised:
        status.lambda_handler({"execution_arn": EXECUTION_ARN}, LambdaContext())
    load_lambda_module("demo_job_runner", "handler").finish(JobKeys(EXECUTION_MD5), JobStatus.SUCCEEDED)
    with pytest.raises(Exception) as retried:
        status.lambda_handler({"execution_arn": EXECUTION_ARN}, LambdaContext())
    # Then: JobTimeout both times, and the bucket says timed_out, as the execution does
    assert type(raised.value).__name__ == type(retried.value).__name__ == "JobTimeout"
    history = status_history(aws, f"jobs/{EXECUTION_MD5}/status.txt")  # the retry may rewrite timed_out
    assert history[0] == "running" and set(history[1:]) == {"timed_out"}
    record = json.loads(read(aws, f"jobs/{EXECUTION_MD5}/result.json"))
    assert record["status"] == "timed_out" and "timeout_seconds is 30" in record["error_message"]


def test_a_result_written_just_before_the_timeout_wins_over_it(aws):
    # Given: the runner wrote result.json (succeeded) but not yet its final status.txt
    put_context(aws, started=time.time() - 31, timeout_seconds=30)
    aws.put_object(Bucket=BUCKET, Key=f"jobs/{EXECUTION_MD5}/status.txt", Body=b"running")
    aws.put_object(
        Bucket=BUCKET, Key=f"jobs/{EXECUTION_MD5}/result.json", Body=result_json(JobStatus.SUCCEEDED, finished_at=1.0)
    )
    # When
    report = load_lambda_module("job_get_status", "handler").lambda_handler(
        {"execution_arn": EXECUTION_ARN}, LambdaContext()
    )
    # Then: the runner's outcome, and nothing of the timeout written
    assert report["status"] == "succeeded"
    assert status_history(aws, f"jobs/{EXECUTION_MD5}/status.txt") == ["running"]


def test_a_second_runner_of_the_same_job_does_nothing(aws):
    # Given: the first runner has started
    aws.put_object(Bucket=BUCKET, Key=f"jobs/{EXECUTION_MD5}/status.txt", Body=b"running")
    runner = load_lambda_module("demo_job_runner", "handler")
    # When: another invocation arrives with a job that would fail at once
    runner.lambda_handler({"execution_md5": EXECUTION_MD5, "job": {"fail": True}}, LambdaContext())
    # Then: it neither worked nor wrote
    assert status_history(aws, f"jobs/{EXECUTION_MD5}/status.txt") == ["running"]
    assert aws.list_objects_v2(Bucket=BUCKET, Prefix=f"jobs/{EXECUTION_MD5}/result.json")["KeyCount"] == 0


@pytest.mark.parametrize("runner_started, invoked_again", [(True, 0), (False, 1)])
def test_a_retried_run_job_keeps_the_first_start_and_never_starts_a_second_runner(aws, runner_started, invoked_again):
    # Given: Run Job ran once (its answer lost), and the runner has or has not written its status yet
    handler = load_lambda_module("run_job", "handler")
    invocations: list[dict] = []
    handler.lambda_client.meta.events.register(
        "before-parameter-build.lambda.Invoke", lambda params, **_: invocations.append(dict(params))
    )
    event = {"context": {"Execution": {"Id": EXECUTION_ARN}}, "input": {"job": {}, "timeout_seconds": 30}}
    first = handler.lambda_handler(event, LambdaContext())
    first_record = read(aws, f"jobs/{EXECUTION_MD5}/context.json")
    if runner_started:
        aws.put_object(Bucket=BUCKET, Key=f"jobs/{EXECUTION_MD5}/status.txt", Body=b"running")
    # When: Step Functions retries it
    again = handler.lambda_handler(event, LambdaContext())
    # Then: the same start time and record; the runner invoked again only if it never started
    assert again == first
    assert read(aws, f"jobs/{EXECUTION_MD5}/context.json") == first_record
    assert len(invocations) == 1 + invoked_again


def test_get_job_status_refuses_an_execution_run_job_never_recorded(aws):
    handler = load_lambda_module("job_get_status", "handler")
    with pytest.raises(FileNotFoundError, match="context.json"):
        handler.lambda_handler({"execution_arn": EXECUTION_ARN}, LambdaContext())


def test_runner_writes_running_then_succeeded(aws):
    # Given
    handler = load_lambda_module("demo_job_runner", "handler")
    # When
    handler.lambda_handler({"execution_md5": EXECUTION_MD5, "job": {"duration_seconds": 0}}, LambdaContext())
    # Then
    assert status_history(aws, f"jobs/{EXECUTION_MD5}/status.txt") == ["running", "succeeded"]
    assert json.loads(read(aws, f"jobs/{EXECUTION_MD5}/result.json"))["status"] == "succeeded"


def test_a_failed_run_reaches_get_job_status_with_the_runners_message(aws):
    # Given
    put_context(aws, started=time.time(), timeout_seconds=30)
    runner = load_lambda_module("demo_job_runner", "handler")
    runner.lambda_handler(
        {"execution_md5": EXECUTION_MD5, "job": {"fail": True, "error_message": "disk full"}}, LambdaContext()
    )
    # When
    report = load_lambda_module("job_get_status", "handler").lambda_handler(
        {"execution_arn": EXECUTION_ARN}, LambdaContext()
    )
    # Then
    assert status_history(aws, f"jobs/{EXECUTION_MD5}/status.txt") == ["running", "failed"]
    assert report["status"] == "failed"
    assert report["error_message"] == "disk full"


def test_a_crashed_runner_leaves_running_behind(aws):
    # Given
    handler = load_lambda_module("demo_job_runner", "handler")
    # When
    with pytest.raises(SimulatedCrash):
        handler.lambda_handler({"execution_md5": EXECUTION_MD5, "job": {"crash": True}}, LambdaContext())
    # Then: no final status, so the poller can only end in JobTimeout
    assert status_history(aws, f"jobs/{EXECUTION_MD5}/status.txt") == ["running"]


def test_runner_reports_bad_job_parameters_as_the_jobs_failure(aws):
    # Given
    put_context(aws, started=time.time(), timeout_seconds=30)
    runner = load_lambda_module("demo_job_runner", "handler")
    # When
    runner.lambda_handler({"execution_md5": EXECUTION_MD5, "job": {"duration_seconds": -1}}, LambdaContext())
    report = load_lambda_module("job_get_status", "handler").lambda_handler(
        {"execution_arn": EXECUTION_ARN}, LambdaContext()
    )
    # Then
    assert status_history(aws, f"jobs/{EXECUTION_MD5}/status.txt") == ["failed"]
    assert report["error_message"].startswith("job.duration_seconds ")


# ---------------------------------------------------------------------------------------------
# Callback runner on moto: a real task token from a running execution
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def waiting_task():
    """An execution waiting on ``.waitForTaskToken``; yields (token, wait_for_result)."""
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        sqs = boto3.client("sqs", region_name=REGION)
        queue = sqs.create_queue(QueueName="tokens")["QueueUrl"]
        sfn = boto3.client("stepfunctions", region_name=REGION)
        definition = {
            "StartAt": "Wait For Callback",
            "States": {
                "Wait For Callback": {
                    "Type": "Task",
                    "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                    "Parameters": {"QueueUrl": queue, "MessageBody": {"token.$": "$$.Task.Token"}},
                    "HeartbeatSeconds": 5,
                    "TimeoutSeconds": 10,
                    "End": True,
                }
            },
        }
        machine = sfn.create_state_machine(
            name="callback", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/sfn"
        )["stateMachineArn"]
        execution = sfn.start_execution(stateMachineArn=machine, name="run-1", input="{}")["executionArn"]
        messages: list = []
        deadline = time.time() + 10
        while not messages and time.time() < deadline:
            messages = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1).get("Messages", [])
        token = json.loads(messages[0]["Body"])["token"]

        def wait_for_result() -> dict:
            while (described := sfn.describe_execution(executionArn=execution))["status"] == "RUNNING":
                time.sleep(0.05)
            return described

        yield token, wait_for_result


def run_callback_runner(event: dict) -> None:
    handler = load_lambda_module("demo_callback_job_runner", "handler")
    return handler.lambda_handler(event, LambdaContext())


def test_callback_runner_heartbeats_and_sends_task_success(waiting_task):
    # Given
    token, wait_for_result = waiting_task
    # When: two slices, so one heartbeat goes out between them
    run_callback_runner(
        {"task_token": token, "job": {"duration_seconds": 0.2}, "heartbeat_interval_seconds": 0.1}
    )
    # Then
    result = wait_for_result()
    assert result["status"] == "SUCCEEDED"
    assert json.loads(result["output"]) == {"status": "succeeded", "duration_seconds": 0.2}


def test_callback_runner_sends_task_failure_named_job_failed(waiting_task):
    # Given
    token, wait_for_result = waiting_task
    # When
    job = {"fail": True, "error_message": "disk full"}
    run_callback_runner({"task_token": token, "job": job, "heartbeat_interval_seconds": 15})
    # Then
    result = wait_for_result()
    assert result["status"] == "FAILED"
    assert result["error"] == "JobFailed"


def test_callback_runner_reports_bad_job_parameters_as_job_failed(waiting_task):
    token, wait_for_result = waiting_task
    run_callback_runner({"task_token": token, "job": {"duration_seconds": "x"}, "heartbeat_interval_seconds": 15})
    assert wait_for_result()["error"] == "JobFailed"


def test_callback_runner_stops_quietly_when_nobody_waits_for_the_token():
    # Given: a token Step Functions no longer accepts (its execution timed out or was stopped)
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}):
        # When: the heartbeat is refused
        outcome = run_callback_runner(
            {"task_token": "expired", "job": {"duration_seconds": 0.02}, "heartbeat_interval_seconds": 0.01}
        )
    # Then: the runner returned instead of failing its invocation (which would only log an error)
    assert outcome is None


@pytest.mark.parametrize(
    ("timeout", "initial_wait", "poll_interval", "refused"),
    [
        (86_400, 0, 35, False),  # 2,470 polls: 22,241 events, inside 25,000 less the 2,500 kept for retries
        (86_400, 0, 34, True),  # 2,543 polls: 22,898 events
        (86_400, 86_000, 1, False),  # the initial wait costs two events however long it is
        (3_600, 0, 1, True),  # the seed's one-hour job polled every second
        (900, 0, 1, False),
    ],
)
def test_settings_whose_polls_would_pass_the_history_limit_are_refused(validation, timeout, initial_wait, poll_interval, refused):
    settings = validation.normalize_job_input(
        {"job": {}, "timeout_seconds": timeout, "initial_wait_seconds": initial_wait, "poll_interval_seconds": poll_interval}
    )
    if refused:
        with pytest.raises(validation.InvalidJobInput, match=r"^poll_interval_seconds must be at least \d+ "):
            validation.check_history_budget(settings)
    else:
        assert validation.check_history_budget(settings) == settings


@pytest.mark.parametrize(
    "timeout, initial_wait, named",
    # 2,497 intervals fit after the initial wait: 49,940 s is exactly 2,497 intervals of 20 s
    [(50_000, 0, 21), (49_940, 0, 20), (86_400, 36_460, 20)],
)
def test_the_interval_a_refusal_names_is_the_shortest_accepted(validation, timeout, initial_wait, named):
    settings = validation.normalize_job_input(
        {"job": {}, "timeout_seconds": timeout, "initial_wait_seconds": initial_wait, "poll_interval_seconds": 1}
    )
    with pytest.raises(validation.InvalidJobInput) as refusal:
        validation.check_history_budget(settings)
    shortest = int(str(refusal.value).split("at least ")[1].split(" ")[0])
    assert shortest == named
    assert validation.check_history_budget({**settings, "poll_interval_seconds": shortest})
    with pytest.raises(validation.InvalidJobInput):
        validation.check_history_budget({**settings, "poll_interval_seconds": shortest - 1})

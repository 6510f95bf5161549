"""What a team's function relies on at run time: the job-reporting helper (on moto's S3, conditional writes
included) and how a processor's answer becomes an item's error (plain logic, no mocks)."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from patterns_common import map_retry as mr
from patterns_common.job_protocol import JobKeys
from patterns_common.job_runner import JobReport

BUCKET = "team-jobs"
MD5 = "0123456789abcdef0123456789abcdef"
KEYS = JobKeys(MD5)


@pytest.fixture
def s3(monkeypatch):
    monkeypatch.setenv("JOB_BUCKET_NAME", BUCKET)
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def read(s3, key: str) -> str:
    return s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode()


def test_a_report_marks_the_job_running_once_and_records_success(s3):
    # Given: the event Run Job starts a runner with
    report = JobReport.from_event({"execution_md5": MD5, "job": {"steps": 2}}, s3=s3)
    # When
    started, started_again = report.running(), JobReport.from_event({"execution_md5": MD5, "job": {}}, s3=s3).running()
    finished = report.succeeded()
    # Then: a second runner of the same job is told not to work; the final record is what Get Job Status reads
    assert (started, started_again, finished) == (True, False, True)
    assert report.job == {"steps": 2}
    assert read(s3, KEYS.status) == "succeeded"
    assert json.loads(read(s3, KEYS.result))["status"] == "succeeded"


def test_a_failure_carries_the_runners_message(s3):
    # Given
    report = JobReport.from_event({"execution_md5": MD5, "job": {}}, s3=s3)
    report.running()
    # When
    report.failed("step 2 of 3 failed")
    # Then
    assert read(s3, KEYS.status) == "failed"
    assert json.loads(read(s3, KEYS.result))["error_message"] == "step 2 of 3 failed"


def test_a_result_after_the_poller_timed_the_job_out_is_dropped(s3):
    # Given: Get Job Status recorded the job timed out (result.json first, then status.txt)
    report = JobReport.from_event({"execution_md5": MD5, "job": {}}, s3=s3)
    report.running()
    s3.put_object(Bucket=BUCKET, Key=KEYS.result, Body=b'{"status": "timed_out", "finished_at": 1}')
    s3.put_object(Bucket=BUCKET, Key=KEYS.status, Body=b"timed_out")
    # When
    recorded = report.succeeded()
    # Then
    assert recorded is False
    assert read(s3, KEYS.status) == "timed_out"
    assert json.loads(read(s3, KEYS.result))["status"] == "timed_out"


def test_a_job_that_timed_out_before_its_runner_started_is_not_run(s3):
    # Given
    s3.put_object(Bucket=BUCKET, Key=KEYS.status, Body=b"timed_out")
    # When / Then
    assert JobReport.from_event({"execution_md5": MD5, "job": {}}, s3=s3).running() is False
    assert read(s3, KEYS.status) == "timed_out"


# -- a team's processor's answer (Lambda Invoke: https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html)
def test_a_processor_that_returned_is_a_success():
    assert mr.check_processor_answer(None, b'{"id": "A"}') is None


@pytest.mark.parametrize(
    "function_error, payload, error",
    [
        # an exception the handler raised: Lambda's Python runtime names it by class
        # (https://docs.aws.amazon.com/lambda/latest/dg/python-exceptions.html)
        ("Unhandled", b'{"errorMessage": "A: refused", "errorType": "DownstreamNotReady", "stackTrace": []}', "DownstreamNotReady"),
        ("Unhandled", b'{"errorMessage": "Task timed out after 30.00 seconds", "errorType": "Sandbox.Timedout"}', "Sandbox.Timedout"),
        ("Unhandled", b"not json", "Lambda.Unhandled"),
        ("Handled", b"[1, 2]", "Lambda.Handled"),
    ],
)
def test_a_processor_that_raised_fails_the_item_with_its_error_name(function_error, payload, error):
    with pytest.raises(mr.ItemFailed) as raised:
        mr.check_processor_answer(function_error, payload)
    assert raised.value.error_name == error


def test_a_chunk_records_a_remote_processors_error_name_as_the_items_error():
    # Given: a processor elsewhere failing B with an error name that is no Python class name
    def process(item, attempt):
        if item["id"] == "B":
            raise mr.ItemFailed("Sandbox.Timedout", "Task timed out")

    entries = [{"item": {"id": "A"}, "attempt": 1}, {"item": {"id": "B"}, "attempt": 1}]
    # When
    results = mr.process_chunk(entries, process, lambda: 600_000, 30_000, {}, lambda position, error: error)
    # Then
    assert results == ["A", {"id": "B", "error": "Sandbox.Timedout"}]

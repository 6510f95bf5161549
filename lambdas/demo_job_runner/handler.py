"""Demo job runner for the S3 poller: writes running, works, then succeeded or failed to status.txt.

Invoked asynchronously by Run Job with ``{"execution_md5": ..., "job": {...}}``. The function is
deployed with no asynchronous retries: a crashed runner must stay crashed (the poller then ends in
JobTimeout) rather than run the job a second time. It reports through patterns_common.job_runner, the
helper a team's runner uses too: a second runner of the same job finds status.txt and does nothing,
and a runner that finishes after Get Job Status timed the job out leaves the timed_out record alone.
"""

from __future__ import annotations

import os
import time
from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.job_demo import DemoJob, InvalidDemoJob
from patterns_common.job_protocol import JobKeys, JobStatus
from patterns_common.job_runner import JobReport
from patterns_common.observability import logger, tracer

JOB_BUCKET_NAME = os.environ["JOB_BUCKET_NAME"]
s3 = boto3.client("s3")


def finish(keys: JobKeys, status: JobStatus, error_message: str | None = None) -> None:
    report = JobReport(keys, None, bucket=JOB_BUCKET_NAME, s3=s3)
    if not (report.succeeded() if status is JobStatus.SUCCEEDED else report.failed(error_message)):
        logger.warning("The job was already recorded as timed out; this late result is dropped", extra={"status": status.value})
        return
    logger.info("Job finished", extra={"status": status.value, "error_message": error_message})


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> None:
    report = JobReport.from_event(event, s3=s3)
    logger.append_keys(execution_md5=report.keys.md5)
    try:
        job = DemoJob.parse(report.job)
    except InvalidDemoJob as error:
        finish(report.keys, JobStatus.FAILED, str(error))
        return
    if not report.running():
        logger.warning("status.txt exists: another runner started this job, or it timed out; not running it")
        return
    time.sleep(job.duration_seconds)
    error_message = job.outcome()
    finish(report.keys, JobStatus.FAILED if error_message else JobStatus.SUCCEEDED, error_message)

"""Demo job runner for the S3 poller: writes running, works, then succeeded or failed to status.txt.

Invoked asynchronously by Run Job with ``{"execution_md5": ..., "job": {...}}``. The function is
deployed with no asynchronous retries: a crashed runner must stay crashed (the poller then ends in
JobTimeout) rather than run the job a second time. The writes are conditional (see
patterns_common.job_protocol): a second runner of the same job finds status.txt and does nothing,
and a runner that finishes after Get Job Status timed the job out leaves the timed_out record alone.
"""

from __future__ import annotations

import os
import time
from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import ClientError

from patterns_common.job_demo import DemoJob, InvalidDemoJob
from patterns_common.job_protocol import LOST_CONDITIONAL_WRITE, JobKeys, JobStatus, result_json
from patterns_common.observability import logger, tracer

JOB_BUCKET_NAME = os.environ["JOB_BUCKET_NAME"]
s3 = boto3.client("s3")


def put(key: str, body: str, *, only_if_absent: bool = False) -> bool:
    """Write the object; with ``only_if_absent``, False (and no write) when it already exists."""
    try:
        s3.put_object(
            Bucket=JOB_BUCKET_NAME, Key=key, Body=body.encode("utf-8"), **({"IfNoneMatch": "*"} if only_if_absent else {})
        )
    except ClientError as error:
        if only_if_absent and error.response["Error"]["Code"] in LOST_CONDITIONAL_WRITE:
            return False
        raise
    return True


def finish(keys: JobKeys, status: JobStatus, error_message: str | None = None) -> None:
    # result.json first, and only if nobody wrote one: it decides the outcome; status.txt follows it
    if not put(keys.result, result_json(status, finished_at=time.time(), error_message=error_message), only_if_absent=True):
        logger.warning("The job was already recorded as timed out; this late result is dropped", extra={"status": status.value})
        return
    put(keys.status, status.value)
    logger.info("Job finished", extra={"status": status.value, "error_message": error_message})


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> None:
    keys = JobKeys(event["execution_md5"])
    logger.append_keys(execution_md5=keys.md5)
    try:
        job = DemoJob.parse(event.get("job"))
    except InvalidDemoJob as error:
        finish(keys, JobStatus.FAILED, str(error))
        return
    if not put(keys.status, JobStatus.RUNNING.value, only_if_absent=True):
        logger.warning("status.txt exists: another runner started this job, or it timed out; not running it")
        return
    time.sleep(job.duration_seconds)
    error_message = job.outcome()
    finish(keys, JobStatus.FAILED if error_message else JobStatus.SUCCEEDED, error_message)

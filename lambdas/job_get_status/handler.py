"""Get Job Status: reads context.json and status.txt for this execution and reports the job's status.

On a timeout it first records ``timed_out`` in the bucket (result.json only if absent, then
status.txt), so the objects never contradict the execution's JobTimeout and a late runner cannot
overwrite them; if the runner's result.json got there first, that result is reported instead.
"""

from __future__ import annotations

import os
import time
from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import ClientError
from job_get_status_logic import JobReport, JobTimeout, job_report, report_from_result

from patterns_common.job_protocol import LOST_CONDITIONAL_WRITE, JobContext, JobKeys, JobStatus, result_json
from patterns_common.observability import logger, metrics, tracer

JOB_BUCKET_NAME = os.environ["JOB_BUCKET_NAME"]
s3 = boto3.client("s3")


def read_text(key: str) -> str | None:
    """The object's text, or None when it does not exist (the role may list the bucket, so S3 says 404)."""
    try:
        return s3.get_object(Bucket=JOB_BUCKET_NAME, Key=key)["Body"].read().decode("utf-8")
    except s3.exceptions.NoSuchKey:
        return None


def record_timeout(keys: JobKeys, message: str, now: float, elapsed: float) -> JobReport | None:
    """Make timed_out the job's final record; the runner's report instead if it finished first."""
    try:
        s3.put_object(
            Bucket=JOB_BUCKET_NAME,
            Key=keys.result,
            Body=result_json(JobStatus.TIMED_OUT, finished_at=now, error_message=message).encode("utf-8"),
            IfNoneMatch="*",
        )
    except ClientError as error:
        if error.response["Error"]["Code"] not in LOST_CONDITIONAL_WRITE:
            raise
        finished = report_from_result(read_text(keys.result), elapsed)
        if finished is not None:
            logger.info("The job finished just before its timeout", extra=finished.to_dict())
            return finished
    s3.put_object(Bucket=JOB_BUCKET_NAME, Key=keys.status, Body=JobStatus.TIMED_OUT.value.encode("utf-8"))
    return None


@metrics.log_metrics
@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    keys = JobKeys.for_execution(event["execution_arn"])
    logger.append_keys(execution_md5=keys.md5)
    context_text = read_text(keys.context)
    if context_text is None:
        raise FileNotFoundError(f"{keys.context} is missing: Run Job did not record this execution's start")
    now = time.time()
    job_context = JobContext.from_json(context_text)
    try:
        report = job_report(
            context=job_context,
            status_text=read_text(keys.status),
            read_result=lambda: read_text(keys.result),
            now=now,
        )
    except JobTimeout as timeout:
        report = record_timeout(keys, str(timeout), now, round(now - job_context.job_start_timestamp, 3))
        if report is None:
            metrics.add_metric(name="JobsTimedOut", unit=MetricUnit.Count, value=1)
            raise
    logger.info("Job status", extra=report.to_dict())
    return report.to_dict()

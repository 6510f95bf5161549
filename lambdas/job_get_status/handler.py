"""Get Job Status: reads context.json and status.txt for this execution and reports the job's status."""

from __future__ import annotations

import os
import time
from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext
from logic import job_report

from patterns_common.job_protocol import JobContext, JobKeys
from patterns_common.observability import logger, tracer

JOB_BUCKET_NAME = os.environ["JOB_BUCKET_NAME"]
s3 = boto3.client("s3")


def read_text(key: str) -> str | None:
    """The object's text, or None when it does not exist (the role may list the bucket, so S3 says 404)."""
    try:
        return s3.get_object(Bucket=JOB_BUCKET_NAME, Key=key)["Body"].read().decode("utf-8")
    except s3.exceptions.NoSuchKey:
        return None


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    keys = JobKeys.for_execution(event["execution_arn"])
    logger.append_keys(execution_md5=keys.md5)
    context_text = read_text(keys.context)
    if context_text is None:
        raise FileNotFoundError(f"{keys.context} is missing: Run Job did not record this execution's start")
    report = job_report(
        context=JobContext.from_json(context_text),
        status_text=read_text(keys.status),
        read_result=lambda: read_text(keys.result),
        now=time.time(),
    )
    logger.info("Job status", extra=report.to_dict())
    return report.to_dict()

"""Run Job: records the job's start in S3 (context.json), then starts the runner asynchronously.

Exactly once: context.json is created only if absent. A retried Run Job (its first attempt ran but
its answer was lost) finds it, keeps the first start time, and starts the runner again only if no
runner has written status.txt yet; a runner that still finds status.txt there does nothing.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import ClientError
from run_job_logic import plan_job_start, started_before

from patterns_common.job_protocol import LOST_CONDITIONAL_WRITE, JobContext
from patterns_common.observability import logger, tracer

JOB_BUCKET_NAME = os.environ["JOB_BUCKET_NAME"]
JOB_RUNNER_FUNCTION_NAME = os.environ["JOB_RUNNER_FUNCTION_NAME"]
s3 = boto3.client("s3")
lambda_client = boto3.client("lambda")


def exists(key: str) -> bool:
    try:
        s3.head_object(Bucket=JOB_BUCKET_NAME, Key=key)
    except ClientError as error:
        if error.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"):
            return False
        raise
    return True


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    start = plan_job_start(context_object=event["context"], job_input=event["input"], now=time.time())
    logger.append_keys(execution_md5=start.keys.md5)
    # The start time is stored before the runner exists, so a runner that never starts still times out.
    try:
        s3.put_object(
            Bucket=JOB_BUCKET_NAME,
            Key=start.keys.context,
            Body=start.context_json,
            ContentType="application/json",
            IfNoneMatch="*",
        )
    except ClientError as error:
        if error.response["Error"]["Code"] not in LOST_CONDITIONAL_WRITE:
            raise
        first = JobContext.from_json(s3.get_object(Bucket=JOB_BUCKET_NAME, Key=start.keys.context)["Body"].read())
        start = started_before(start, first.job_start_timestamp)
        if exists(start.keys.status):
            logger.info("Run Job retried after the runner started; not starting another", extra=start.result)
            return start.result
    lambda_client.invoke(
        FunctionName=JOB_RUNNER_FUNCTION_NAME, InvocationType="Event", Payload=json.dumps(start.runner_payload)
    )
    logger.info("Job started", extra={"context_key": start.keys.context})
    return start.result

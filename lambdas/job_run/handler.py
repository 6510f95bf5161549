"""Run Job: records the job's start in S3 (context.json), then starts the runner asynchronously."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext
from logic import plan_job_start

from patterns_common.observability import logger, tracer

JOB_BUCKET_NAME = os.environ["JOB_BUCKET_NAME"]
JOB_RUNNER_FUNCTION_NAME = os.environ["JOB_RUNNER_FUNCTION_NAME"]
s3 = boto3.client("s3")
lambda_client = boto3.client("lambda")


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    start = plan_job_start(context_object=event["context"], job_input=event["input"], now=time.time())
    logger.append_keys(execution_md5=start.keys.md5)
    # The start time is stored before the runner exists, so a runner that never starts still times out.
    s3.put_object(
        Bucket=JOB_BUCKET_NAME, Key=start.keys.context, Body=start.context_json, ContentType="application/json"
    )
    lambda_client.invoke(
        FunctionName=JOB_RUNNER_FUNCTION_NAME, InvocationType="Event", Payload=json.dumps(start.runner_payload)
    )
    logger.info("Job started", extra={"context_key": start.keys.context})
    return start.result

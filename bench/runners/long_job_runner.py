"""Bench-only runner for the S3 poller: the demo runner's protocol with no 880-second cap.

The app's demo runner is a Lambda and refuses jobs it could not finish within Lambda's 15 minutes;
this one is deployed with a timeout that fits the longest bench job. It writes status.txt
(``running``, then ``succeeded``) and result.json exactly as ``patterns_common.job_protocol`` says.
"""

from __future__ import annotations

import os
import time

import boto3

from patterns_common.job_protocol import JobKeys, JobStatus, result_json

s3 = boto3.client("s3")
BUCKET = os.environ["JOB_BUCKET_NAME"]


def put(key: str, body: str) -> None:
    s3.put_object(Bucket=BUCKET, Key=key, Body=body.encode("utf-8"))


def lambda_handler(event, context):
    keys = JobKeys(event["execution_md5"])
    put(keys.status, JobStatus.RUNNING.value)
    time.sleep(event["job"]["duration_seconds"])
    put(keys.result, result_json(JobStatus.SUCCEEDED, finished_at=time.time()))
    put(keys.status, JobStatus.SUCCEEDED.value)

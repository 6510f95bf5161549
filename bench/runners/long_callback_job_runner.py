"""Bench-only runner for the callback machine: the demo runner's heartbeats and report, no 880-second cap."""

from __future__ import annotations

import json
import time

import boto3

from patterns_common.job_demo import work_slices

sfn = boto3.client("stepfunctions")


def lambda_handler(event, context):
    token = event["task_token"]
    duration = event["job"]["duration_seconds"]
    for index, seconds in enumerate(work_slices(duration, event["heartbeat_interval_seconds"])):
        if index:
            sfn.send_task_heartbeat(taskToken=token)
        time.sleep(seconds)
    sfn.send_task_success(taskToken=token, output=json.dumps({"status": "succeeded", "duration_seconds": duration}))

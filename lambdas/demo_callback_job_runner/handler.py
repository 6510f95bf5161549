"""Demo job runner for the callback machine: works, heartbeats, then reports through the task token.

Invoked asynchronously by "Run Job And Wait For Callback" with ``{"task_token": ..., "job": {...},
"heartbeat_interval_seconds": N}``. It sends a heartbeat at once and before each slice of work,
and ends the task itself with SendTaskSuccess or SendTaskFailure (error ``JobFailed``, cause = the
job's message). If it dies, no heartbeat arrives and the task fails with States.HeartbeatTimeout, mapped to JobTimeout.
"""

from __future__ import annotations

import json
import time
from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.job_demo import DemoJob, InvalidDemoJob, work_slices
from patterns_common.observability import logger, tracer

sfn = boto3.client("stepfunctions")
# The execution is gone (stopped, timed out, or the token expired): nobody is waiting for this job.
TASK_GONE = (sfn.exceptions.TaskTimedOut, sfn.exceptions.TaskDoesNotExist, sfn.exceptions.InvalidToken)


def fail(token: str, message: str) -> None:
    sfn.send_task_failure(taskToken=token, error="JobFailed", cause=message)
    logger.info("Job failed", extra={"error_message": message})


def run(token: str, parameters: Any, heartbeat_interval_seconds: float) -> None:
    try:
        job = DemoJob.parse(parameters)
    except InvalidDemoJob as error:
        fail(token, str(error))
        return
    # A heartbeat before each slice, the first at once: the runner may start late (a throttled
    # function's event waits in Lambda's queue), and the task's clock has run since the invoke.
    for seconds in work_slices(job.duration_seconds, heartbeat_interval_seconds):
        sfn.send_task_heartbeat(taskToken=token)
        time.sleep(seconds)
    error_message = job.outcome()
    if error_message:
        fail(token, error_message)
        return
    output = {"status": "succeeded", "duration_seconds": job.duration_seconds}
    sfn.send_task_success(taskToken=token, output=json.dumps(output))
    logger.info("Job succeeded")


@logger.inject_lambda_context
# The event holds a task token (whoever has it can end the task); an error from a call made with it
# is not recorded in a trace either.
@tracer.capture_lambda_handler(capture_error=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> None:
    try:
        run(event["task_token"], event.get("job"), event["heartbeat_interval_seconds"])
    except TASK_GONE as error:
        logger.warning("Nobody waits for this job any more; stopping", extra={"error": error.response["Error"]["Code"]})

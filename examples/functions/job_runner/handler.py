"""The team's job runner for the S3 poller: reports through patterns_common.job_runner (no S3 key or
conditional write of its own). Its job: {"steps": n, "fail_at_step": k or absent}."""

from __future__ import annotations

import time
from typing import Any

from patterns_common.job_runner import JobReport


class StepFailed(Exception):
    pass


def run_steps(job: dict[str, Any]) -> None:
    for step in range(1, job.get("steps", 1) + 1):
        time.sleep(1)  # one step of the team's work
        if step == job.get("fail_at_step"):
            raise StepFailed(f"step {step} of {job['steps']} failed")


def lambda_handler(event: dict[str, Any], context: Any) -> None:
    report = JobReport.from_event(event)
    if not report.running():
        return  # another runner has this job, or the poller timed it out
    try:
        run_steps(report.job)
    except StepFailed as error:
        report.failed(str(error))
        return
    report.succeeded()

"""What a job runner of the S3 poller calls to report its job: ``running``, then ``succeeded`` or
``failed``, written as patterns_common.job_protocol says (keys, conditional writes, result.json before
the final status), so a runner never writes an S3 key itself.

A runner is invoked asynchronously by Run Job with ``{"execution_md5": ..., "job": {...}}`` and finds
the job bucket in its ``JOB_BUCKET_NAME`` environment variable (the JobPoller construct sets it):

    report = JobReport.from_event(event)
    if not report.running():        # another runner has this job, or it already timed out
        return
    try:
        do_the_work(report.job)
    except WorkFailed as error:
        report.failed(str(error))   # the execution fails with JobFailed, cause = this message
        return
    report.succeeded()

A runner that dies without reporting leaves ``running``: the execution ends in ``JobTimeout`` once the
job has run its ``timeout_seconds``.
"""

from __future__ import annotations

import os
import time
from typing import Any

import boto3
from botocore.exceptions import ClientError

from patterns_common.job_protocol import LOST_CONDITIONAL_WRITE, JobKeys, JobStatus, result_json


class JobReport:
    """Reports one job's progress to the S3 poller through the job bucket."""

    def __init__(self, keys: JobKeys, job: Any, *, bucket: str, s3: Any = None) -> None:
        self.keys = keys
        self.job = job
        self._bucket = bucket
        self._s3 = s3 or boto3.client("s3")

    @classmethod
    def from_event(cls, event: dict[str, Any], *, s3: Any = None) -> "JobReport":
        """The report of the job Run Job invoked this runner with."""
        return cls(JobKeys(event["execution_md5"]), event.get("job"), bucket=os.environ["JOB_BUCKET_NAME"], s3=s3)

    def running(self) -> bool:
        """Mark the job started. False (nothing written) when a status exists already: another runner
        started this job, or the poller timed it out; then this runner must not work."""
        return self._put(self.keys.status, JobStatus.RUNNING.value, only_if_absent=True)

    def succeeded(self) -> bool:
        """Record success; False when the job was already final (the poller timed it out first)."""
        return self._finish(JobStatus.SUCCEEDED, None)

    def failed(self, error_message: str) -> bool:
        """Record failure with the message the execution's ``JobFailed`` cause carries; False when the
        job was already final."""
        return self._finish(JobStatus.FAILED, error_message)

    def _finish(self, status: JobStatus, error_message: str | None) -> bool:
        # result.json first, and only if nobody wrote one: it decides the outcome; status.txt follows it
        record = result_json(status, finished_at=time.time(), error_message=error_message)
        if not self._put(self.keys.result, record, only_if_absent=True):
            return False
        self._put(self.keys.status, status.value)
        return True

    def _put(self, key: str, body: str, *, only_if_absent: bool = False) -> bool:
        try:
            self._s3.put_object(
                Bucket=self._bucket, Key=key, Body=body.encode("utf-8"), **({"IfNoneMatch": "*"} if only_if_absent else {})
            )
        except ClientError as error:
            if only_if_absent and error.response["Error"]["Code"] in LOST_CONDITIONAL_WRITE:
                return False
            raise
        return True

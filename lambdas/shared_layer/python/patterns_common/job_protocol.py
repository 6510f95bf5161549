"""The S3 contract between Run Job, the job runner and Get Job Status: keys, status values, records.

Everything one execution writes lives under ``jobs/<md5 hex of the execution ARN>/``:

- ``context.json``: written once by Run Job before the runner starts: ``job_start_timestamp`` (epoch
  seconds), ``execution_arn`` and the validated input (``job``, ``timeout_seconds``,
  ``initial_wait_seconds``, ``poll_interval_seconds``). Written with ``If-None-Match: *``: a retried
  Run Job keeps the first start time.
- ``status.txt``: ``running`` (the runner, only if no status exists yet: a second runner finds it and
  does nothing), then ``succeeded`` or ``failed`` (the runner) or ``timed_out`` (Get Job Status, once
  the job ran ``timeout_seconds``). A final status never changes. No object yet means not started.
- ``result.json``: the final record (``status``, ``finished_at``, ``error_message`` unless it
  succeeded), created once with ``If-None-Match: *`` *before* the final status: whoever creates it
  first, the runner finishing or Get Job Status timing the job out, decides the outcome, and the
  other leaves both objects alone.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Mapping

JOBS_PREFIX = "jobs/"
NO_FAILURE_MESSAGE = "the job runner reported failure without a message"


class JobStatus(StrEnum):
    NOT_STARTED = "not_started"  # never written: the absence of status.txt
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"  # written by Get Job Status, never by a runner


WRITTEN_STATUSES = (JobStatus.RUNNING, JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.TIMED_OUT)
FINAL_STATUSES = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.TIMED_OUT})
# S3 answers a conditional write that lost with 412, or 409 while another write of the key is in flight.
LOST_CONDITIONAL_WRITE = frozenset({"PreconditionFailed", "ConditionalRequestConflict"})


def execution_md5(execution_arn: str) -> str:
    """Key of one execution's job data: md5 keeps keys short and free of ARN punctuation."""
    if not execution_arn:
        raise ValueError("execution ARN must be a non-empty string")
    # Equivalent mutants only: usedforsecurity does not change the digest, codec names ignore case.
    return hashlib.md5(execution_arn.encode("utf-8"), usedforsecurity=False).hexdigest()  # pragma: no mutate


@dataclass(frozen=True)
class JobKeys:
    md5: str

    @classmethod
    def for_execution(cls, execution_arn: str) -> "JobKeys":
        return cls(execution_md5(execution_arn))

    @property
    def prefix(self) -> str:
        return f"{JOBS_PREFIX}{self.md5}/"

    @property
    def context(self) -> str:
        return f"{self.prefix}context.json"

    @property
    def status(self) -> str:
        return f"{self.prefix}status.txt"

    @property
    def result(self) -> str:
        return f"{self.prefix}result.json"


@dataclass(frozen=True)
class JobContext:
    """What Get Job Status needs from context.json: when the job started and how long it may take."""

    job_start_timestamp: float
    timeout_seconds: int

    def to_json(self, *, execution_arn: str, parameters: Mapping[str, Any]) -> str:
        return json.dumps(
            {
                **parameters,
                "job_start_timestamp": self.job_start_timestamp,
                "timeout_seconds": self.timeout_seconds,
                "execution_arn": execution_arn,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> "JobContext":
        record = json.loads(text)
        return cls(
            job_start_timestamp=float(record["job_start_timestamp"]), timeout_seconds=int(record["timeout_seconds"])
        )


def parse_status(text: str | None) -> JobStatus:
    """status.txt content -> status; ``None`` (no object) means not started. Unknown text is an error."""
    if text is None:
        return JobStatus.NOT_STARTED
    value = text.strip()
    if value not in {status.value for status in WRITTEN_STATUSES}:
        raise ValueError(
            f"status.txt holds {value!r}, not one of {', '.join(status.value for status in WRITTEN_STATUSES)}"
        )
    return JobStatus(value)


def result_json(status: JobStatus, *, finished_at: float, error_message: str | None = None) -> str:
    if status not in FINAL_STATUSES:
        raise ValueError(f"result.json records a final status, not {status.value!r}")
    record: dict[str, Any] = {"status": status.value, "finished_at": finished_at}
    if status is not JobStatus.SUCCEEDED:
        record["error_message"] = error_message or NO_FAILURE_MESSAGE
    return json.dumps(record)


def result_status(result_text: str | None) -> JobStatus | None:
    """The final status result.json records, or None when it is absent or unreadable."""
    try:
        # Any other text in place of "null" fails to parse, which is also None: equivalent mutants.
        status = JobStatus(json.loads(result_text or "null").get("status"))  # pragma: no mutate
    except (ValueError, AttributeError):
        return None
    return status if status in FINAL_STATUSES else None


def failure_message(result_text: str | None) -> str:
    """The runner's message from result.json, or a fixed one when it left none (or left garbage)."""
    if result_text is None:
        return NO_FAILURE_MESSAGE
    try:
        message = json.loads(result_text).get("error_message")
    except (ValueError, AttributeError):
        return NO_FAILURE_MESSAGE
    return message if isinstance(message, str) and message.strip() else NO_FAILURE_MESSAGE

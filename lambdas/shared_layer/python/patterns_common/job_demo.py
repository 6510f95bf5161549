"""The demo job both runners execute: its parameters, how long it works and how it ends.

``{"duration_seconds": 15, "fail": false, "error_message": "...", "crash": false}``: work for
``duration_seconds``, then succeed, or fail with ``error_message`` when ``fail`` is true, or die
without reporting anything when ``crash`` is true (what a runner killed by an out-of-memory error or a
Lambda timeout looks like to the machine).

The runners are Lambda functions, so a job can work at most 15 minutes (Lambda's maximum timeout)
minus the time to report; a real job that runs longer belongs on AWS Batch or ECS, which the same
machines drive unchanged because they only read status.txt or wait for the task token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

RUNNER_TIMEOUT_SECONDS = 900  # Lambda's maximum; the runner functions are deployed with it
REPORTING_MARGIN_SECONDS = 20  # cold start plus the final S3 writes or Step Functions call
MAX_DURATION_SECONDS = RUNNER_TIMEOUT_SECONDS - REPORTING_MARGIN_SECONDS
DEFAULT_ERROR_MESSAGE = "the demo job failed as asked (job.fail is true)"
FIELDS = ("duration_seconds", "fail", "error_message", "crash")


class InvalidDemoJob(ValueError):
    """The job parameters are unusable; the runner reports this as the job's failure."""


class SimulatedCrash(RuntimeError):
    """Raised on purpose (job.crash) so the runner ends without reporting a final status."""


@dataclass(frozen=True)
class DemoJob:
    duration_seconds: float = 0
    fail: bool = False
    error_message: str = DEFAULT_ERROR_MESSAGE
    crash: bool = False

    @classmethod
    def parse(cls, job: Any) -> "DemoJob":
        if not isinstance(job, dict):
            raise InvalidDemoJob(f"job must be a JSON object, got {type(job).__name__}")
        unknown = sorted(set(job) - set(FIELDS))
        if unknown:
            raise InvalidDemoJob(f"job.{unknown[0]} is not a demo job field (expected {', '.join(FIELDS)})")
        duration = job.get("duration_seconds", 0)
        if isinstance(duration, bool) or not isinstance(duration, (int, float)) or not (
            0 <= duration <= MAX_DURATION_SECONDS
        ):
            raise InvalidDemoJob(
                f"job.duration_seconds must be a number from 0 to {MAX_DURATION_SECONDS}, got {duration!r}"
            )
        for flag in ("fail", "crash"):
            if not isinstance(job.get(flag, False), bool):
                raise InvalidDemoJob(f"job.{flag} must be true or false, got {job[flag]!r}")
        message = job.get("error_message", DEFAULT_ERROR_MESSAGE)
        if not isinstance(message, str) or not message.strip():
            raise InvalidDemoJob(f"job.error_message must be a non-empty string, got {message!r}")
        if job.get("fail", False) and job.get("crash", False):
            raise InvalidDemoJob("job.fail and job.crash cannot both be true")
        return cls(
            duration_seconds=duration,
            fail=job.get("fail", False),
            error_message=message,
            crash=job.get("crash", False),
        )

    def outcome(self) -> str | None:
        """After the work: ``None`` on success, the error message on failure; raises on a crash."""
        if self.crash:
            raise SimulatedCrash("the demo job crashed on purpose (job.crash is true) without reporting")
        return self.error_message if self.fail else None


def work_slices(duration_seconds: float, slice_seconds: float) -> list[float]:
    """Split the work into slices of at most ``slice_seconds`` so a heartbeat can go out between them."""
    if slice_seconds <= 0:
        raise ValueError("slice_seconds must be positive")
    count = max(1, math.ceil(duration_seconds / slice_seconds))
    slices = [float(slice_seconds)] * (count - 1)
    return [*slices, duration_seconds - slice_seconds * (count - 1)]

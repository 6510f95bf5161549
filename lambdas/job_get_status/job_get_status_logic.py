"""Get Job Status: turns what the runner wrote into a status for "Job Complete?", or a JobTimeout.

Timeout edge: the job gets strictly less than ``timeout_seconds``; a poll that finds it unfinished at
``elapsed >= timeout_seconds`` (exactly the limit included) raises ``JobTimeout``. A status that is
already final wins over the clock: the timeout bounds how long the machine waits for an unfinished
job and never discards a result that is there. The handler records the timeout in the bucket before
raising; if the runner's result got there first, ``report_from_result`` reports that instead.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

from patterns_common.job_protocol import (
    JobContext,
    JobStatus,
    failure_message,
    parse_status,
    result_status,
)


class JobTimeout(Exception):
    """The job did not finish in time; the class name is the Step Functions error name."""


@dataclass(frozen=True)
class JobReport:
    status: str
    elapsed_seconds: float
    error_message: str | None = None  # always present in the output so ResultSelector can select it

    def to_dict(self) -> dict:
        return asdict(self)


def job_report(
    *, context: JobContext, status_text: str | None, read_result: Callable[[], str | None], now: float
) -> JobReport:
    """``status_text`` is status.txt (``None`` when absent); ``read_result`` fetches result.json if needed."""
    elapsed = round(now - context.job_start_timestamp, 3)
    try:
        status = parse_status(status_text)
    except ValueError as error:
        # A runner writing something else is broken; waiting for the timeout would only hide that.
        return JobReport(JobStatus.FAILED.value, elapsed, str(error))
    if status is JobStatus.SUCCEEDED:
        return JobReport(status.value, elapsed)
    if status is JobStatus.FAILED:
        return JobReport(status.value, elapsed, failure_message(read_result()))
    if status is JobStatus.TIMED_OUT:  # recorded by an earlier attempt of this poll
        raise JobTimeout(failure_message(read_result()))
    if elapsed >= context.timeout_seconds:
        raise JobTimeout(
            f"job still {status.value} after {elapsed:g} s; timeout_seconds is {context.timeout_seconds}"
        )
    return JobReport(status.value, elapsed)


def report_from_result(result_text: str | None, elapsed: float) -> JobReport | None:
    """The runner's outcome when its result.json beat the timeout record; None when it is a timeout."""
    status = result_status(result_text)
    if status is JobStatus.SUCCEEDED:
        return JobReport(status.value, elapsed)
    if status is JobStatus.FAILED:
        return JobReport(status.value, elapsed, failure_message(result_text))
    return None

"""Run Job: from the context object and the validated input, the record that starts the job's clock."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

from patterns_common.job_protocol import JobContext, JobKeys


@dataclass(frozen=True)
class JobStart:
    keys: JobKeys
    context_json: str
    runner_payload: dict[str, Any]
    result: dict[str, Any]


def plan_job_start(*, context_object: Mapping[str, Any], job_input: Mapping[str, Any], now: float) -> JobStart:
    """``context_object`` is the Step Functions context (``$$``); its ``Execution.Id`` is the execution ARN.

    ``$$.Execution.Input`` is the raw execution input, so the validated input (with its defaults)
    arrives beside it.
    """
    execution_arn = context_object["Execution"]["Id"]
    keys = JobKeys.for_execution(execution_arn)
    context = JobContext(job_start_timestamp=now, timeout_seconds=job_input["timeout_seconds"])
    return JobStart(
        keys=keys,
        context_json=context.to_json(execution_arn=execution_arn, parameters=job_input),
        runner_payload={"execution_md5": keys.md5, "job": job_input["job"]},
        result={"execution_md5": keys.md5, "job_start_timestamp": now},
    )


def started_before(start: JobStart, job_start_timestamp: float) -> JobStart:
    """The same start as recorded by an earlier attempt: its start time, not this attempt's."""
    return replace(start, result={**start.result, "job_start_timestamp": job_start_timestamp})

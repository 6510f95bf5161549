"""One benchmark run: start an execution, wait for its end without disturbing the clock, take its figures."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from emulator import pricing
from emulator.follow import ExecutionResult, follow
from emulator.server import ACCOUNT_ID, REGION

# A run still going after this much wall time is stopped and reported as such.
WALL_LIMIT_SECONDS = 600
# How often the bench looks at the execution. The look is an in-process attribute read, not an
# API call: an API request is work the simulated clock waits for, so polling describe_execution
# would itself slow every Wait state down.
POLL_SECONDS = 0.005
# Functions of the app that never run for the execution measured: they answer alarm state changes
# (every alarm in the account: the monitoring alarms change state as the bench's failing runs move
# them), the hourly schedule and people's clicks. Invocations of these during a run are not its cost.
BACKGROUND_FUNCTIONS = ("ApplyAlarmChange", "DispatchAlerts", "ActionsEndpoint")


@dataclass
class Run:
    """The figures of one execution: what results.md and the charts show."""

    machine: str
    scenario: str
    design: str
    status: str
    transitions: int
    lambda_invocations: int
    history_events: int
    simulated_seconds: float
    wall_seconds: float
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def cost_per_million(self) -> float:
        """Standard-workflow transitions plus Lambda requests at list price, per million executions.

        Lambda duration is left out: the emulator's handler durations measure this machine, not
        Lambda, and the one long-running function (a job runner) is the job itself, the same for
        every design.
        """
        return pricing.execution_cost(self.transitions, self.lambda_invocations, 0.0) * 1_000_000

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "cost_per_million": round(self.cost_per_million, 2)}


@dataclass
class Observed:
    """A finished execution with the Lambda invocations made while it ran (background functions left out)."""

    result: ExecutionResult
    invocations: list[dict]
    wall_seconds: float


def _execution(execution_arn: str) -> Any:
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    return stepfunctions_parser_backends[ACCOUNT_ID][REGION].describe_execution(execution_arn)


def observe(aws: Any, machine_arn: str, payload: Any, *, name: str | None = None) -> Observed:
    """Start ``machine_arn`` with ``payload`` and wait for it to end (or stop it past the wall limit)."""
    sfn = aws.client("stepfunctions")
    invocations_before = len(aws.runtime.invocations)
    started = time.monotonic()
    kwargs = {"stateMachineArn": machine_arn, "input": json.dumps(payload)}
    if name:
        kwargs["name"] = name
    execution_arn = sfn.start_execution(**kwargs)["executionArn"]
    execution = _execution(execution_arn)
    while execution.status == "RUNNING":
        if time.monotonic() - started > WALL_LIMIT_SECONDS:
            sfn.stop_execution(executionArn=execution_arn, error="Bench.WallLimit",
                               cause=f"still running after {WALL_LIMIT_SECONDS} s of wall time")
            break
        time.sleep(POLL_SECONDS)
    wall = time.monotonic() - started
    result = follow(aws, execution_arn)
    made = [r for r in aws.runtime.invocations[invocations_before:]
            if not any(name in r["function"] for name in BACKGROUND_FUNCTIONS)]
    return Observed(result, made, wall)


def run(aws: Any, machine_arn: str, payload: Any, *, machine: str, scenario: str, design: str,
        name: str | None = None) -> tuple[Run, Observed]:
    observed = observe(aws, machine_arn, payload, name=name)
    result = observed.result
    figures = Run(
        machine=machine,
        scenario=scenario,
        design=design,
        status=result.status,
        transitions=result.transitions,
        lambda_invocations=len(observed.invocations),
        history_events=len(result.events),
        simulated_seconds=round(result.simulated_seconds, 1),
        wall_seconds=round(observed.wall_seconds, 2),
        error=result.error,
    )
    return figures, observed

"""Start an execution and follow it: a live state-by-state timeline, then a summary with its cost."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, TextIO

from emulator import pricing

_DETAIL_KEYS = (
    "stateEnteredEventDetails", "stateExitedEventDetails", "taskSucceededEventDetails",
    "taskFailedEventDetails", "executionFailedEventDetails", "executionSucceededEventDetails",
    "executionTimedOutEventDetails", "executionAbortedEventDetails", "taskTimedOutEventDetails",
    "waitStateEnteredEventDetails", "mapStateStartedEventDetails",
)


@dataclass
class ExecutionResult:
    execution_arn: str
    status: str
    output: Any
    error: str | None
    cause: str | None
    events: list[dict]
    start: datetime
    stop: datetime | None
    wall_seconds: float
    lambda_invocations: int
    lambda_gb_seconds: float
    timeline: list[str] = field(default_factory=list)

    @property
    def simulated_seconds(self) -> float:
        return ((self.stop or self.start) - self.start).total_seconds()

    @property
    def states_entered(self) -> int:
        return sum(1 for e in self.events if e["type"].endswith("StateEntered"))

    @property
    def retries(self) -> int:
        """Task attempts beyond the first one per state entry (billed as transitions too)."""
        scheduled = sum(1 for e in self.events if e["type"] in ("TaskScheduled", "LambdaFunctionScheduled", "ActivityScheduled"))
        task_entries = sum(1 for e in self.events if e["type"] == "TaskStateEntered")
        return max(0, scheduled - task_entries)

    @property
    def transitions(self) -> int:
        return self.states_entered + self.retries

    @property
    def cost_usd(self) -> float:
        return pricing.execution_cost(self.transitions, self.lambda_invocations, self.lambda_gb_seconds)

    def entered(self, state_name: str) -> int:
        """How many times the state named ``state_name`` was entered."""
        return sum(
            1 for e in self.events
            if e["type"].endswith("StateEntered") and e.get("stateEnteredEventDetails", {}).get("name") == state_name
        )

    def summary_lines(self) -> list[str]:
        output = json.dumps(self.output, separators=(",", ":")) if self.status == "SUCCEEDED" else None
        lines = [f"  status            {self.status}"]
        if output is not None:
            lines.append(f"  output            {output if len(output) <= 400 else output[:400] + '...'}")
        if self.error:
            lines.append(f"  error             {self.error}: {(self.cause or '')[:300]}")
        lines += [
            f"  state transitions {self.transitions} ({self.states_entered} states entered, {self.retries} retries)",
            f"  Lambda invocations {self.lambda_invocations}",
            f"  simulated time    {duration(self.simulated_seconds)}",
            f"  wall time         {self.wall_seconds:.2f} s",
            f"  cost              ${self.cost_usd:.6f} per execution "
            f"(${self.cost_usd * 1_000_000:,.2f} per million; Standard workflow + Lambda, us-east-1 list prices)",
        ]
        return lines


def duration(seconds: float) -> str:
    """A simulated duration as people read it: 42.0 s, 10 min 02 s, 1 h 00 min 02 s."""
    if seconds < 120:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min {secs:02d} s" if hours else f"{minutes} min {secs:02d} s"


def _event_line(event: dict, start: datetime) -> str | None:
    kind = event["type"]
    offset = (event["timestamp"] - start).total_seconds()
    stamp = f"T+{duration(offset):>10}"
    if kind.endswith("StateEntered"):
        details = event["stateEnteredEventDetails"]
        return f"{stamp}  ▶ {details['name']}  ({kind.removesuffix('StateEntered')})"
    if kind == "TaskFailed" or kind == "LambdaFunctionFailed":
        details = event.get("taskFailedEventDetails") or event.get("lambdaFunctionFailedEventDetails") or {}
        return f"{stamp}    ✗ {details.get('error')}: {(details.get('cause') or '')[:160]}"
    if kind == "TaskTimedOut":
        return f"{stamp}    ✗ {event.get('taskTimedOutEventDetails', {}).get('error', 'States.Timeout')}"
    if kind.endswith("StateExited"):
        details = event["stateExitedEventDetails"]
        output = details.get("output", "")
        short = output if len(output) <= 140 else output[:140] + "..."
        return f"{stamp}    ✓ {details['name']} → {short}"
    if kind in ("ExecutionFailed", "ExecutionTimedOut", "ExecutionAborted"):
        details = next((event[k] for k in _DETAIL_KEYS if k in event), {})
        return f"{stamp}  ■ {kind.removeprefix('Execution').upper()} {details.get('error', '')}: {(details.get('cause') or '')[:200]}"
    if kind == "ExecutionSucceeded":
        return f"{stamp}  ■ SUCCEEDED"
    return None


def follow(
    aws: Any,
    execution_arn: str,
    *,
    out: TextIO | None = None,
    poll_seconds: float = 0.05,
    timeout_seconds: float = 600,
    started_wall: float | None = None,
) -> ExecutionResult:
    """Poll ``execution_arn`` until it ends, printing each new history event as a timeline line."""
    sfn = aws.client("stepfunctions")
    started_wall = started_wall or time.monotonic()
    invocations_before = len(aws.runtime.invocations)
    seen = 0
    timeline: list[str] = []
    start: datetime | None = None
    while True:
        description = sfn.describe_execution(executionArn=execution_arn)
        start = start or description["startDate"]
        if out is not None:  # a live timeline costs a history read per poll; only when shown
            events = _history(sfn, execution_arn)
            for event in events[seen:]:
                line = _event_line(event, start)
                if line:
                    timeline.append(line)
                    print(line, file=out, flush=True)
            seen = len(events)
        if description["status"] != "RUNNING":
            break
        if time.monotonic() - started_wall > timeout_seconds:
            raise TimeoutError(f"{execution_arn} still RUNNING after {timeout_seconds} s of wall time")
        time.sleep(poll_seconds)
    events = _history(sfn, execution_arn)
    for event in events[seen:]:
        line = _event_line(event, start)
        if line:
            timeline.append(line)
            if out is not None:
                print(line, file=out, flush=True)
    calls = aws.runtime.invocations[invocations_before:]
    gb_seconds = sum(
        pricing.billed_gb_seconds(c.get("end", c["start"]) - c["start"], c.get("memory_mb", 128)) for c in calls
    )
    output = json.loads(description["output"]) if "output" in description else None
    return ExecutionResult(
        execution_arn=execution_arn,
        status=description["status"],
        output=output,
        error=description.get("error"),
        cause=description.get("cause"),
        events=events,
        start=description["startDate"],
        stop=description.get("stopDate"),
        wall_seconds=time.monotonic() - started_wall,
        lambda_invocations=len(calls),
        lambda_gb_seconds=gb_seconds,
        timeline=timeline,
    )


def _history(sfn: Any, execution_arn: str) -> list[dict]:
    events: list[dict] = []
    kwargs: dict[str, Any] = {"executionArn": execution_arn, "maxResults": 1000}
    while True:
        page = sfn.get_execution_history(**kwargs)
        events += page["events"]
        if not page.get("nextToken"):
            return events
        kwargs["nextToken"] = page["nextToken"]


def run(
    aws: Any,
    state_machine_arn: str,
    payload: Any,
    *,
    name: str | None = None,
    out: TextIO | None = None,
    timeout_seconds: float = 600,
    before_follow: Callable[[str], None] | None = None,
) -> ExecutionResult:
    """Start an execution of ``state_machine_arn`` with ``payload`` and follow it to its end."""
    sfn = aws.client("stepfunctions")
    started_wall = time.monotonic()
    kwargs = {"stateMachineArn": state_machine_arn, "input": payload if isinstance(payload, str) else json.dumps(payload)}
    if name:
        kwargs["name"] = name
    execution_arn = sfn.start_execution(**kwargs)["executionArn"]
    if before_follow is not None:
        before_follow(execution_arn)
    return follow(aws, execution_arn, out=out, timeout_seconds=timeout_seconds, started_wall=started_wall)


"""Start an execution and follow it: a live state-by-state timeline, then a summary with its cost."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Callable, TextIO

from emulator import pricing
from emulator.stepfunctions.history import FAILURE_TYPES, History, details, plain_cause, without_stack_traces

MAX_POLL_SECONDS = 0.5


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

    @classmethod
    def of(cls, description: dict, events: list[dict], calls: list[dict], *, wall_seconds: float,
           timeline: list[str] | None = None) -> "ExecutionResult":
        """The result of the execution ``description`` names, with the Lambda ``calls`` made meanwhile."""
        gb_seconds = sum(
            pricing.billed_gb_seconds(c.get("end", c["start"]) - c["start"], c.get("memory_mb", 128)) for c in calls
        )
        return cls(
            execution_arn=description["executionArn"],
            status=description["status"],
            output=json.loads(description["output"]) if "output" in description else None,
            error=description.get("error"),
            cause=description.get("cause"),
            events=events,
            start=description["startDate"],
            stop=description.get("stopDate"),
            wall_seconds=wall_seconds,
            lambda_invocations=len(calls),
            lambda_gb_seconds=gb_seconds,
            timeline=timeline or [],
        )

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
            lines.append(f"  error             {self.error}: {plain_cause(self.cause)[:300]}")
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


class Timeline:
    """History events as lines for a person: per state what changed; each error caught, retried or fatal.

    A failure is printed once its fate is in the history (the next event of its state), so a
    line may wait for the next poll.
    """

    def __init__(self) -> None:
        self._printed = 0
        self._caught_exits: set[int] = set()

    def lines(self, events: list[dict], start: datetime, *, final: bool = False) -> list[str]:
        history = History(events)
        lines: list[str] = []
        for event in events[self._printed:]:
            line, held = self._line(history, event, start, final)
            if held:
                break
            self._printed += 1
            if line:
                lines.append(line)
        return lines

    def _line(self, history: History, event: dict, start: datetime, final: bool) -> tuple[str | None, bool]:
        kind, found = event["type"], details(event)
        stamp = f"T+{duration((event['timestamp'] - start).total_seconds()):>10}"
        if kind.endswith("StateEntered"):
            return f"{stamp}  ▶ {found['name']}  ({kind.removesuffix('StateEntered')})", False
        if kind in FAILURE_TYPES:
            outcome = history.failure_outcome(event)
            if outcome is None and not final:
                return None, True
            name = history.state_name(event) or ""
            error = f"{found.get('error') or kind}: {_short(plain_cause(found.get('cause')), 200)}"
            if outcome == "caught":
                self._caught_exits.update(e["id"] for e in history.followers(event))
                return f"{stamp}    ↪ {name}  caught {error}", False
            if outcome == "retried":
                return f"{stamp}    ↻ {name}  {error}  (retrying)", False
            return f"{stamp}    ✗ {name}  {error}", False
        if kind.endswith("StateExited"):
            entered = history.entered_event(event)
            if event["id"] in self._caught_exits or entered is None:
                return None, False
            change = ", ".join(part for part in (
                changes(details(entered).get("input"), found.get("output")),
                assigned(found.get("assignedVariables") or {}),
            ) if part)
            return (f"{stamp}    ✓ {found['name']}  {change}" if change else None), False
        if kind in ("ExecutionFailed", "ExecutionTimedOut", "ExecutionAborted"):
            return f"{stamp}  ■ {kind.removeprefix('Execution').upper()} {found.get('error', '')}: {_short(plain_cause(found.get('cause')), 200)}", False
        if kind == "ExecutionSucceeded":
            return f"{stamp}  ■ SUCCEEDED", False
        return None, False


def assigned(variables: dict[str, str], limit: int = 3) -> str:
    """The workflow variables a state assigned (history gives each as JSON text): $name = value."""
    shown = [f"${name} = {_short(text, 40)}" for name, text in list(variables.items())[:limit]]
    if len(variables) > limit:
        shown.append(f"(+{len(variables) - limit} more)")
    return ", ".join(shown)


def changes(before_text: str | None, after_text: str | None, limit: int = 3) -> str:
    """What a state did to its document: changed paths with old → new values, + added, - removed."""
    before, after = (without_stack_traces(_parse(text)) for text in (before_text, after_text))
    replaced = isinstance(before, dict) and isinstance(after, dict) and not any(
        key in before and before[key] == value for key, value in after.items())
    found = [("~", "", before, after)] if replaced and after else list(_diff(before, after, ""))
    shown = [
        f"+{path} {_short(_compact(new))}" if kind == "+" else f"-{path}" if kind == "-"
        else f"{path} {_short(_compact(old), 30)} → {_short(_compact(new))}" if path else f"→ {_short(_compact(new), 140)}"
        for kind, path, old, new in found[:limit]
    ]
    if len(found) > limit:
        shown.append(f"(+{len(found) - limit} more)")
    return ", ".join(shown)


def _diff(before: Any, after: Any, path: str) -> Any:
    if isinstance(before, dict) and isinstance(after, dict):
        for key, new in after.items():
            child = f"{path}.{key}" if path else key
            if key not in before:
                yield "+", child, None, new
            else:
                yield from _diff(before[key], new, child)
        for key in before.keys() - after.keys():
            yield "-", f"{path}.{key}" if path else key, before[key], None
    elif before != after:
        yield "~", path, before, after


def _parse(text: str | None) -> Any:
    try:
        return json.loads(text) if text is not None else None
    except ValueError:
        return text


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _short(text: str, limit: int = 50) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def follow(
    aws: Any,
    execution_arn: str,
    *,
    out: TextIO | None = None,
    poll_seconds: float = 0.05,
    timeout_seconds: float = 600,
    started_wall: float | None = None,
) -> ExecutionResult:
    """Poll ``execution_arn`` until it ends, printing each new history event as a timeline line.

    Polls ``poll_seconds`` apart at first, then a twentieth of the time followed so far, at most
    ``MAX_POLL_SECONDS``: an execution's end is seen within 5% of its wall time, and a long one is not
    read back to back (each poll is a request the emulator serves while the execution runs).
    """
    sfn = aws.client("stepfunctions")
    followed_since = time.monotonic()
    started_wall = started_wall or followed_since
    invocations_before = len(aws.runtime.invocations)
    printer = Timeline()
    timeline: list[str] = []
    while True:
        description = sfn.describe_execution(executionArn=execution_arn)
        if out is not None:  # a live timeline costs a history read per poll; only when shown
            for line in printer.lines(read_history(sfn, execution_arn), description["startDate"]):
                timeline.append(line)
                print(line, file=out, flush=True)
        if description["status"] != "RUNNING":
            break
        if time.monotonic() - started_wall > timeout_seconds:
            raise TimeoutError(f"{execution_arn} still RUNNING after {timeout_seconds} s of wall time")
        time.sleep(min(MAX_POLL_SECONDS, max(poll_seconds, (time.monotonic() - followed_since) / 20)))
    events = read_history(sfn, execution_arn)
    for line in printer.lines(events, description["startDate"], final=True):
        timeline.append(line)
        if out is not None:
            print(line, file=out, flush=True)
    return ExecutionResult.of(description, events, _own_calls(events, aws.runtime.invocations[invocations_before:]),
                              wall_seconds=time.monotonic() - started_wall, timeline=timeline)


def _own_calls(events: list[dict], calls: list[dict]) -> list[dict]:
    """The Lambda calls made meanwhile to the functions the execution's tasks invoke: a function that
    something else invokes at the same time (an alarm's rule, a schedule) is not this execution's cost."""
    invoked = set()
    for event in events:
        details = event.get("taskScheduledEventDetails") or {}
        if details.get("resourceType") == "lambda":
            function = json.loads(details.get("parameters") or "{}").get("FunctionName", "")
            invoked.add(function.split(":function:")[-1].split(":")[0])
    return [call for call in calls if call["function"] in invoked]


def read_history(sfn: Any, execution_arn: str) -> list[dict]:
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


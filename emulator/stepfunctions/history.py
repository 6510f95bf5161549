"""Reading an execution history as a person does: which state each event belongs to, what became
of each error (caught, retried or fatal), and each state's outcome for the console's graph.

Events name their state only on StateEntered/StateExited; the others (TaskFailed, ...) are tied to
it by ``previousEventId``, which also keeps concurrent Map iterations apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

FAILURE_TYPES = frozenset({
    "TaskFailed", "TaskTimedOut", "LambdaFunctionFailed", "LambdaFunctionTimedOut", "LambdaFunctionStartFailed",
    "LambdaFunctionScheduleFailed", "TaskStartFailed", "TaskSubmitFailed", "ActivityFailed", "ActivityTimedOut",
    "ActivityScheduleFailed", "MapStateFailed", "ParallelStateFailed", "MapRunFailed", "MapIterationFailed",
    "ParallelStateAborted", "MapStateAborted", "MapIterationAborted",
})
_RETRY_TYPES = frozenset({"TaskScheduled", "LambdaFunctionScheduled", "ActivityScheduled", "MapStateStarted", "ParallelStateStarted"})
# The outcome of a state, as the Step Functions console colours it (seed 003) plus "caught".
SUCCEEDED, FAILED, CAUGHT, CANCELLED, IN_PROGRESS = "succeeded", "failed", "caught", "cancelled", "in_progress"


def details(event: dict) -> dict:
    """The event's ``...EventDetails`` (every event type has at most one)."""
    return next((value for key, value in event.items() if key.endswith("EventDetails")), {})


def plain_cause(cause: str | None) -> str:
    """A Lambda error's cause is its JSON error document; a person wants only its message."""
    if not cause:
        return ""
    try:
        document = json.loads(cause)
    except ValueError:
        return cause
    if isinstance(document, dict) and "errorMessage" in document:
        return str(document["errorMessage"])
    return cause


def without_stack_traces(value: Any) -> Any:
    """``value`` with Lambda error documents' ``stackTrace`` left out, also inside JSON strings."""
    if isinstance(value, dict):
        return {key: without_stack_traces(item) for key, item in value.items() if key != "stackTrace"}
    if isinstance(value, list):
        return [without_stack_traces(item) for item in value]
    if isinstance(value, str) and value.startswith("{") and '"stackTrace"' in value:
        try:
            return json.dumps(without_stack_traces(json.loads(value)), separators=(",", ":"))
        except ValueError:
            return value
    return value


class History:
    """An execution's events so far, indexed; ``events`` may grow while the execution runs."""

    def __init__(self, events: list[dict]) -> None:
        self.events = events
        self._by_id = {event["id"]: event for event in events}
        self._next: dict[int, list[dict]] = {}
        for event in events:
            self._next.setdefault(event.get("previousEventId", 0), []).append(event)

    def entered_event(self, event: dict) -> dict | None:
        """The StateEntered event of the state ``event`` belongs to (itself for a StateEntered)."""
        node: dict | None = event
        name = details(event).get("name") if event["type"].endswith("StateExited") else None
        while node is not None:
            if node["type"].endswith("StateEntered") and (name is None or details(node).get("name") == name):
                return node
            node = self._by_id.get(node.get("previousEventId", 0))
        return None

    def state_name(self, event: dict) -> str | None:
        entered = self.entered_event(event)
        return details(entered).get("name") if entered is not None else None

    def followers(self, event: dict) -> list[dict]:
        return self._next.get(event["id"], [])

    def failure_outcome(self, event: dict) -> str | None:
        """What became of a failure event: "caught", "retried", "failed", or None while unknown."""
        for follower in self.followers(event):
            if follower["type"].endswith("StateExited"):
                return "caught"
            if follower["type"] in _RETRY_TYPES:
                return "retried"
            if follower["type"] in FAILURE_TYPES or follower["type"].startswith("Execution"):
                return "failed"
        return None


@dataclass
class StateView:
    """One state of the definition as the console shows it after these events."""

    name: str
    type: str
    entered: int = 0
    status: str | None = None
    input: str | None = None
    output: str | None = None
    error: str | None = None
    cause: str | None = None
    resource: str | None = None
    _open: int = field(default=0, repr=False)

    def as_json(self) -> dict:
        return {key: value for key, value in self.__dict__.items() if not key.startswith("_")}


def state_views(events: list[dict], execution_status: str) -> dict[str, StateView]:
    """Each entered state's outcome, last input, output, error and resource, by state name."""
    history = History(events)
    views: dict[str, StateView] = {}
    for event in events:
        kind = event["type"]
        if kind.endswith("StateEntered"):
            name = details(event)["name"]
            view = views.setdefault(name, StateView(name, kind.removesuffix("StateEntered")))
            view.entered += 1
            view._open += 1
            view.input = details(event).get("input")
            view.output = view.error = view.cause = None
            view.status = FAILED if view.type == "Fail" else IN_PROGRESS
            continue
        name = history.state_name(event)
        view = views.get(name) if name is not None else None
        if view is None:
            continue
        if kind.endswith("StateExited"):
            view._open -= 1
            view.output = details(event).get("output")
            if view.status != CAUGHT:
                view.status = SUCCEEDED if view._open == 0 else IN_PROGRESS
        elif kind in FAILURE_TYPES:
            view.error = details(event).get("error")
            view.cause = details(event).get("cause")
            outcome = history.failure_outcome(event)
            view.status = CAUGHT if outcome == "caught" else FAILED if outcome == "failed" else IN_PROGRESS
        elif kind in ("TaskScheduled", "ActivityScheduled", "LambdaFunctionScheduled"):
            found = details(event)
            view.resource = found.get("resource") if "resourceType" not in found else f"{found['resourceType']}:{found['resource']}"
            view.status = IN_PROGRESS
    if execution_status != "RUNNING":
        for view in views.values():
            if view._open > 0 and view.type != "Fail":
                # A state the execution left unfinished: cancelled when stopped or timed out.
                view.status = FAILED if execution_status == "FAILED" else CANCELLED
    return views

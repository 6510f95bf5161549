"""What a person reads of an execution: the timeline's lines, each state's outcome, the sample files.

Histories here are built as the Step Functions API returns them (GetExecutionHistory: every event
has an id and the previousEventId it follows; a Catch makes the failed state's StateExited follow
its TaskFailed, a Retry schedules the task again).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest

from bench import docs_pages
from emulator import samples
from emulator.follow import Timeline, changes
from emulator.stepfunctions.history import CANCELLED, CAUGHT, FAILED, IN_PROGRESS, SUCCEEDED, state_views

START = datetime(2026, 1, 1, tzinfo=timezone.utc)
LAMBDA_CAUSE = json.dumps({
    "errorMessage": "item B fails its first attempt",
    "errorType": "ItemProcessingFailed",
    "stackTrace": ['  File "/Users/someone/project/handler.py", line 3, in handler\n'],
})


def _history(*events: tuple[str, dict | None]) -> list[dict]:
    """Events in order; each follows the one before unless its details say "after": id."""
    built = []
    for index, (kind, found) in enumerate(events, start=1):
        found = dict(found or {})
        previous = found.pop("after", index - 1)
        event = {"id": index, "previousEventId": previous, "type": kind, "timestamp": START + timedelta(seconds=index)}
        key = {"StateEntered": "stateEnteredEventDetails", "StateExited": "stateExitedEventDetails"}.get(
            next((k for k in ("StateEntered", "StateExited") if kind.endswith(k)), ""), kind[0].lower() + kind[1:] + "EventDetails")
        if found:
            event[key] = found
        built.append(event)
    return built


def _caught_task_history() -> list[dict]:
    return _history(
        ("ExecutionStarted", {"input": "{}"}),
        ("TaskStateEntered", {"name": "Process Item", "input": '{"id": "B"}', "after": 0}),
        ("TaskScheduled", {"resourceType": "lambda", "resource": "invoke"}),
        ("TaskStarted", {"resourceType": "lambda", "resource": "invoke"}),
        ("TaskFailed", {"error": "ItemProcessingFailed", "cause": LAMBDA_CAUSE}),
        ("TaskStateExited", {"name": "Process Item", "output": json.dumps({"id": "B", "error": {"Error": "ItemProcessingFailed", "Cause": LAMBDA_CAUSE}})}),
        ("PassStateEntered", {"name": "Mark Item As Failed", "input": "{}"}),
        ("PassStateExited", {"name": "Mark Item As Failed", "output": '{"failed": "B"}'}),
        ("ExecutionSucceeded", {"output": '{"failed": "B"}'}),
    )


def test_a_caught_error_is_marked_caught_with_its_name_and_message_and_no_stack_trace():
    # Given: a task whose Lambda error is caught by the state's Catch
    events = _caught_task_history()
    # When
    text = "\n".join(Timeline().lines(events, START, final=True))
    # Then
    assert "↪ Process Item  caught ItemProcessingFailed: item B fails its first attempt" in text
    assert "stackTrace" not in text and "File " not in text and "/Users/someone" not in text
    assert "✓ Process Item" not in text  # a caught state did not succeed
    assert "✓ Mark Item As Failed  → {\"failed\":\"B\"}" in text
    assert text.splitlines()[-1].endswith("■ SUCCEEDED")


def test_a_state_line_shows_the_variables_it_assigned():
    # Given: a JSONata task that keeps its output and assigns two variables (StateExited carries
    # assignedVariables, each value as JSON text: API_HistoryEvent / StateExitedEventDetails)
    events = _history(
        ("ExecutionStarted", {"input": "{}"}),
        ("TaskStateEntered", {"name": "Notify Next User", "input": "{}", "after": 0}),
        ("TaskStateExited", {"name": "Notify Next User", "output": "{}",
                             "assignedVariables": {"next_user": "1", "sent": "1"}}),
    )
    # When
    text = "\n".join(Timeline().lines(events, START))
    # Then
    assert "✓ Notify Next User  $next_user = 1, $sent = 1" in text


def test_a_retried_error_says_so_and_a_fatal_one_ends_the_execution():
    # Given: one failed attempt retried, then a failure nothing catches
    events = _history(
        ("ExecutionStarted", {"input": "{}"}),
        ("TaskStateEntered", {"name": "Notify", "input": "{}", "after": 0}),
        ("TaskScheduled", {"resourceType": "lambda", "resource": "invoke"}),
        ("TaskFailed", {"error": "Lambda.ServiceException", "cause": "service unavailable"}),
        ("TaskScheduled", {"resourceType": "lambda", "resource": "invoke"}),
        ("TaskFailed", {"error": "SlackTransientError", "cause": LAMBDA_CAUSE}),
        ("ExecutionFailed", {"error": "SlackTransientError", "cause": LAMBDA_CAUSE}),
    )
    # When
    lines = Timeline().lines(events, START, final=True)
    # Then
    assert any("↻ Notify  Lambda.ServiceException: service unavailable  (retrying)" in line for line in lines)
    assert any("✗ Notify  SlackTransientError: item B fails its first attempt" in line for line in lines)
    assert lines[-1].endswith("■ FAILED SlackTransientError: item B fails its first attempt")


def test_a_failure_whose_fate_is_not_yet_in_the_history_waits_for_the_next_poll():
    # Given: the history as a poll sees it right after a TaskFailed
    events = _caught_task_history()
    timeline = Timeline()
    # When
    early = timeline.lines(events[:5], START)
    later = timeline.lines(events, START)
    # Then: nothing about the failure until its StateExited shows it was caught, and no line twice
    assert not any("ItemProcessingFailed" in line for line in early)
    assert sum("caught ItemProcessingFailed" in line for line in later) == 1
    assert not set(early) & set(later)


@pytest.mark.parametrize(("before", "after", "expected"), [
    ({"a": 1, "p": {"n": 0}}, {"a": 1, "p": {"n": 1}, "b": 2}, "p.n 0 → 1, +b 2"),
    ({"a": 1, "gone": True}, {"a": 1}, "-gone"),
    ({"a": 1}, {"a": 1}, ""),
    ({"item": 1}, {"id": "B"}, '→ {"id":"B"}'),  # nothing kept: the new document itself
    ({"k": 0, "a": 1, "b": 1, "c": 1, "d": 1}, {"k": 0, "a": 2, "b": 2, "c": 2, "d": 2}, "a 1 → 2, b 1 → 2, c 1 → 2, (+1 more)"),
])
def test_a_state_line_shows_what_changed_in_the_document(before, after, expected):
    assert changes(json.dumps(before), json.dumps(after)) == expected


def test_state_outcomes_are_the_colours_of_the_step_functions_console():
    # Given: a caught task, a state still running when the execution was stopped, a Fail state
    caught = _caught_task_history()
    stopped = _history(
        ("ExecutionStarted", {"input": "{}"}),
        ("WaitStateEntered", {"name": "Wait A Day", "input": "{}", "after": 0}),
        ("ExecutionAborted", {"error": "Operator"}),
    )
    failing = _history(
        ("ExecutionStarted", {"input": "{}"}),
        ("FailStateEntered", {"name": "Give Up", "input": "{}", "after": 0}),
        ("ExecutionFailed", {"error": "RetryFailed"}),
    )
    # When
    outcomes = {
        name: view.status
        for events, status in ((caught, "SUCCEEDED"), (stopped, "ABORTED"), (failing, "FAILED"))
        for name, view in state_views(events, status).items()
    }
    running = state_views(stopped[:2], "RUNNING")
    # Then
    assert outcomes == {"Process Item": CAUGHT, "Mark Item As Failed": SUCCEEDED, "Wait A Day": CANCELLED, "Give Up": FAILED}
    assert running["Wait A Day"].status == IN_PROGRESS
    assert state_views(caught, "SUCCEEDED")["Process Item"].error == "ItemProcessingFailed"


def test_every_machine_has_sample_inputs_and_every_alert_sample_has_its_typed_item():
    # Given / When
    from emulator.session import MACHINES

    found = {machine: samples.for_machine(machine) for machine in MACHINES}
    # Then
    assert all(found.values()), f"machines without samples: {[m for m, s in found.items() if not s]}"
    for sample in found["alert"]:
        item = samples.read_alert_item(samples.alert_item_for(sample.input))
        assert item["alert_id"] == {"S": sample.input["alert_id"]}


def test_a_bad_input_file_is_one_clear_line(tmp_path):
    # Given
    malformed = tmp_path / "input.json"
    malformed.write_text("{'alert_id': 1}")
    plain_item = tmp_path / "item.json"
    plain_item.write_text('{"alert_id": "disk-full-web-1", "notification_count": 3}')
    # When / Then
    with pytest.raises(samples.InputFileError, match=r"missing.json: No such file"):
        samples.read_json(tmp_path / "missing.json")
    with pytest.raises(samples.InputFileError, match=r"input.json is not valid JSON: Expecting property name"):
        samples.read_json(malformed)
    with pytest.raises(samples.InputFileError, match=r"not an item in DynamoDB's typed form"):
        samples.read_alert_item(plain_item)


def test_every_sample_file_the_docs_name_exists():
    # Given
    docs = "\n".join(page.read_text() for page in docs_pages.pages())
    # When
    named = set(re.findall(r"samples/[\w./-]+\.json", docs))
    # Then
    assert named, "the docs name no sample file"
    assert [path for path in sorted(named) if not (samples.SAMPLES.parent / path).is_file()] == []

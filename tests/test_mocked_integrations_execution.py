"""Each machine of the app, run through a path that is hard to reach without mocked service integrations.

The test cases are samples/MockConfigFile.json, in Step Functions Local's mock configuration format
(the file a team starts `python -m emulator serve` with, ``SFN_MOCK_CONFIG=samples/MockConfigFile.json``).
An execution started on ``<state machine ARN>#<test case>`` answers the mocked states from the file;
every other state runs its real handler or service call in the session's deployment.
https://docs.aws.amazon.com/step-functions/latest/dg/sfn-local-mock-cfg-file.html
https://docs.aws.amazon.com/step-functions/latest/dg/sfn-local-test-sm-exec.html
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from emulator.follow import ExecutionResult, run
from emulator.session import MACHINES
from emulator.stepfunctions.mocks import MockConfig
from tests.emulator_helpers import unique

MOCK_CONFIG = Path(__file__).resolve().parents[1] / "samples" / "MockConfigFile.json"


@pytest.fixture(scope="module")
def mocked(deployment):
    """The deployment with the sample mock configuration loaded, for this module's executions only."""
    deployment.use_mock_config(MockConfig.load(MOCK_CONFIG))
    yield deployment
    deployment.use_mock_config(None)


def _run_case(deployment, machine: str, case: str, payload: object, functions: dict[str, int]) -> ExecutionResult:
    """Run ``case`` and check each of ``functions`` (logical id in the machine's stack: invocations)
    ran as often as given: 0 for a mocked state's function, as usual for the others."""
    stack = MACHINES[machine][0]
    names = {part: deployment.stack_resource(stack, "AWS::Lambda::Function", part) for part in functions}
    before = {part: deployment.aws.runtime.count(name) for part, name in names.items()}
    name = unique(case)
    result = run(deployment.aws, f"{deployment.machine_arn(machine)}#{case}", payload, name=name)
    # Step Functions Local: the execution is the machine's own; the test case is not in its ARN.
    assert result.execution_arn == deployment.machine_arn(machine).replace(":stateMachine:", ":execution:") + f":{name}"
    assert {part: deployment.aws.runtime.count(names[part]) - before[part] for part in names} == functions
    return result


def _events(result: ExecutionResult, event_type: str, state: str | None = None) -> list[dict]:
    """Events of ``event_type``, of ``state`` when given (the events after its latest StateEntered)."""
    current, found = None, []
    for event in result.events:
        if event["type"].endswith("StateEntered"):
            current = event["stateEnteredEventDetails"]["name"]
        if event["type"] == event_type and (state is None or current == state):
            found.append(event)
    return found


def _simulated_seconds(result: ExecutionResult) -> float:
    return (result.stop - result.start).total_seconds()


def _backoffs(result: ExecutionResult, state: str) -> list[float]:
    """Simulated seconds from each failed attempt of ``state`` to its next attempt."""
    failed, scheduled = _events(result, "TaskFailed", state), _events(result, "TaskScheduled", state)
    return [(again["timestamp"] - fail["timestamp"]).total_seconds() for fail, again in zip(failed, scheduled[1:])]


def test_alert_retries_a_flaky_slack_reports_a_rejected_post_and_stops_when_acknowledged(mocked):
    # Given: the alert config (one user, three rounds), its status, Slack and the claim's release all
    # mocked: Slack fails transiently once (the retry is invocation 1) and accepts the post, rejects
    # round 2's, and the status reads acknowledged before round 3
    # When
    result = _run_case(mocked, "alert", "SlackFlakyThenAcknowledged", {"alert_id": "mocked-disk-full"},
                       {"FetchAlertConfig": 0, "NotifyUser": 0})

    # Then: one notification sent, one reported failed, and the escalation stops at the acknowledgement
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output == {
        "alert_id": "mocked-disk-full",
        "rounds_completed": 2,
        "notifications_sent": 1,
        "notifications_failed": [{"round": 2, "user": "foo@example.com", "error": "SlackRejectedError"}],
        "stopped_reason": "acknowledged",
        "acknowledged_by": "foo@example.com",
    }
    failures = [e["taskFailedEventDetails"]["error"] for e in _events(result, "TaskFailed", "Notify User")]
    assert failures == ["SlackTransientError", "SlackRejectedError"]
    # Two intervals of 300 s in simulated time, and the retry's back-off (FULL jitter: up to 5 s).
    assert 600 <= _simulated_seconds(result) <= 606


def test_a_mocked_throttle_of_the_alerts_status_read_is_retried_by_its_retry(mocked):
    # Given: the DynamoDB status read before round 2 mocked to throttle once (error and cause as the
    # issue gives them), then to read the alert acknowledged; its Retry names DynamoDB.ThrottlingException
    # When
    result = _run_case(mocked, "alert", "StatusReadThrottledOnce", {"alert_id": "mocked-disk-full"},
                       {"FetchAlertConfig": 0, "NotifyUser": 0})

    # Then: the throttle failed the read once, as mocked; the retry read the acknowledgement
    failures = [(e["taskFailedEventDetails"]["error"], e["taskFailedEventDetails"]["cause"])
                for e in _events(result, "TaskFailed", "Read Alert Status")]
    assert failures == [("DynamoDB.ThrottlingException", "mocked throttle")]
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert (result.output["stopped_reason"], result.output["acknowledged_by"]) == ("acknowledged", "foo@example.com")
    # The retry waited up to IntervalSeconds (1 s, full jitter) after the round's 300 s interval.
    assert 300 <= _simulated_seconds(result) <= 301.5


def test_job_poller_fails_with_the_job_error_on_its_third_poll(mocked):
    # Given: the input validated by the real handler; the job's start and its status mocked:
    # running at the first two polls, failed at the third
    payload = json.loads((MOCK_CONFIG.parent / "poller" / "poll-every-minute.json").read_text())

    # When
    # (the state without a mock calls its function as usual; the mocked ones call none)
    result = _run_case(mocked, "poller", "JobFailsOnThirdPoll", payload, {"ValidateJobInput": 1, "RunJob": 0, "GetJobStatus": 0})

    # Then: JobFailed with the job's error message, after three polls a minute apart
    assert (result.status, result.error, result.cause) == ("FAILED", "JobFailed", "disk full on the job runner")
    assert len(_events(result, "TaskSucceeded", "Get Job Status")) == 3
    polls = [e["timestamp"] for e in _events(result, "TaskStateEntered", "Get Job Status")]
    assert (polls[-1] - polls[0]).total_seconds() == pytest.approx(2 * payload["poll_interval_seconds"], abs=1)


def test_export_poller_retries_a_throttled_export_then_reports_it_complete(mocked):
    # Given: DynamoDB throttles the export request twice (each retry is an invocation), then the
    # export is in progress at the first check and complete at the second
    # When
    result = _run_case(mocked, "export-poller", "ExportThrottledTwice", {"initial_wait_seconds": 60, "poll_interval_seconds": 30}, {})

    # Then
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    throttled = [e["taskFailedEventDetails"]["error"] for e in _events(result, "TaskFailed", "Start Table Export")]
    assert throttled == ["DynamoDb.ThrottlingException"] * 2
    assert result.output["export_arn"].endswith("/export/01700000000000-mocked")
    assert result.output["waited_seconds"] == 60 + 30
    # Full jitter: each back-off is within [0, 5 s] then [0, 10 s] (IntervalSeconds 5, BackoffRate 2),
    # then the initial wait and one poll interval.
    assert all(0 <= wait <= limit + 0.5 for wait, limit in zip(_backoffs(result, "Start Table Export"), (5, 10), strict=True))
    assert 60 + 30 <= _simulated_seconds(result) <= 5 + 10 + 60 + 30 + 1


def test_executions_retrying_the_same_throttling_spread_their_retries(mocked):
    # Given: four exports throttled twice at once, as a burst of jobs against one table would be.
    # "JitterStrategy": "FULL" waits a random time between 0 and the back-off interval
    # (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html#error-handling-retrying-after-an-error)
    payload = {"initial_wait_seconds": 60, "poll_interval_seconds": 30}
    # When
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: _run_case(mocked, "export-poller", "ExportThrottledTwice", payload, {}), range(4)))
    # Then: every wait is within its interval (5 s, then 10 s) ...
    waits = [_backoffs(result, "Start Table Export") for result in results]
    assert all(result.status == "SUCCEEDED" for result in results)
    assert all(len(w) == 2 and w[0] <= 5.5 and w[1] <= 10.5 for w in waits), waits
    # ... but not the whole interval each time, as retries without jitter would wait
    # (all eight near the maximum by chance: (0.1 x 0.05)^4, about one in 10^9)
    assert not all(w[0] > 4.5 and w[1] > 9.5 for w in waits), waits


def test_callback_task_that_is_mocked_gets_its_token_and_ends_with_the_mocked_result(mocked):
    # Given: the callback task mocked: no runner is invoked and nobody calls SendTaskSuccess
    payload = json.loads((MOCK_CONFIG.parent / "callback" / "880-second-job.json").read_text())

    # When
    result = _run_case(mocked, "callback", "RunnerReportsSuccess", payload, {"ValidateJobInput": 1, "CallbackJobRunner": 0})

    # Then: the mocked Return is the task's result, without waiting
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output == {"status": "succeeded", "job": payload["job"]}
    [scheduled] = _events(result, "TaskScheduled", "Run Job And Wait For Callback")
    token = json.loads(scheduled["taskScheduledEventDetails"]["parameters"])["Payload"]["task_token"]
    assert isinstance(token, str) and token  # "Step Functions Local will automatically generate a task token"
    assert len(_events(result, "TaskSubmitted")) == 1


@pytest.mark.parametrize(("timeout_seconds", "window"), [(1800, 300), (120, 119)])
def test_callback_runner_that_stops_heartbeating_fails_the_job_with_job_timeout(mocked, timeout_seconds, window):
    # Given: the callback task mocked to fail as a missed heartbeat does; a timeout of 300 s or less
    # gets a window just under it (HeartbeatSeconds must be smaller than TimeoutSeconds:
    # https://states-language.net/spec.html#task-state)
    payload = {**json.loads((MOCK_CONFIG.parent / "callback" / "880-second-job.json").read_text()), "timeout_seconds": timeout_seconds}

    # When
    result = _run_case(mocked, "callback", "RunnerStopsHeartbeating", payload, {"CallbackJobRunner": 0})

    # Then: its Catch on States.HeartbeatTimeout names the failure for a person, and the window used
    assert (result.status, result.error) == ("FAILED", "JobTimeout")
    assert result.cause.startswith(f"no heartbeat from the job runner for {window} s (HeartbeatSeconds)")


def test_map_retry_runs_a_second_pass_for_the_items_that_failed_the_first(mocked):
    # Given: the item processor mocked: both items fail in the first pass (invocations 0-1, in
    # whichever order the Map runs them) and succeed in the second (2-3); validation and the
    # ledger run their real handlers
    payload = {"items": [{"id": "A-1"}, {"id": "B-2"}], "max_attempts": 3}

    # When
    result = _run_case(mocked, "map-retry", "EveryItemFailsOnce", payload, {"ValidateItems": 1, "ItemProcessor": 0, "RecordPass": 2})

    # Then
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert len(_events(result, "MapStateStarted")) == 2
    failures = [e["taskFailedEventDetails"]["error"] for e in _events(result, "TaskFailed")]
    assert failures == ["ItemProcessingFailed"] * 2
    assert sorted(result.output["succeeded"]) == ["A-1", "B-2"]
    assert (result.output["failed"], result.output["attempts"], result.output["passes"]) == ([], {"A-1": 2, "B-2": 2}, 2)

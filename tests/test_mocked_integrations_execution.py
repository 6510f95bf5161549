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
from pathlib import Path

import pytest

from emulator.follow import ExecutionResult, run
from emulator.stepfunctions.mocks import MockConfig
from tests.emulator_helpers import unique

MOCK_CONFIG = Path(__file__).resolve().parents[1] / "samples" / "MockConfigFile.json"


@pytest.fixture(scope="module")
def mocked(deployment):
    """The deployment with the sample mock configuration loaded, for this module's executions only."""
    deployment.use_mock_config(MockConfig.load(MOCK_CONFIG))
    yield deployment
    deployment.use_mock_config(None)


def _run_case(deployment, machine: str, case: str, payload: object) -> ExecutionResult:
    name = unique(case)
    result = run(deployment.aws, f"{deployment.machine_arn(machine)}#{case}", payload, name=name)
    # Step Functions Local: the execution is the machine's own; the test case is not in its ARN.
    assert result.execution_arn == deployment.machine_arn(machine).replace(":stateMachine:", ":execution:") + f":{name}"
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


def test_alert_retries_a_flaky_slack_reports_a_rejected_user_and_stops_when_acknowledged(mocked):
    # Given: the alert config, its status and Slack all mocked: Slack fails transiently once (the
    # retry is invocation 1), then accepts user 1, then rejects user 2; the status turns
    # acknowledged before round 2
    # When
    result = _run_case(mocked, "alert", "SlackFlakyThenAcknowledged", {"alert_id": "mocked-disk-full"})

    # Then: one notification sent, one reported failed, and the execution stops at the acknowledgement
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output == {
        "alert_id": "mocked-disk-full",
        "rounds_completed": 1,
        "notifications_sent": 1,
        "notifications_failed": [{"round": 1, "user": "bar@example.com", "error": "SlackRejectedError"}],
        "stopped_reason": "acknowledged",
    }
    failures = [e["taskFailedEventDetails"]["error"] for e in _events(result, "TaskFailed", "Notify Next User")]
    assert failures == ["SlackTransientError", "SlackRejectedError"]
    # Round 2 waited its interval_seconds (300) in simulated time; the retry waited 5 s.
    assert _simulated_seconds(result) == pytest.approx(305, abs=1)
    # Every task was mocked: no function ran.
    assert result.lambda_invocations == 0


def test_job_poller_fails_with_the_job_error_on_its_third_poll(mocked):
    # Given: the input validated by the real handler; the job's start and its status mocked:
    # running at the first two polls, failed at the third
    payload = json.loads((MOCK_CONFIG.parent / "poller" / "poll-every-minute.json").read_text())

    # When
    result = _run_case(mocked, "poller", "JobFailsOnThirdPoll", payload)

    # Then: JobFailed with the job's error message, after three polls a minute apart
    assert (result.status, result.error, result.cause) == ("FAILED", "JobFailed", "disk full on the job runner")
    assert len(_events(result, "TaskSucceeded", "Get Job Status")) == 3
    assert _simulated_seconds(result) == pytest.approx(2 * payload["poll_interval_seconds"], abs=1)
    # The state without a mock called its function as usual; the mocked ones called none.
    assert result.lambda_invocations == 1


def test_export_poller_retries_a_throttled_export_then_reports_it_complete(mocked):
    # Given: DynamoDB throttles the export request twice (each retry is an invocation), then the
    # export is in progress at the first check and complete at the second
    # When
    result = _run_case(mocked, "export-poller", "ExportThrottledTwice", {"initial_wait_seconds": 60, "poll_interval_seconds": 30})

    # Then
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    throttled = [e["taskFailedEventDetails"]["error"] for e in _events(result, "TaskFailed", "Start Table Export")]
    assert throttled == ["DynamoDb.ThrottlingException"] * 2
    assert result.output["export_arn"].endswith("/export/01700000000000-mocked")
    assert result.output["waited_seconds"] == 60 + 30
    # Retry back-off 5 s then 10 s (BackoffRate 2), the initial wait and one poll interval.
    assert _simulated_seconds(result) == pytest.approx(5 + 10 + 60 + 30, abs=1)


def test_callback_task_that_is_mocked_gets_its_token_and_ends_with_the_mocked_result(mocked):
    # Given: the callback task mocked: no runner is invoked and nobody calls SendTaskSuccess
    payload = json.loads((MOCK_CONFIG.parent / "callback" / "880-second-job.json").read_text())

    # When
    result = _run_case(mocked, "callback", "RunnerReportsSuccess", payload)

    # Then: the mocked Return is the task's result, without waiting
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output == {"status": "succeeded", "job": payload["job"]}
    [scheduled] = _events(result, "TaskScheduled", "Run Job And Wait For Callback")
    token = json.loads(scheduled["taskScheduledEventDetails"]["parameters"])["Payload"]["task_token"]
    assert isinstance(token, str) and token  # "Step Functions Local will automatically generate a task token"
    assert len(_events(result, "TaskSubmitted")) == 1
    assert result.lambda_invocations == 1  # Validate Job Input only


def test_callback_runner_that_stops_heartbeating_fails_the_job_with_job_timeout(mocked):
    # Given: the callback task mocked to fail as a missed heartbeat does
    payload = json.loads((MOCK_CONFIG.parent / "callback" / "880-second-job.json").read_text())

    # When
    result = _run_case(mocked, "callback", "RunnerStopsHeartbeating", payload)

    # Then: its Catch on States.HeartbeatTimeout names the failure for a person
    assert (result.status, result.error) == ("FAILED", "JobTimeout")
    assert result.cause.startswith("no heartbeat from the job runner for 60 s")


def test_map_retry_runs_a_second_pass_for_the_items_that_failed_the_first(mocked):
    # Given: the item processor mocked: both items fail in the first pass (invocations 0-1, in
    # whichever order the Map runs them) and succeed in the second (2-3); validation and the
    # ledger run their real handlers
    payload = {"items": [{"id": "A-1"}, {"id": "B-2"}], "max_attempts": 3}

    # When
    result = _run_case(mocked, "map-retry", "EveryItemFailsOnce", payload)

    # Then
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert len(_events(result, "MapStateStarted")) == 2
    failures = [e["taskFailedEventDetails"]["error"] for e in _events(result, "TaskFailed")]
    assert failures == ["ItemProcessingFailed"] * 2
    assert sorted(result.output["succeeded"]) == ["A-1", "B-2"]
    assert (result.output["failed"], result.output["attempts"], result.output["passes"]) == ([], {"A-1": 2, "B-2": 2}, 2)

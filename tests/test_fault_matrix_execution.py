"""Fault matrix across every machine: each fault ends as documented, and nothing is lost or sent twice.

Each case arms one fault (``deployment.aws.faults`` or the Slack stand-in), runs one execution and
asserts its documented outcome (retried and succeeded, or its named error), then the invariants
that must hold whatever the fault:

- no alert notification delivered twice for one (execution, round, user);
- no Map item processed again after it succeeded (inline: from the execution history; S3 mode: no
  pass hands the chunk processor an item its chunk journal recorded as succeeded in an earlier one);
- no job status lost or contradicted (status.txt and result.json agree with the outcome, also after
  a runner that finishes late);
- every failed execution announced exactly once on the status topic, and no other announced as failed;
- every retry's wait within its retrier's full-jitter bound (the pollers and the callback variant,
  whose states run one at a time).

Faults that hit a Lambda's own SDK calls (S3 GetObject) are retried by boto3 inside the handler;
faults on the engine's calls (lambda:invoke, dynamodb:getItem, aws-sdk:dynamodb) are retried only by
the machine's Retry, which is what these cases prove.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from boto3.dynamodb.types import TypeSerializer

from emulator.follow import ExecutionResult
from tests.conftest import ROOT
from tests.test_alert_notification_execution import notifications
from tests.test_map_retry_execution import chunked_passes
from tests.test_monitoring_execution import StatusInbox

ALERT_STACK, POLLER_STACK, MAP_STACK = "AlertNotificationStack", "JobPollerStack", "MapRetryStack"


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _md5(execution_arn: str) -> str:
    return hashlib.md5(execution_arn.encode("utf-8"), usedforsecurity=False).hexdigest()


class World:
    """Deployed names, alert items of the matrix's own, and the invariants every case checks."""

    def __init__(self, deployment: Any) -> None:
        self.deployment = deployment
        self.faults = deployment.aws.faults
        self.slack = deployment.slack
        self.alert_table = deployment.output(ALERT_STACK, "AlertTableName")
        self.job_bucket = deployment.output(POLLER_STACK, "JobBucketName")
        self.items_bucket = deployment.output(MAP_STACK, "ItemsBucketName")
        self.inbox = StatusInbox(deployment)
        self.alert_ids: list[str] = []
        self.runners_before = 0

    def alert(self, users: int = 2, rounds: int = 1) -> dict:
        alert_id = _unique("fault-matrix")
        suffix = uuid.uuid4().hex[:6]
        item = {
            "alert_id": alert_id,
            "notification_count": rounds,
            "user_accounts": [f"user{i}.{suffix}@example.com" for i in range(users)],
            "status": "active",
            "interval_seconds": 60,
            "message": f"Disk above 90% on {alert_id}",
        }
        serialize = TypeSerializer().serialize
        self.deployment.client("dynamodb").put_item(
            TableName=self.alert_table, Item={k: serialize(v) for k, v in item.items()}
        )
        self.alert_ids.append(alert_id)
        return {"alert_id": alert_id}

    def job_object(self, result: ExecutionResult, name: str) -> str | None:
        s3 = self.deployment.client("s3")
        try:
            body = s3.get_object(Bucket=self.job_bucket, Key=f"jobs/{_md5(result.execution_arn)}/{name}")["Body"]
        except s3.exceptions.NoSuchKey:
            return None
        return body.read().decode("utf-8")

    def runner_invocations(self, *, finished_only: bool = False) -> list[dict]:
        """The S3 poller's runner invocations so far (not the callback runner's)."""
        return [
            r
            for r in self.deployment.aws.runtime.invocations
            if "PollerJobRunner" in r["function"] and (not finished_only or "end" in r)
        ]

    def clean(self) -> None:
        for alert_id in self.alert_ids:
            self.deployment.client("dynamodb").delete_item(
                TableName=self.alert_table, Key={"alert_id": {"S": alert_id}}
            )


@pytest.fixture(scope="module")
def world(deployment) -> Iterator[World]:
    world = World(deployment)
    deployment.slack.reset()
    yield world
    deployment.slack.reset()
    deployment.aws.faults.clear()
    world.clean()


# ------------------------------------------------------------------------------------------------
# Invariants
# ------------------------------------------------------------------------------------------------
def assert_no_notification_delivered_twice(world: World, machine: str, payload: Any) -> None:
    if machine != "alert":
        return
    delivered = Counter((n.round, n.user) for n in notifications(world.slack, payload["alert_id"], delivered_only=True))
    assert [key for key, count in delivered.items() if count > 1] == []


def assert_no_item_processed_after_it_succeeded(world: World, payload: Any, result: ExecutionResult) -> None:
    """Inline: walks each Process Item / Process Item Chunk success back to its TaskScheduled
    (previousEventId). S3 mode: the chunks of each pass against the chunk journals of the passes before."""
    if isinstance(payload, dict) and "items_s3_uri" in payload:
        succeeded_in: dict[str, int] = {}
        for number, chunked in enumerate(chunked_passes(world.deployment, result), 1):
            assert [(item_id, number) for item_id, _ in chunked.given if item_id in succeeded_in] == []
            for item_id, error in chunked.finished:
                if error is None:
                    succeeded_in[item_id] = number
        return
    by_id = {event["id"]: event for event in result.events}

    def scheduled_of(event: dict) -> dict:
        while event["type"] != "TaskScheduled":
            event = by_id[event["previousEventId"]]
        return event

    def work_of(scheduled: dict) -> str | None:
        payload = json.loads(scheduled["taskScheduledEventDetails"]["parameters"]).get("Payload")
        if isinstance(payload, dict) and isinstance(payload.get("item"), dict):
            return payload["item"].get("id")
        if isinstance(payload, dict) and "chunk" in payload:
            return json.dumps(payload["chunk"], sort_keys=True)
        return None

    succeeded_at: dict[str, int] = {}
    for event in result.events:
        if event["type"] == "TaskSucceeded":
            work = work_of(scheduled_of(event))
            if work is not None:
                succeeded_at.setdefault(work, event["id"])
    again = [
        work_of(event)
        for event in result.events
        if event["type"] == "TaskScheduled"
        and work_of(event) in succeeded_at
        and event["id"] > succeeded_at[work_of(event)]
    ]
    assert again == []


def assert_job_status_kept(world: World, machine: str, result: ExecutionResult, expected_status: str | None) -> None:
    if machine != "poller" or expected_status is None:
        return
    assert world.job_object(result, "status.txt") == expected_status
    stored = world.job_object(result, "result.json")
    if expected_status == "succeeded":
        assert stored is not None and json.loads(stored)["status"] == "succeeded"
        if result.status == "SUCCEEDED":
            assert result.output["status"] == "succeeded"
    elif expected_status == "timed_out":
        # Get Job Status recorded the timeout before the execution failed with JobTimeout
        assert stored is not None and json.loads(stored)["status"] == "timed_out"
        assert result.error == "JobTimeout"


# The machines whose states run one at a time (no Map iterations interleaving in the history).
SEQUENTIAL_DEFINITIONS = {"poller": "job_poller", "callback": "callback_job", "export-poller": "export_poller"}


def assert_backoffs_within_their_retriers_bounds(machine: str, result: ExecutionResult) -> None:
    """Each retry waits from 0 to IntervalSeconds x BackoffRate^n, capped by MaxDelaySeconds (full
    jitter: https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html)."""
    if machine not in SEQUENTIAL_DEFINITIONS:
        return
    states = json.loads((ROOT / "statemachines" / f"{SEQUENTIAL_DEFINITIONS[machine]}.asl.json").read_text())["States"]
    state, failed, retried = None, None, Counter()
    for event in result.events:
        if event["type"].endswith("StateEntered"):
            state, failed = event["stateEnteredEventDetails"]["name"], None
        elif event["type"] in ("TaskFailed", "TaskTimedOut"):
            failed = event
        elif event["type"] == "TaskScheduled" and failed is not None:
            error = failed.get("taskFailedEventDetails", failed.get("taskTimedOutEventDetails", {}))["error"]
            [retrier] = [r for r in states[state]["Retry"] if error in r["ErrorEquals"]][:1]
            n = retried[(state, error)]
            bound = min(retrier["IntervalSeconds"] * retrier["BackoffRate"] ** n, retrier.get("MaxDelaySeconds", float("inf")))
            waited = (event["timestamp"] - failed["timestamp"]).total_seconds()
            assert 0 <= waited <= bound + 0.5, (state, error, n, waited, bound)
            retried[(state, error)] += 1
            failed = None


def assert_announced_once_if_failed(world: World, result: ExecutionResult) -> None:
    failed = result.status != "SUCCEEDED"
    messages = [json.loads(m) for m in world.inbox.messages_for(result.execution_arn, expected=1 if failed else 0)]
    announced_failed = [m for m in messages if m["status"] != "SUCCEEDED" and m["status"] != "RUNNING"]
    assert len(announced_failed) == (1 if failed else 0), messages
    if failed:
        assert (announced_failed[0]["status"], announced_failed[0]["error"]) == (result.status, result.error)


# ------------------------------------------------------------------------------------------------
# The matrix
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    machine: str
    make_input: Callable[[World], Any]
    arm: Callable[[World, Any], Any]  # a context manager yielding a Fault (or None for Slack faults)
    status: str  # SUCCEEDED or FAILED
    error: str | None = None  # the named error of a failed execution
    retried: str | None = None  # the error the machine's Retry must have absorbed
    hits: int | None = None  # calls the fault failed
    job_status: str | None = None  # status.txt afterwards (poller)
    check: Callable[[World, Any, ExecutionResult], None] | None = None


class _Slack:
    """Scripts the shared Slack stand-in for one case (a context manager, like a fault)."""

    def __init__(self, world: World, script: Callable[[Any], None]) -> None:
        self.world, self.script = world, script

    def __enter__(self) -> None:
        self.world.slack.reset()
        self.script(self.world.slack)

    def __exit__(self, *exc: object) -> None:
        pass  # the posts stay for the checks; the next case (or the module's teardown) resets


def _alert_sent_to_everyone(world: World, payload: Any, result: ExecutionResult) -> None:
    assert result.output["notifications_sent"] == 2 and result.output["notifications_failed"] == []
    delivered = notifications(world.slack, payload["alert_id"], delivered_only=True)
    assert len(delivered) == 2


def _alert_sent_after_one_429(world: World, payload: Any, result: ExecutionResult) -> None:
    # The stand-in did answer 429 once (with Retry-After), and the machine's retry posted that user again
    assert [post.status for post in world.slack.posts].count(429) == 1
    _alert_sent_to_everyone(world, payload, result)


def _poller_job(**job: Any) -> Callable[[World], dict]:
    return lambda _w: {"job": {"duration_seconds": 20, **job}, "timeout_seconds": 180, "poll_interval_seconds": 10}


def _callback_job(_w: World) -> dict:
    return {"job": {"duration_seconds": 60}, "timeout_seconds": 600}


def _items(_w: World) -> dict:
    return {"items": [{"id": f"item-{i}"} for i in range(6)], "max_attempts": 3}


def _all_items_done(_world: World, _payload: Any, result: ExecutionResult) -> None:
    assert result.status == "SUCCEEDED", result.cause
    text = json.dumps(result.output)
    assert all(f"item-{i}" in text for i in range(6)), result.output


def _each_attempt_delivered_once(_world: World, _payload: Any, result: ExecutionResult) -> None:
    # Lambda.ServiceException after the processor ran: not retried inside the pass (that would hand
    # the processor the same attempt again), but recorded, and run by the next pass as attempt 2
    _all_items_done(_world, _payload, result)
    delivered = [
        json.loads(event["taskScheduledEventDetails"]["parameters"])["Payload"]
        for event in result.events
        if event["type"] == "TaskScheduled"
    ]
    attempts = [(p["item"]["id"], p["attempt"]) for p in delivered if isinstance(p, dict) and "attempt" in p]
    assert len(attempts) == 7 and len(set(attempts)) == 7, attempts
    assert (result.output["passes"], sorted(result.output["attempts"].values())) == (2, [1, 1, 1, 1, 1, 2])


def _s3_items(*slow: int, **options: Any) -> Callable[[World], dict]:
    """Six items in the items bucket, one chunk; the ``slow`` ones outlive the chunk processor's 10 minutes."""

    def make(world: World) -> dict:
        name = _unique("fault-matrix")
        items = [{"id": f"{name}-{i}", **({"sleep_seconds": 700} if i in slow else {})} for i in range(6)]
        key = f"inputs/{name}.json"
        world.deployment.client("s3").put_object(Bucket=world.items_bucket, Key=key, Body=json.dumps(items).encode())
        return {"items_s3_uri": f"s3://{world.items_bucket}/{key}", **options}

    return make


def _s3_counts(succeeded: int, failed: int, passes: int) -> Callable[[World, Any, ExecutionResult], None]:
    def check(_world: World, _payload: Any, result: ExecutionResult) -> None:
        counts = {k: result.output[k] for k in ("succeeded_count", "failed_count", "passes")}
        assert counts == {"succeeded_count": succeeded, "failed_count": failed, "passes": passes}

    return check


def _late_runner_changes_nothing(world: World, result: ExecutionResult) -> None:
    deadline = time.monotonic() + 60
    while len(world.runner_invocations(finished_only=True)) < len(world.runner_invocations()):
        assert time.monotonic() < deadline, "the runner never finished"
        time.sleep(0.05)
    assert world.job_object(result, "status.txt") == "timed_out"
    assert json.loads(world.job_object(result, "result.json"))["status"] == "timed_out"


def _run_job_answer_lost(world: World, _payload: Any):
    world.runners_before = len(world.runner_invocations())
    return world.faults.lambda_service_error("RunJob", times=1, run_handler=True)


def _one_runner_started(world: World) -> None:
    # The retried Run Job found context.json and the runner's status.txt: it started no second runner.
    assert len(world.runner_invocations()) - world.runners_before == 1


def _export_payload(_w: World) -> dict:
    return {"initial_wait_seconds": 60, "poll_interval_seconds": 60}


def _throttled_getitem(w: World, p: Any):
    # The engine's read (Read Alert Status, before every round but the first) projects the status;
    # Fetch Alert Config's own read does not.
    return w.faults.dynamodb_throttled("GetItem", table="AlertTable", times=2, matching="alert_id, #status")


CASES: dict[str, Case] = {
    "alert: Fetch Alert Config throttled twice": Case(
        "alert",
        lambda w: w.alert(),
        lambda w, p: w.faults.lambda_throttled("FetchAlertConfig", times=2, matching=p["alert_id"]),
        "SUCCEEDED",
        retried="Lambda.TooManyRequestsException",
        hits=2,
        check=_alert_sent_to_everyone,
    ),
    "alert: Notify User service exception once": Case(
        "alert",
        lambda w: w.alert(),
        lambda w, p: w.faults.lambda_service_error("NotifyUser", times=1, matching=p["alert_id"]),
        "SUCCEEDED",
        retried="Lambda.ServiceException",
        hits=1,
        check=_alert_sent_to_everyone,
    ),
    "alert: alert status read (DynamoDB GetItem) throttled twice": Case(
        "alert",
        lambda w: w.alert(users=1, rounds=2),  # the status is read before the second round
        _throttled_getitem,
        "SUCCEEDED",
        retried="DynamoDB.ProvisionedThroughputExceededException",
        hits=2,
        check=_alert_sent_to_everyone,
    ),
    "alert: Slack 429 with Retry-After": Case(
        "alert",
        lambda w: w.alert(),
        lambda w, p: _Slack(w, lambda s: s.fail_next(1, status=429, retry_after=1)),
        "SUCCEEDED",
        retried="SlackTransientError",  # not waited out in the notifier: asleep, it would hold concurrency
        check=_alert_sent_after_one_429,
    ),
    "alert: Slack 500": Case(
        "alert",
        lambda w: w.alert(),
        lambda w, p: _Slack(w, lambda s: s.fail_next(1, status=500)),
        "SUCCEEDED",
        retried="SlackTransientError",
        check=_alert_sent_to_everyone,
    ),
    "alert: Slack hangs past the client timeout": Case(
        "alert",
        lambda w: w.alert(),
        lambda w, p: _Slack(w, lambda s: s.hang_next(seconds=6, status=504)),
        "SUCCEEDED",
        retried="SlackTransientError",
        check=_alert_sent_to_everyone,
    ),
    "poller: Run Job throttled twice": Case(
        "poller",
        _poller_job(),
        lambda w, p: w.faults.lambda_throttled("RunJob", times=2),
        "SUCCEEDED",
        retried="Lambda.TooManyRequestsException",
        hits=2,
        job_status="succeeded",
    ),
    "poller: Get Job Status's S3 GetObject throttled twice": Case(
        "poller",
        _poller_job(),
        lambda w, p: w.faults.s3_throttled("GetObject", bucket=w.job_bucket, times=2),
        "SUCCEEDED",
        hits=2,
        job_status="succeeded",
    ),
    "poller: Get Job Status times out once": Case(
        "poller",
        _poller_job(),
        lambda w, p: w.faults.lambda_timed_out("GetJobStatus", times=1),
        "SUCCEEDED",
        retried="Sandbox.Timedout",
        hits=1,
        job_status="succeeded",
    ),
    "poller: Get Job Status times out on every call": Case(
        "poller",
        _poller_job(),
        lambda w, p: w.faults.lambda_timed_out("GetJobStatus", times=None),
        "FAILED",
        error="Sandbox.Timedout",
        hits=3,
        job_status="succeeded",
    ),
    "poller: runner crashes after writing running": Case(
        "poller",
        _poller_job(crash=True),
        lambda w, p: _Slack(w, lambda s: None),
        "FAILED",
        error="JobTimeout",
        job_status="timed_out",
    ),
    "poller: job outlives its timeout, the runner finishes late": Case(
        "poller",
        lambda _w: {"job": {"duration_seconds": 100}, "timeout_seconds": 30, "poll_interval_seconds": 10},
        lambda w, p: _Slack(w, lambda s: None),
        "FAILED",
        error="JobTimeout",
        job_status="timed_out",
        check=lambda w, p, r: _late_runner_changes_nothing(w, r),
    ),
    "poller: Run Job's answer lost after it ran (service exception)": Case(
        "poller",
        _poller_job(),
        _run_job_answer_lost,
        "SUCCEEDED",
        retried="Lambda.ServiceException",
        hits=1,
        job_status="succeeded",
        check=lambda w, p, r: _one_runner_started(w),
    ),
    "export-poller: DescribeExport throttled twice": Case(
        "export-poller",
        _export_payload,
        lambda w, p: w.faults.dynamodb_throttled("DescribeExport", times=2, error="ThrottlingException"),
        "SUCCEEDED",
        retried="DynamoDb.ThrottlingException",
        hits=2,
    ),
    "callback: job runner invoke throttled twice": Case(
        "callback",
        _callback_job,
        lambda w, p: w.faults.lambda_throttled("CallbackJobRunner", times=2),
        "SUCCEEDED",
        retried="Lambda.TooManyRequestsException",
        hits=2,
    ),
    "callback: Validate Job Input service exception once": Case(
        "callback",
        _callback_job,
        lambda w, p: w.faults.lambda_service_error("ValidateJobInput", times=1),
        "SUCCEEDED",
        retried="Lambda.ServiceException",
        hits=1,
    ),
    "map-retry: Process Item throttled three times": Case(
        "map-retry",
        _items,
        lambda w, p: w.faults.lambda_throttled("ItemProcessor", times=3),
        "SUCCEEDED",
        retried="Lambda.TooManyRequestsException",
        hits=3,
        check=_all_items_done,
    ),
    "map-retry: Process Item's answer lost after it ran (service exception)": Case(
        "map-retry",
        _items,
        lambda w, p: w.faults.lambda_service_error("ItemProcessor", times=1, run_handler=True),
        "SUCCEEDED",
        hits=1,
        check=_each_attempt_delivered_once,
    ),
    "map-retry: Process Item times out once, the next pass retries it": Case(
        "map-retry",
        _items,
        lambda w, p: w.faults.lambda_timed_out("ItemProcessor", times=1),
        "SUCCEEDED",
        hits=1,
        check=_all_items_done,
    ),
    "map-retry (S3): chunk processor's answer lost after it ran (timed out)": Case(
        "map-retry",
        _s3_items(max_attempts=3),
        lambda w, p: w.faults.lambda_timed_out("ChunkProcessor", times=1, run_handler=True),
        "SUCCEEDED",
        hits=1,
        # The chunk failed, but its journal has all six: none runs in a second pass
        check=_s3_counts(succeeded=6, failed=0, passes=1),
    ),
    "map-retry (S3): an item outlives its chunk's Lambda": Case(
        "map-retry",
        _s3_items(3, max_attempts=2, fail_on_remaining=False),
        lambda w, p: _Slack(w, lambda s: None),
        "SUCCEEDED",
        # Items 0-2 kept from pass 1; pass 2 runs 4 and 5, then retries 3, which times out again
        check=_s3_counts(succeeded=5, failed=1, passes=2),
    ),
    "map-retry: Record Pass Results service exception once": Case(
        "map-retry",
        _items,
        lambda w, p: w.faults.lambda_service_error("RecordPass", times=1),
        "SUCCEEDED",
        retried="Lambda.ServiceException",
        hits=1,
        check=_all_items_done,
    ),
}


def _task_failures(result: ExecutionResult) -> list[str]:
    return [e["taskFailedEventDetails"]["error"] for e in result.events if e["type"] == "TaskFailed"]


@pytest.mark.parametrize("name", list(CASES))
def test_fault_ends_as_documented_and_loses_nothing(world, name):
    case = CASES[name]
    # Given
    payload = case.make_input(world)
    # When
    with case.arm(world, payload) as fault:
        result = world.deployment.run(case.machine, payload, name=_unique("fault"))
    # Then: the documented outcome
    assert (result.status, result.error if result.status != "SUCCEEDED" else None) == (case.status, case.error), (
        result.cause
    )
    if case.hits is not None:
        assert fault.hits == case.hits
    if case.retried is not None:
        assert case.retried in _task_failures(result)
        assert result.retries >= 1
    if case.check is not None:
        case.check(world, payload, result)
    # and the invariants
    assert_no_notification_delivered_twice(world, case.machine, payload)
    assert_no_item_processed_after_it_succeeded(world, payload, result)
    assert_job_status_kept(world, case.machine, result, case.job_status)
    assert_announced_once_if_failed(world, result)
    assert_backoffs_within_their_retriers_bounds(case.machine, result)
    print(
        f"\n{name}: {result.status} {result.error or ''} retries={result.retries} "
        f"simulated={result.simulated_seconds:.0f}s hits={getattr(fault, 'hits', '-')}"
    )

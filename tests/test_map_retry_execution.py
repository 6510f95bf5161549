"""Map retry-failed machine, end to end: the deployed template run in the local emulator with the
real functions.

What the processor actually did is read from the execution history (each "Process Item" task's
payload, joined to its outcome through previousEventId) and checked against the Lambda runtime's
own invocation records, never taken from the machine's output alone. Item ids are unique per test,
so tests do not depend on each other or on their order.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

from patterns_common.items_demo import fails_by_chance
from tests.emulator_helpers import unique

MACHINE = "map-retry"
OUTCOMES = ("TaskSucceeded", "TaskFailed", "TaskTimedOut")


@dataclass(frozen=True)
class Processing:
    """One "Process Item" task: the item and attempt it was given, how it ended, when (event ids)."""

    item_id: str
    attempt: int
    error: str | None
    scheduled_event: int
    ended_event: int


def processings(events: list[dict]) -> list[Processing]:
    """Every item-processor task of an execution, in the order the tasks ended."""
    by_id = {event["id"]: event for event in events}
    found: list[Processing] = []
    for event in events:
        if event["type"] not in OUTCOMES:
            continue
        scheduled = by_id[by_id[event["previousEventId"]]["previousEventId"]]
        assert scheduled["type"] == "TaskScheduled", scheduled
        parameters = json.loads(scheduled["taskScheduledEventDetails"]["parameters"])
        if "ItemProcessor" not in parameters["FunctionName"]:
            continue
        details = event.get("taskFailedEventDetails") or event.get("taskTimedOutEventDetails") or {}
        error = None if event["type"] == "TaskSucceeded" else details.get("error", "States.Timeout")
        payload = parameters["Payload"]
        found.append(Processing(payload["item"]["id"], payload["attempt"], error, scheduled["id"], event["id"]))
    return found


class Runner:
    """Runs the machine and keeps what the Lambda runtime recorded during the run."""

    def __init__(self, deployment: Any) -> None:
        self.deployment = deployment
        self.invocations: list[dict] = []

    def run(self, payload: Any) -> Any:
        runtime = self.deployment.aws.runtime
        before = len(runtime.invocations)
        result = self.deployment.run(MACHINE, payload, name=unique("map-retry"))
        self.invocations = runtime.invocations[before:]
        return result

    def calls_of(self, function_part: str) -> list[dict]:
        return [call for call in self.invocations if function_part in call["function"]]


def processed_by_history_and_runtime(runner: Runner, result: Any) -> list[Processing]:
    """The item processings in the history, after checking the Lambda runtime ran exactly those."""
    done = processings(result.events)
    lambda_calls = runner.calls_of("ItemProcessor")
    assert len(lambda_calls) == len(done), "the history and the Lambda runtime disagree on processor calls"
    assert Counter(c["error"] for c in lambda_calls) == Counter(p.error for p in done)
    return done


def attempts_by_item(done: list[Processing]) -> dict[str, list[int]]:
    attempts: dict[str, list[int]] = {}
    for processing in sorted(done, key=lambda p: p.scheduled_event):
        attempts.setdefault(processing.item_id, []).append(processing.attempt)
    return attempts


@pytest.fixture
def runner(deployment) -> Runner:
    return Runner(deployment)


# ---- inline mode ------------------------------------------------------------------------------


def test_all_items_succeeding_first_time_take_one_pass_and_one_call_each(runner):
    # Given
    ids = [unique("ok") for _ in range(5)]
    # When
    result = runner.run({"items": [{"id": i} for i in ids], "max_attempts": 3})
    # Then
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {"succeeded": ids, "failed": [], "attempts": {i: 1 for i in ids}, "passes": 1}
    assert attempts_by_item(processed_by_history_and_runtime(runner, result)) == {i: [1] for i in ids}
    assert result.entered("Process Pending Items") == 1
    assert result.entered("Wait Before Next Item Pass") == 0


def test_an_item_failing_once_is_the_only_item_processed_again(runner):
    # Given: default options (two passes); the middle item fails its first attempt
    first, flaky, last = unique("A"), unique("B"), unique("C")
    items = [{"id": first}, {"id": flaky, "fail_attempts": 1}, {"id": last}]
    # When
    result = runner.run({"items": items})
    # Then
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["attempts"] == {first: 1, flaky: 2, last: 1}
    assert sorted(result.output["succeeded"]) == sorted([first, flaky, last])
    assert result.output["failed"] == [] and result.output["passes"] == 2
    done = processed_by_history_and_runtime(runner, result)
    assert attempts_by_item(done) == {first: [1], flaky: [1, 2], last: [1]}
    assert [(p.item_id, p.error) for p in done if p.error] == [(flaky, "ItemProcessingFailed")]
    # one back-off between the two passes, 2 s of simulated time
    assert result.entered("Wait Before Next Item Pass") == 1
    assert result.simulated_seconds >= 2


def test_an_item_failing_every_pass_fails_the_execution_with_retry_failed(runner):
    # Given
    good, bad = unique("good"), unique("always-bad")
    items = [{"id": good}, {"id": bad, "fail_attempts": 99}]
    # When
    result = runner.run({"items": items, "max_attempts": 3, "fail_on_remaining": True})
    # Then
    assert result.status == "FAILED"
    assert result.error == "RetryFailed"
    assert result.cause == f"1 of 2 items still failed after 3 passes: {bad} (ItemProcessingFailed)"
    assert attempts_by_item(processed_by_history_and_runtime(runner, result)) == {good: [1], bad: [1, 2, 3]}
    assert result.entered("Give Up On Failed Items") == 1


def test_retry_failed_cause_lists_twenty_ids_then_how_many_more(runner):
    # Given: 30 items that all fail; fail_on_remaining left to its default (true)
    ids = [unique(f"F{n:02d}") for n in range(30)]
    # When
    result = runner.run({"items": [{"id": i, "fail_attempts": 1} for i in ids], "max_attempts": 1})
    # Then
    assert result.status == "FAILED" and result.error == "RetryFailed"
    assert result.cause.startswith("30 of 30 items still failed after 1 pass: ")
    assert result.cause.endswith(" and 10 more")
    assert sum(i in result.cause for i in ids) == 20
    assert len(processed_by_history_and_runtime(runner, result)) == 30


def test_an_item_failing_every_pass_is_reported_when_remaining_failures_are_allowed(runner):
    # Given
    good, bad = unique("good"), unique("always-bad")
    items = [{"id": good}, {"id": bad, "fail_attempts": 99}]
    # When
    result = runner.run({"items": items, "max_attempts": 3, "fail_on_remaining": False})
    # Then
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {
        "succeeded": [good],
        "failed": [{"id": bad, "error": "ItemProcessingFailed"}],
        "attempts": {good: 1, bad: 3},
        "passes": 3,
    }
    assert attempts_by_item(processed_by_history_and_runtime(runner, result)) == {good: [1], bad: [1, 2, 3]}


def test_max_attempts_one_runs_a_single_pass_without_waiting(runner):
    # Given
    good, flaky = unique("good"), unique("flaky")
    items = [{"id": good}, {"id": flaky, "fail_attempts": 1}]
    # When
    result = runner.run({"items": items, "max_attempts": 1, "fail_on_remaining": False})
    # Then
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["failed"] == [{"id": flaky, "error": "ItemProcessingFailed"}]
    assert result.output["attempts"] == {good: 1, flaky: 1} and result.output["passes"] == 1
    assert attempts_by_item(processed_by_history_and_runtime(runner, result)) == {good: [1], flaky: [1]}
    assert result.entered("Wait Before Next Item Pass") == 0


def test_max_attempts_five_retries_an_item_four_times_with_doubling_waits(runner):
    # Given: an item that succeeds on its fifth and last attempt
    good, stubborn = unique("good"), unique("stubborn")
    items = [{"id": good}, {"id": stubborn, "fail_attempts": 4}]
    # When
    result = runner.run({"items": items, "max_attempts": 5})
    # Then
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["attempts"] == {good: 1, stubborn: 5} and result.output["passes"] == 5
    assert attempts_by_item(processed_by_history_and_runtime(runner, result)) == {good: [1], stubborn: [1, 2, 3, 4, 5]}
    waits = [
        json.loads(e["stateEnteredEventDetails"]["input"])["wait_seconds"]
        for e in result.events
        if e["type"] == "WaitStateEntered"
    ]
    assert waits == [2, 4, 8, 16]
    assert result.simulated_seconds >= 30


def test_a_processor_crash_is_recorded_under_its_exception_name_and_the_map_carries_on(runner):
    # Given
    good, crashing = unique("good"), unique("crashing")
    items = [{"id": good}, {"id": crashing, "raise_unexpected": True}]
    # When
    result = runner.run({"items": items, "max_attempts": 2, "fail_on_remaining": False})
    # Then
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["succeeded"] == [good]
    assert result.output["failed"] == [{"id": crashing, "error": "RuntimeError"}]
    done = processed_by_history_and_runtime(runner, result)
    assert [(p.item_id, p.attempt, p.error) for p in done if p.error] == [(crashing, 1, "RuntimeError"), (crashing, 2, "RuntimeError")]
    assert not [e for e in result.events if e["type"] in ("MapStateFailed", "MapIterationFailed")]


def test_a_timed_out_processor_fails_that_item_only(runner):
    # Given: one item sleeps past the processor function's 30 s timeout
    good, slow = unique("good"), unique("slow")
    items = [{"id": good}, {"id": slow, "sleep_seconds": 45}]
    # When
    result = runner.run({"items": items, "max_attempts": 1, "fail_on_remaining": False})
    # Then
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["succeeded"] == [good]
    assert result.output["failed"] == [{"id": slow, "error": "Sandbox.Timedout"}]
    done = processed_by_history_and_runtime(runner, result)
    assert {(p.item_id, p.error) for p in done} == {(good, None), (slow, "Sandbox.Timedout")}
    assert result.simulated_seconds >= 30  # the timeout passed in simulated time
    assert not [e for e in result.events if e["type"] in ("MapStateFailed", "MapIterationFailed")]


def test_an_answer_over_the_payload_limit_fails_that_item_only(runner):
    # Given: one item's processor answers 300 KiB, more than the 256 KiB a state may pass on
    # (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html); States.ALL does not
    # catch the States.DataLimitExceeded that follows
    # (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html)
    good, big = unique("good"), unique("big")
    items = [{"id": good}, {"id": big, "answer_kib": 300}]
    # When
    result = runner.run({"items": items, "max_attempts": 1, "fail_on_remaining": False})
    # Then: the item's error, not the Map's, and the run ends with its results
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["succeeded"] == [good]
    assert result.output["failed"] == [{"id": big, "error": "States.DataLimitExceeded"}]
    assert len(runner.calls_of("ItemProcessor")) == 2
    assert not [e for e in result.events if e["type"] == "MapStateFailed"]


def test_with_random_failures_each_item_succeeds_once_and_is_never_processed_after(runner):
    # Given: 100 items failing each attempt with probability 0.3 (seeded by id and attempt, so the
    # attempt on which each item first succeeds is known in advance)
    rate, max_attempts = 0.3, 5
    ids = [unique(f"R{n:03d}") for n in range(100)]
    expected_attempts = {
        i: next((a for a in range(1, max_attempts + 1) if not fails_by_chance(i, a, rate)), max_attempts) for i in ids
    }
    never_succeeds = {i for i in ids if all(fails_by_chance(i, a, rate) for a in range(1, max_attempts + 1))}
    # When
    result = runner.run(
        {"items": [{"id": i, "failure_rate": rate} for i in ids], "max_attempts": max_attempts, "fail_on_remaining": False}
    )
    # Then: the machine's report matches the processor's seeded behaviour...
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["attempts"] == expected_attempts
    assert set(result.output["succeeded"]) == set(ids) - never_succeeds
    assert {f["id"] for f in result.output["failed"]} == never_succeeds
    # ...and what actually ran proves it: attempts 1..n, one success, nothing after it
    done = processed_by_history_and_runtime(runner, result)
    assert sum(p.error is not None for p in done) > 0, "no item failed: the retry path was not exercised"
    assert attempts_by_item(done) == {i: list(range(1, n + 1)) for i, n in expected_attempts.items()}
    for item_id in ids:
        runs = [p for p in done if p.item_id == item_id]
        successes = [p for p in runs if p.error is None]
        if item_id in never_succeeds:
            assert successes == []
            continue
        [success] = successes
        assert all(p.ended_event < success.scheduled_event for p in runs if p is not success), item_id
    assert result.output["passes"] == max(expected_attempts.values())


# ---- S3 mode ----------------------------------------------------------------------------------


def _read_json(s3: Any, bucket: str, key: str) -> Any:
    return json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read())


@dataclass(frozen=True)
class ChunkedPass:
    """One pass of an S3-mode run: the (id, attempt) entries its chunk objects handed the chunk
    processor, and the (id, error) outcomes the processor recorded in its chunk journal as it
    finished each item (error None: succeeded)."""

    given: list[tuple[str, int]]
    finished: list[tuple[str, str | None]]


def chunk_journal_table(deployment: Any) -> str:
    """The deployed chunk journal, as the chunk processor is told it."""
    pages = deployment.client("lambda").get_paginator("list_functions").paginate()
    (table,) = {
        function["Environment"]["Variables"]["CHUNK_JOURNAL_TABLE_NAME"]
        for page in pages
        for function in page["Functions"]
        if function["FunctionName"].startswith("MapRetryStack-") and "ChunkProcessor" in function["FunctionName"]
    }
    return table


def chunked_passes(deployment: Any, result: Any) -> list[ChunkedPass]:
    """Every pass of an S3-mode execution, read from its manifests, chunk objects and chunk journal."""
    s3, dynamodb = deployment.client("s3"), deployment.client("dynamodb")
    bucket = deployment.output("MapRetryStack", "ItemsBucketName")
    table = chunk_journal_table(deployment)
    run_prefix = f"runs/{result.execution_arn.rsplit(':', 1)[-1]}/"
    passes: list[ChunkedPass] = []
    for pass_number in range(1, 11):
        try:
            manifest = _read_json(s3, bucket, f"{run_prefix}pass-{pass_number:02d}/manifest.json")
        except s3.exceptions.NoSuchKey:
            break
        given: list[tuple[str, int]] = []
        finished: list[tuple[str, str | None]] = []
        for entry in manifest:
            chunk = _read_json(s3, bucket, entry["chunk_key"])
            given += [(e["item"]["id"], e["attempt"]) for e in chunk]
            records = dynamodb.query(
                TableName=table,
                KeyConditionExpression="chunk_key = :chunk",
                ExpressionAttributeValues={":chunk": {"S": entry["chunk_key"]}},
                ConsistentRead=True,
            )["Items"]
            finished += [(chunk[int(r["position"]["N"])]["item"]["id"], r.get("error", {}).get("S")) for r in records]
        passes.append(ChunkedPass(given, finished))
    return passes


def test_ten_thousand_items_from_s3_run_in_one_execution_retrying_only_failures(deployment, runner):
    # Given: 10,000 items in the items bucket; every 100th fails once, one fails every pass
    s3 = deployment.client("s3")
    bucket = deployment.output("MapRetryStack", "ItemsBucketName")
    prefix = unique("S")
    ids = [f"{prefix}-{n:05d}" for n in range(10_000)]
    flaky = set(ids[7::100])
    hopeless = ids[4242]
    items = [
        {"id": i, **({"fail_attempts": 1} if i in flaky else {}), **({"fail_attempts": 99} if i == hopeless else {})}
        for i in ids
    ]
    key = f"inputs/{prefix}.json"
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(items).encode())
    # When
    result = runner.run({"items_s3_uri": f"s3://{bucket}/{key}", "max_attempts": 3, "fail_on_remaining": False})
    # Then: counts in the output, the full result in S3
    assert result.status == "SUCCEEDED", result.cause
    run_prefix = f"runs/{result.execution_arn.rsplit(':', 1)[-1]}/"
    assert result.output == {
        "succeeded_count": 9_999,
        "failed_count": 1,
        "passes": 3,
        "result_s3_uri": f"s3://{bucket}/{run_prefix}result.json",
    }
    full = _read_json(s3, bucket, f"{run_prefix}result.json")
    assert len(full["succeeded"]) == 9_999 and set(full["succeeded"]) == set(ids) - {hopeless}
    assert full["failed"] == [{"id": hopeless, "error": "ItemProcessingFailed"}]
    assert full["attempts"] == {i: 3 if i == hopeless else 2 if i in flaky else 1 for i in ids}
    # What each pass gave the processor (its chunk objects) and what it recorded (results objects):
    # pass k holds exactly the items still failed after pass k-1; each item succeeds once.
    given: dict[int, list[tuple[str, int]]] = {}
    successes: Counter[str] = Counter()
    chunks_run = 0
    for pass_number in (1, 2, 3):
        manifest = _read_json(s3, bucket, f"{run_prefix}pass-{pass_number:02d}/manifest.json")
        chunks_run += len(manifest)
        given[pass_number] = []
        for entry in manifest:
            given[pass_number] += [(e["item"]["id"], e["attempt"]) for e in _read_json(s3, bucket, entry["chunk_key"])]
            successes.update(r for r in _read_json(s3, bucket, entry["results_key"]) if isinstance(r, str))
    assert sorted(given[1]) == sorted((i, 1) for i in ids)
    assert sorted(given[2]) == sorted([(i, 2) for i in flaky] + [(hopeless, 2)])
    assert given[3] == [(hopeless, 3)]
    assert successes == Counter(set(ids) - {hopeless})
    # One chunk-processor invocation per chunk: no chunk was run twice, none skipped
    assert len(runner.calls_of("ChunkProcessor")) == chunks_run == 40 + 1 + 1
    assert not runner.calls_of("ItemProcessor")
    # The history stays small whatever the number of items
    assert len(result.events) < 100


def test_slow_items_in_s3_mode_spread_over_passes_instead_of_timing_their_chunk_out(deployment, runner):
    # Given: five items of 200 s each, one chunk; the chunk processor has 10 minutes, so one
    # invocation cannot run them all
    s3 = deployment.client("s3")
    bucket = deployment.output("MapRetryStack", "ItemsBucketName")
    ids = [unique(f"slow{n}") for n in range(5)]
    key = f"inputs/{unique('slow')}.json"
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps([{"id": i, "sleep_seconds": 200} for i in ids]).encode())
    # When
    result = runner.run({"items_s3_uri": f"s3://{bucket}/{key}", "max_attempts": 3})
    # Then: each invocation stopped before an item it had no time for; every item succeeded on
    # its first attempt, and each was processed once
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["succeeded_count"] == 5 and result.output["passes"] == 3
    run_prefix = f"runs/{result.execution_arn.rsplit(':', 1)[-1]}/"
    assert _read_json(s3, bucket, f"{run_prefix}result.json")["attempts"] == {i: 1 for i in ids}
    processed = [
        r
        for pass_number in (1, 2, 3)
        for entry in _read_json(s3, bucket, f"{run_prefix}pass-{pass_number:02d}/manifest.json")
        for r in _read_json(s3, bucket, entry["results_key"])
    ]
    assert sorted(processed) == sorted(ids)
    assert all(call["error"] is None for call in runner.calls_of("ChunkProcessor"))


def _s3_items(deployment: Any, ids: list[str]) -> str:
    bucket = deployment.output("MapRetryStack", "ItemsBucketName")
    key = f"inputs/{unique('items')}.json"
    deployment.client("s3").put_object(Bucket=bucket, Key=key, Body=json.dumps([{"id": i} for i in ids]).encode())
    return f"s3://{bucket}/{key}"


def test_a_manifest_read_that_fails_for_a_moment_is_retried(deployment, runner):
    # Given: S3 answers the Map's first read of the pass manifest with 503 SlowDown
    ids = [unique("read") for _ in range(3)]
    uri = _s3_items(deployment, ids)
    bucket = deployment.output("MapRetryStack", "ItemsBucketName")
    with deployment.aws.faults.s3_throttled("GetObject", bucket=bucket, matching="/manifest.json", times=1) as fault:
        # When
        result = runner.run({"items_s3_uri": uri})
    # Then: the ItemReader's States.ItemReaderFailed is retried and the pass runs once
    assert fault.hits == 1
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["succeeded_count"] == 3 and result.output["passes"] == 1
    assert result.entered("Process Pending Chunks") == 1


def test_a_pass_whose_map_fails_loses_no_item_and_the_next_pass_runs_them(deployment, runner):
    # Given: the first pass's manifest cannot be read, first try and the Map's three retries
    ids = [unique("unread") for _ in range(3)]
    uri = _s3_items(deployment, ids)
    bucket = deployment.output("MapRetryStack", "ItemsBucketName")
    with deployment.aws.faults.s3_throttled("GetObject", bucket=bucket, matching="pass-01/manifest.json", times=4) as fault:
        # When
        result = runner.run({"items_s3_uri": uri, "max_attempts": 2})
    # Then: the Map's failure is caught and recorded as a pass in which no item was attempted; the
    # second pass runs every item, at its first attempt, and the run ends with its summary
    assert fault.hits == 4
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["succeeded_count"] == 3 and result.output["passes"] == 2
    s3 = deployment.client("s3")
    run_prefix = f"runs/{result.execution_arn.rsplit(':', 1)[-1]}/"
    assert _read_json(s3, bucket, f"{run_prefix}result.json")["attempts"] == {i: 1 for i in ids}
    assert "States.ItemReaderFailed" in json.dumps(result.events, default=str)


def test_items_a_chunk_finished_before_it_timed_out_are_not_run_again(deployment, runner):
    # Given: one chunk; its third item runs longer than the chunk processor's 10 minutes
    s3 = deployment.client("s3")
    bucket = deployment.output("MapRetryStack", "ItemsBucketName")
    first, second, slow, fourth, fifth = ids = [unique(f"die{n}") for n in range(5)]
    items = [{"id": i, **({"sleep_seconds": 700} if i == slow else {})} for i in ids]
    key = f"inputs/{unique('die')}.json"
    s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(items).encode())
    # When
    result = runner.run({"items_s3_uri": f"s3://{bucket}/{key}", "max_attempts": 2, "fail_on_remaining": False})
    # Then: the chunk timed out in pass 1 and again in pass 2, on the slow item both times
    assert result.status == "SUCCEEDED", result.cause
    assert [c["error"] for c in runner.calls_of("ChunkProcessor")] == ["Sandbox.Timedout", "Sandbox.Timedout"]
    assert {k: result.output[k] for k in ("succeeded_count", "failed_count", "passes")} == {
        "succeeded_count": 4,
        "failed_count": 1,
        "passes": 2,
    }
    # The items finished before the timeout ran once, in pass 1; pass 2 ran the ones the chunk
    # never started, at their first attempt, then retried the slow one
    pass_1, pass_2 = chunked_passes(deployment, result)
    assert pass_1.given == [(i, 1) for i in ids]
    assert pass_1.finished == [(first, None), (second, None)]
    assert pass_2.given == [(fourth, 1), (fifth, 1), (slow, 2)]
    assert pass_2.finished == [(fourth, None), (fifth, None)]
    full = _read_json(s3, bucket, result.output["result_s3_uri"].split(f"s3://{bucket}/", 1)[1])
    assert full["failed"] == [{"id": slow, "error": "Sandbox.Timedout"}]
    assert full["attempts"] == {first: 1, second: 1, slow: 2, fourth: 1, fifth: 1}


# ---- invalid input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "payload, problem",
    [
        ({"items": [{"id": "X-1"}, {"name": "no id here"}]}, "items[1] has no id"),
        ({"items": [{"id": "X-1"}, {"id": "X-2"}, {"id": "X-1"}]}, "ids must be unique; repeated: X-1"),
        ({"items": []}, "items is empty"),
        ({"items": "X-1,X-2"}, "items must be a JSON array of objects, got string"),
        ({"items": {"id": "X-1"}}, "items must be a JSON array of objects, got object"),
        ({"items": [{"id": "X-1"}], "max_attempts": 0}, "max_attempts must be an integer from 1 to 10"),
        ({"items_s3_uri": "bucket/inputs/items.json"}, 'items_s3_uri "bucket/inputs/items.json" is not an S3 URI'),
        ({"items_s3_uri": "s3://"}, 'items_s3_uri "s3://" is not an S3 URI'),
    ],
    ids=["missing-id", "duplicate-ids", "empty-list", "items-a-string", "items-an-object", "max-attempts-0",
         "s3-uri-without-scheme", "s3-uri-without-bucket"],
)
def test_bad_input_fails_with_invalid_items_naming_the_problem(runner, payload, problem):
    # When
    result = runner.run(payload)
    # Then
    assert result.status == "FAILED"
    assert result.error == "InvalidItems"
    assert problem in result.cause
    assert result.entered("Reject Invalid Items") == 1
    assert not runner.calls_of("ItemProcessor") and not runner.calls_of("ChunkProcessor")

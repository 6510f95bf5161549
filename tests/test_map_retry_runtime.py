"""Map retry-failed pattern: pure rules (validation, ledger, chunking, causes) with no mocks, then
each function's handler against moto's S3 where it touches S3."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from patterns_common import map_retry as mr
from patterns_common.items_demo import ItemProcessingFailed, process_item
from patterns_common.map_retry import InvalidItems, LedgerMismatch, Options, RunPaths
from tests.emf import emf_metrics
from tests.lambda_loader import load_lambda_module

BUCKET = "map-retry-items"
JOURNAL_TABLE = "map-retry-chunk-journal"


def items(*ids: str, **fields: Any) -> list[dict[str, Any]]:
    return [{"id": i, **fields} for i in ids]


def run_inline_machine(event: dict[str, Any], process=process_item) -> tuple[dict[str, Any], list[tuple[str, int, bool]]]:
    """Drives start_inline/record_inline_pass the way the ASL loop does, recording every processing."""
    calls: list[tuple[str, int, bool]] = []
    state = mr.start_inline(event)
    while True:
        results: list[Any] = []
        for entry in state["pending"]:
            try:
                process(entry["item"], entry["attempt"])
            except Exception as error:  # noqa: BLE001 - mirrors the iterator's Catch on States.ALL
                results.append({"id": entry["item"]["id"], "error": type(error).__name__})
                calls.append((entry["item"]["id"], entry["attempt"], False))
            else:
                results.append(entry["item"]["id"])
                calls.append((entry["item"]["id"], entry["attempt"], True))
        state = mr.record_inline_pass({**state, "pass_results": results})
        if not state["retry"]:
            return state, calls


# ---- input validation --------------------------------------------------------------------------


def test_options_default_to_two_passes_and_failing_on_remaining_items():
    # When
    options = mr.parse_options({"items": []})
    # Then
    assert options == Options(max_attempts=2, fail_on_remaining=True)


@pytest.mark.parametrize(
    "event, problem",
    [
        ([{"id": "A"}], "input must be a JSON object"),
        ({"items": [], "max_attempt": 3}, "unknown input field(s) max_attempt"),
        ({"items": [], "items_s3_uri": "s3://b/k"}, "exactly one of items"),
        ({"max_attempts": 3}, "exactly one of items"),
        ({"items": [], "max_attempts": 0}, "max_attempts must be an integer from 1 to 10"),
        ({"items": [], "max_attempts": 11}, "got 11"),
        ({"items": [], "max_attempts": 2.5}, "got 2.5"),
        ({"items": [], "max_attempts": "3"}, 'got "3"'),
        ({"items": [], "max_attempts": True}, "got true"),
        ({"items": [], "fail_on_remaining": "yes"}, "fail_on_remaining must be true or false"),
    ],
)
def test_options_reject_bad_input_naming_the_problem(event, problem):
    with pytest.raises(InvalidItems) as raised:
        mr.parse_options(event)
    assert problem in str(raised.value)


@pytest.mark.parametrize(
    "value, problem",
    [
        ({"id": "A"}, "items must be a JSON array of objects, got object"),
        ("A,B", "got string"),
        ([], "items is empty"),
        ([{"id": "A"}, "B"], "items[1] must be an object with a string id, got string"),
        ([{"id": "A"}, {"name": "no id"}], "items[1] has no id"),
        ([{"id": 42}], "items[0].id must be a non-empty string, got 42"),
        ([{"id": None}], "got null"),
        ([{"id": ""}], 'got ""'),
        (items("A", "B", "A", "C", "B", "A"), "ids must be unique; repeated: A, B"),
    ],
)
def test_items_must_be_a_non_empty_array_of_objects_with_unique_string_ids(value, problem):
    with pytest.raises(InvalidItems) as raised:
        mr.validate_items(value)
    assert problem in str(raised.value)


@pytest.mark.parametrize("max_attempts", [1, 10])
def test_max_attempts_accepts_both_ends_of_one_to_ten(max_attempts):
    # The documented range is 1 to 10 passes, both included (docs/map-retry.md).
    assert mr.parse_options({"items": [], "max_attempts": max_attempts}).max_attempts == max_attempts


@pytest.mark.parametrize(
    "event, cause",
    [
        (["A"], "input must be a JSON object, got array"),
        (None, "input must be a JSON object, got null"),
        (
            {"items": [], "max_attempt": 3, "retry": 1},
            "unknown input field(s) max_attempt, retry; expected fail_on_remaining, items, items_s3_uri, max_attempts",
        ),
        ({}, "give exactly one of items (a JSON array) or items_s3_uri (s3://bucket/key.json)"),
        (
            {"items": [], "max_attempts": 0},
            "max_attempts must be an integer from 1 to 10 (passes, the first included), got 0",
        ),
        ({"items": [], "max_attempts": 11}, "max_attempts must be an integer from 1 to 10 (passes, the first included), got 11"),
        ({"items": [], "fail_on_remaining": None}, "fail_on_remaining must be true or false, got null"),
        ({"items": [], "fail_on_remaining": "yes"}, 'fail_on_remaining must be true or false, got "yes"'),
    ],
)
def test_a_rejected_input_is_the_executions_cause_word_for_word(event, cause):
    # The cause is what a person reads in the console and searches for.
    with pytest.raises(InvalidItems) as raised:
        mr.parse_options(event)
    assert str(raised.value) == cause


@pytest.mark.parametrize(
    "value, cause",
    [
        (1.5, "items must be a JSON array of objects, got number"),
        (True, "items must be a JSON array of objects, got boolean"),
        ([], "items is empty: give at least one item"),
        ([{"id": "A"}, ["B"]], "items[1] must be an object with a string id, got array"),
        ([{"id": "A"}, {"name": "no id"}], "items[1] has no id"),
        ([{"id": {"n": 1}}], 'items[0].id must be a non-empty string, got {"n": 1}'),
        ([{"id": "x" * 70}], None),
        (items(*(f"D{n:02d}" for n in range(25))) * 2, "ids must be unique; repeated: "
         + ", ".join(f"D{n:02d}" for n in range(20)) + " and 5 more"),
    ],
)
def test_a_rejected_items_array_is_named_word_for_word(value, cause):
    if cause is None:
        assert mr.validate_items(value) == value
        return
    with pytest.raises(InvalidItems) as raised:
        mr.validate_items(value)
    assert str(raised.value) == cause


def test_a_long_id_is_shown_cut_to_64_characters():
    # Given: a 70-character id repeated
    long_id = "x" * 70
    # When
    with pytest.raises(InvalidItems) as raised:
        mr.validate_items([{"id": long_id}, {"id": long_id}])
    # Then: 63 characters and an ellipsis
    assert str(raised.value) == "ids must be unique; repeated: " + "x" * 63 + "…"
    assert mr.summarize(["y" * 64]) == "y" * 64


def test_items_over_the_limit_are_refused_and_at_the_limit_accepted():
    # Given
    three = items("A", "B", "C")
    # Then
    assert mr.validate_items(three, max_items=3) == three
    with pytest.raises(InvalidItems, match="^4 items is more than the 3 one execution accepts$"):
        mr.validate_items([*three, {"id": "D"}], max_items=3)


def test_inline_runs_are_bounded_by_items_times_passes():
    # Given
    thousand = items(*(f"I-{n}" for n in range(1000)))
    # Then: 1,000 x 2 = 2,000 item attempts fit, 1,000 x 3 do not
    mr.check_inline_budget(thousand, Options(max_attempts=2, fail_on_remaining=True))
    with pytest.raises(InvalidItems, match="pass items_s3_uri instead"):
        mr.check_inline_budget(thousand, Options(max_attempts=3, fail_on_remaining=True))


def test_inline_runs_are_bounded_by_the_payload_the_state_would_reach():
    # Given: few items, but large ones
    options = Options(max_attempts=2, fail_on_remaining=True)
    large = items("A", "B", "C", "D", blob="x" * 60_000)
    # Then
    mr.check_inline_budget(large[:3], options)
    assert mr.inline_peak_bytes(large) > mr.INLINE_STATE_LIMIT_BYTES
    with pytest.raises(InvalidItems, match="more than 200 KiB .*pass items_s3_uri instead"):
        mr.check_inline_budget(large, options)


def test_a_full_inline_state_stays_under_the_step_functions_payload_limit():
    # Given: 600 small items, every one failing with the longest error name
    options = Options(max_attempts=1, fail_on_remaining=True)
    state = mr.start_inline({"items": items(*(f"ITEM-{n:06d}" for n in range(600)), size="M"), "max_attempts": 1})
    failures = [{"id": e["item"]["id"], "error": mr.LONGEST_ERROR_NAME} for e in state["pending"]]
    # When
    recorded = mr.record_inline_pass({**state, "pass_results": failures})
    # Then: the estimate covers what the machine carries in and out of "Record Pass Results"
    mr.check_inline_budget([e["item"] for e in state["pending"]], options)
    biggest = max(len(json.dumps({**state, "pass_results": failures})), len(json.dumps(recorded)))
    assert biggest <= mr.inline_peak_bytes([e["item"] for e in state["pending"]]) <= 256 * 1024


def test_items_uri_must_name_an_object_under_inputs_in_the_items_bucket():
    # Then
    assert mr.items_key(f"s3://{BUCKET}/inputs/big/list.json", BUCKET) == "inputs/big/list.json"
    for uri, problem in [
        ("s3://other-bucket/inputs/list.json", "must name an object like"),
        (f"s3://{BUCKET}/list.json", "must name an object like"),
        (f"s3://{BUCKET}/inputs/", "must name an object like"),
        (f"https://{BUCKET}.s3.amazonaws.com/inputs/list.json", "is not an S3 URI"),
        (f"s3://{BUCKET}", "is not an S3 URI"),
        (["s3://x/y"], "must be a string"),
    ]:
        with pytest.raises(InvalidItems) as raised:
            mr.items_key(uri, BUCKET)
        assert problem in str(raised.value), uri


def test_an_items_document_that_is_not_json_is_invalid():
    with pytest.raises(InvalidItems, match="s3://b/inputs/x.json is not valid JSON"):
        mr.parse_items_document(b"[{'id': 'A'}]", "s3://b/inputs/x.json")


# ---- the ledger across passes ------------------------------------------------------------------


def test_first_pass_runs_every_item_at_attempt_one_and_the_ledger_starts_empty():
    # When
    result, pending = mr.start(items("A", "B"))
    # Then
    assert pending == [{"item": {"id": "A"}, "attempt": 1}, {"item": {"id": "B"}, "attempt": 1}]
    assert result == {"succeeded": [], "failed": [], "attempts": {"A": 0, "B": 0}, "passes": 0}


def test_a_failed_item_alone_runs_again_with_the_next_attempt_number():
    # Given
    result, pending = mr.start([{"id": "A"}, {"id": "B", "fail_attempts": 1}, {"id": "C"}])
    # When: pass 1, B fails
    result, pending = mr.record_pass(result, pending, {"A": None, "B": "ItemProcessingFailed", "C": None})
    # Then
    assert pending == [{"item": {"id": "B", "fail_attempts": 1}, "attempt": 2}]
    assert result["failed"] == [{"id": "B", "error": "ItemProcessingFailed"}]
    # When: pass 2, B succeeds
    result, pending = mr.record_pass(result, pending, {"B": None})
    # Then
    assert pending == []
    assert result == {"succeeded": ["A", "C", "B"], "failed": [], "attempts": {"A": 1, "B": 2, "C": 1}, "passes": 2}


def test_an_item_a_chunk_did_not_start_keeps_its_attempt_number():
    # Given
    result, pending = mr.start(items("A", "B"))
    # When: only A has an outcome
    result, pending = mr.record_pass(result, pending, {"A": None})
    # Then
    assert pending == [{"item": {"id": "B"}, "attempt": 1}]
    assert result["failed"] == [{"id": "B", "error": mr.NOT_ATTEMPTED}]
    assert result["attempts"] == {"A": 1, "B": 0}


def test_ledger_refuses_results_for_items_the_pass_did_not_run():
    # Given
    result, pending = mr.start(items("A"))
    # Then
    with pytest.raises(LedgerMismatch, match="^results for items this pass did not run: Z$"):
        mr.record_pass(result, pending, {"A": None, "Z": None})


def test_ledger_refuses_to_run_an_item_that_already_succeeded():
    # Given
    result, pending = mr.start(items("A"))
    result, _ = mr.record_pass(result, pending, {"A": None})
    # Then
    with pytest.raises(LedgerMismatch, match="^items that already succeeded were pending again: A$"):
        mr.record_pass(result, pending, {"A": None})


def test_iteration_results_are_ids_for_successes_and_objects_for_failures():
    # Then
    assert mr.outcomes_from_iterations(["A", {"id": "B", "error": "States.Timeout"}]) == {"A": None, "B": "States.Timeout"}
    with pytest.raises(LedgerMismatch, match="^item A has more than one result in this pass$"):
        mr.outcomes_from_iterations(["A", {"id": "A", "error": "X"}])


def test_all_items_succeeding_first_time_takes_one_pass():
    # When
    state, calls = run_inline_machine({"items": items("A", "B", "C")})
    # Then
    assert state["result"] == {"succeeded": ["A", "B", "C"], "failed": [], "attempts": {"A": 1, "B": 1, "C": 1}, "passes": 1}
    assert (state["retry"], state["remaining_count"], state["failure_cause"]) == (False, 0, "")
    assert len(calls) == 3


def test_one_item_failing_once_is_the_only_item_processed_twice():
    # When
    state, calls = run_inline_machine({"items": [{"id": "A"}, {"id": "B", "fail_attempts": 1}, {"id": "C"}]})
    # Then
    assert state["result"]["attempts"] == {"A": 1, "B": 2, "C": 1}
    assert state["result"]["passes"] == 2
    assert [call for call in calls if call[0] == "B"] == [("B", 1, False), ("B", 2, True)]


@pytest.mark.parametrize("fail_on_remaining", [True, False])
def test_an_item_failing_every_pass_stops_after_max_attempts(fail_on_remaining):
    # When
    state, calls = run_inline_machine(
        {"items": [{"id": "A"}, {"id": "B", "fail_attempts": 99}], "max_attempts": 3, "fail_on_remaining": fail_on_remaining}
    )
    # Then: the Choice sees no retry, one remaining item and the user's flag
    assert (state["retry"], state["remaining_count"], state["fail_on_remaining"]) == (False, 1, fail_on_remaining)
    assert state["result"]["failed"] == [{"id": "B", "error": "ItemProcessingFailed"}]
    assert [attempt for item_id, attempt, _ in calls if item_id == "B"] == [1, 2, 3]
    assert state["failure_cause"] == "1 of 2 items still failed after 3 passes: B (ItemProcessingFailed)"


@pytest.mark.parametrize("max_attempts", [1, 5])
def test_max_attempts_bounds_the_number_of_passes(max_attempts):
    # When
    state, calls = run_inline_machine({"items": [{"id": "A", "fail_attempts": 99}], "max_attempts": max_attempts})
    # Then
    assert state["result"]["passes"] == max_attempts == len(calls)


def test_a_processor_crash_is_recorded_under_the_exception_name():
    # When
    state, _ = run_inline_machine({"items": [{"id": "A", "raise_unexpected": True}], "max_attempts": 1})
    # Then
    assert state["result"]["failed"] == [{"id": "A", "error": "RuntimeError"}]


def test_with_random_failures_every_item_succeeds_once_and_is_never_processed_after():
    # Given
    event = {"items": items(*(f"I-{n:03d}" for n in range(100)), failure_rate=0.4), "max_attempts": 5}
    # When
    state, calls = run_inline_machine(event)
    # Then
    result = state["result"]
    successes = [item_id for item_id, _, ok in calls if ok]
    assert sorted(successes) == sorted(result["succeeded"]) and len(set(successes)) == len(successes)
    for item_id in result["succeeded"]:
        attempts = [attempt for i, attempt, _ in calls if i == item_id]
        assert attempts == list(range(1, result["attempts"][item_id] + 1))  # nothing after the success
    assert {f["id"] for f in result["failed"]} | set(result["succeeded"]) == {i["id"] for i in event["items"]}
    assert result["passes"] > 1  # failures happened, so the loop really retried


def test_inline_recording_refuses_a_pass_with_an_item_missing():
    # Given
    state = mr.start_inline({"items": items("A", "B")})
    # Then
    with pytest.raises(LedgerMismatch, match="^no result for pending items: B$"):
        mr.record_inline_pass({**state, "pass_results": ["A"]})


def test_retry_is_due_only_while_items_fail_and_passes_remain():
    # Given
    options = Options(max_attempts=2, fail_on_remaining=True)
    failing = {"succeeded": [], "failed": [{"id": "A", "error": "E"}], "attempts": {"A": 1}, "passes": 1}
    # Then
    assert mr.should_retry(options, failing)
    assert not mr.should_retry(options, {**failing, "passes": 2})
    assert not mr.should_retry(options, {**failing, "failed": []})


def test_backoff_doubles_from_two_seconds_up_to_a_minute():
    assert [mr.backoff_seconds(p) for p in range(1, 8)] == [2, 4, 8, 16, 32, 60, 60]


# ---- the RetryFailed cause ---------------------------------------------------------------------


def failing_result(count: int, id_length: int = 5) -> dict[str, Any]:
    ids = [f"{n:0{id_length}d}" for n in range(count)]
    return {
        "succeeded": ["OK"],
        "failed": [{"id": i, "error": "ItemProcessingFailed"} for i in ids],
        "attempts": {"OK": 1, **{i: 1 for i in ids}},
        "passes": 1,
    }


def test_cause_lists_every_failed_id_with_its_error_when_few():
    # When
    cause = mr.retry_failed_cause(failing_result(2))
    # Then
    assert cause == "2 of 3 items still failed after 1 pass: 00000 (ItemProcessingFailed), 00001 (ItemProcessingFailed)"


def test_cause_shows_at_most_twenty_ids_then_how_many_more():
    # When
    cause = mr.retry_failed_cause(failing_result(500), "s3://b/runs/x/result.json")
    # Then
    assert "00019 (ItemProcessingFailed) and 480 more; full result in s3://b/runs/x/result.json" in cause
    assert "00020" not in cause


def test_cause_stays_short_with_long_ids():
    # When
    cause = mr.retry_failed_cause(failing_result(20, id_length=200))
    # Then
    assert len(cause) <= mr.CAUSE_MAX_CHARS
    assert "…" in cause and cause.endswith("more")


# ---- chunking (S3 mode) ------------------------------------------------------------------------


def test_a_pass_is_split_into_chunks_listed_in_a_manifest():
    # Given
    _, pending = mr.start(items(*(f"I-{n}" for n in range(600))))
    paths = RunPaths.for_execution("exec-1")
    # When
    manifest, chunks = mr.plan_pass(paths, 2, pending, chunk_size=250)
    # Then
    assert manifest[2] == {
        "chunk": 2,
        "chunk_key": "runs/exec-1/pass-02/chunk-00002.json",
        "results_key": "runs/exec-1/pass-02/results-00002.json",
    }
    assert [len(chunks[entry["chunk_key"]]) for entry in manifest] == [250, 250, 100]
    assert [e for entry in manifest for e in chunks[entry["chunk_key"]]] == pending


def unrecorded(position: int, error: str | None) -> str | None:
    """A journal's record() that keeps nothing: the outcome given stands."""
    return error


def test_a_chunk_runs_each_item_like_an_iteration_and_stops_when_out_of_time():
    # Given: 100 s left, 10 s kept in reserve; each item takes 20 s
    entries = [
        {"item": {"id": "A"}, "attempt": 1},
        {"item": {"id": "B", "fail_attempts": 1}, "attempt": 1},
        {"item": {"id": "C", "raise_unexpected": True}, "attempt": 1},
        {"item": {"id": "D"}, "attempt": 1},
        {"item": {"id": "E"}, "attempt": 1},
    ]
    remaining = {"ms": 100_000}
    started: list[str] = []

    def process(item, attempt):
        started.append(item["id"])
        remaining["ms"] -= 20_000
        return process_item(item, attempt)

    # When
    results = mr.process_chunk(entries, process, lambda: remaining["ms"], 10_000, {}, unrecorded)
    # Then: D starts with 40 s left (10 s reserve + 20 s for the longest item fit); E would not
    assert results == ["A", {"id": "B", "error": "ItemProcessingFailed"}, {"id": "C", "error": "RuntimeError"}, "D"]
    assert started == ["A", "B", "C", "D"]


def test_a_chunk_keeps_back_time_for_its_longest_item_so_far():
    # Given: 600 s left, 30 s reserve, items of 200 s (short ones first)
    durations = {"quick": 1_000, "slow-1": 200_000, "slow-2": 200_000, "slow-3": 200_000}
    entries = [{"item": {"id": i}, "attempt": 1} for i in durations]
    remaining = {"ms": 600_000}

    def process(item, attempt):
        remaining["ms"] -= durations[item["id"]]

    # When
    results = mr.process_chunk(entries, process, lambda: remaining["ms"], 30_000, {}, unrecorded)
    # Then: after two slow items 199 s are left, less than 30 s + 200 s, so slow-3 waits
    assert results == ["quick", "slow-1", "slow-2"]


def test_a_chunk_records_each_outcome_before_it_starts_the_next_item():
    # Given
    entries = [{"item": {"id": i, **({"fail_attempts": 1} if i == "B" else {})}, "attempt": 1} for i in "ABC"]
    events: list[tuple[str, Any]] = []

    def process(item, attempt):
        events.append(("start", item["id"]))
        return process_item(item, attempt)

    def record(position, error):
        events.append(("record", position, error))
        return error

    # When
    results = mr.process_chunk(entries, process, lambda: 600_000, 30_000, {}, record)
    # Then
    assert events == [
        ("start", "A"), ("record", 0, None),
        ("start", "B"), ("record", 1, "ItemProcessingFailed"),
        ("start", "C"), ("record", 2, None),
    ]
    assert results == ["A", {"id": "B", "error": "ItemProcessingFailed"}, "C"]


def test_a_chunk_runs_no_item_its_journal_has_and_keeps_the_outcome_recorded_first():
    # Given: an earlier invocation of this chunk finished A (succeeded) and B (failed), then died;
    # a concurrent one already recorded C as succeeded
    entries = [{"item": {"id": i}, "attempt": 1} for i in "ABCD"]
    started: list[str] = []
    recorded: list[int] = []

    def process(item, attempt):
        started.append(item["id"])
        raise ItemProcessingFailed(item["id"])

    def record(position, error):
        recorded.append(position)
        return None if position == 2 else error

    # When
    results = mr.process_chunk(entries, process, lambda: 600_000, 30_000, {0: None, 1: "Sandbox.Timedout"}, record)
    # Then
    assert started == ["C", "D"] and recorded == [2, 3]
    assert results == ["A", {"id": "B", "error": "Sandbox.Timedout"}, "C", {"id": "D", "error": "ItemProcessingFailed"}]


def test_a_chunk_out_of_time_still_reports_the_outcomes_its_journal_has():
    # Given: no time for any item; the journal has the last entry (recorded by a concurrent invocation)
    entries = [{"item": {"id": i}, "attempt": 1} for i in "AB"]
    # When
    results = mr.process_chunk(entries, process_item, lambda: 1_000, 30_000, {1: None}, unrecorded)
    # Then
    assert results == ["B"]


def test_a_chunk_out_of_time_reports_journal_outcomes_past_the_items_it_skipped():
    # Given: no time left; the journal has only the third entry
    entries = [{"item": {"id": i}, "attempt": 1} for i in "ABC"]
    # When
    results = mr.process_chunk(entries, process_item, lambda: 1_000, 30_000, {2: "E"}, unrecorded)
    # Then: A and B are left for the next pass, C's recorded outcome is reported
    assert results == [{"id": "C", "error": "E"}]


def test_a_chunk_that_died_keeps_what_it_recorded_and_fails_only_the_item_it_died_on():
    # Given: the chunk recorded A (succeeded) and B (failed), then died running C
    _, pending = mr.start(items("A", "B", "C", "D", "E"))
    # When
    outcomes = mr.outcomes_from_journal(pending, {0: None, 1: "ItemProcessingFailed"}, "Sandbox.Timedout")
    # Then: D and E never started
    assert outcomes == {"A": None, "B": "ItemProcessingFailed", "C": "Sandbox.Timedout"}
    # and a chunk that recorded every item (it died writing its results) blames none
    every = {position: None for position in range(5)}
    assert mr.outcomes_from_journal(pending, every, "Sandbox.Timedout") == dict.fromkeys("ABCDE")


def test_a_failed_chunk_reads_its_journal_and_a_finished_one_reports_its_results():
    # Given
    paths = RunPaths.for_execution("x")
    ledger, pending = mr.start(items("A", "B", "C", "D", "E"))
    manifest, chunks = mr.plan_pass(paths, 1, pending, chunk_size=2)
    # When: chunk 0 ran out of time before B; chunk 1 finished C and died on D; chunk 2 died at once
    finished, errors = mr.split_map_results(
        manifest, [0, {"chunk": 1, "error": "Sandbox.Timedout"}, {"chunk": 2, "error": "Runtime.ExitError"}]
    )
    outcomes = mr.outcomes_from_chunks(
        manifest,
        errors,
        chunks,
        {manifest[0]["results_key"]: ["A"]},
        {manifest[1]["chunk_key"]: {0: None}, manifest[2]["chunk_key"]: {}},
    )
    # Then
    assert finished == [manifest[0]]
    assert outcomes == {"A": None, "C": None, "D": "Sandbox.Timedout", "E": "Runtime.ExitError"}
    result, next_pending = mr.record_pass(ledger, pending, outcomes)
    assert result["succeeded"] == ["A", "C"]
    # B never started: it keeps attempt 1 and runs before the items that failed
    assert [(e["item"]["id"], e["attempt"]) for e in next_pending] == [("B", 1), ("D", 2), ("E", 2)]


def test_map_results_must_cover_each_chunk_exactly_once():
    # Given
    manifest = [{"chunk": 0}, {"chunk": 1}]
    # Then
    for map_results in ([0], [0, 1, 1], [0, {"chunk": 0, "error": "E"}, 1]):
        with pytest.raises(LedgerMismatch):
            mr.split_map_results(manifest, map_results)
    with pytest.raises(LedgerMismatch, match=r"^the Map returned results for chunks \[0, 0, 1\], expected \[0, 1\]$"):
        mr.split_map_results(manifest, [0, {"chunk": 0, "error": "E"}, 1])


def test_s3_state_points_the_next_pass_at_its_manifest_and_reports_counts():
    # Given
    result = {"succeeded": ["A"], "failed": [{"id": "B", "error": "E"}], "attempts": {"A": 1, "B": 1}, "passes": 1}
    # When
    state = mr.s3_state(Options(3, True), BUCKET, RunPaths.for_execution("x"), result)
    # Then
    assert state["manifest"] == {"Bucket": BUCKET, "Key": "runs/x/pass-02/manifest.json"}
    assert state["result"] == {
        "succeeded_count": 1,
        "failed_count": 1,
        "passes": 1,
        "result_s3_uri": f"s3://{BUCKET}/runs/x/result.json",
    }
    assert state["retry"] and state["failure_cause"].endswith(f"full result in s3://{BUCKET}/runs/x/result.json")


# ---- the demo processor ------------------------------------------------------------------------


def test_demo_processor_fails_the_first_k_attempts_only():
    # Given
    item = {"id": "A", "fail_attempts": 2}
    # Then
    for attempt in (1, 2):
        with pytest.raises(ItemProcessingFailed, match=f"this is attempt {attempt}"):
            process_item(item, attempt)
    assert process_item(item, 3) == {"id": "A", "attempt": 3}


def test_demo_processor_random_failures_are_reproducible_and_near_the_rate():
    # Given
    def outcome(item_id: str, attempt: int) -> bool:
        try:
            process_item({"id": item_id, "failure_rate": 0.3}, attempt)
        except ItemProcessingFailed:
            return False
        return True

    # When
    first = [outcome(f"I-{n}", 1) for n in range(1000)]
    again = [outcome(f"I-{n}", 1) for n in range(1000)]
    # Then
    assert first == again
    assert 250 <= first.count(False) <= 350
    assert [outcome("I-1", a) for a in range(1, 30)].count(False) not in (0, 29)  # varies with the attempt


def test_demo_processor_sleeps_before_working_so_a_long_sleep_times_the_function_out():
    # Given
    slept: list[float] = []
    # When
    process_item({"id": "A", "sleep_seconds": 45}, 1, sleep=slept.append)
    # Then
    assert slept == [45]


# ---- handlers ----------------------------------------------------------------------------------


@dataclass
class FakeLambdaContext:
    """What Powertools and the chunk processor read from the Lambda runtime's context object."""

    remaining_ms: int = 600_000
    function_name: str = "test"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:test"
    aws_request_id: str = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_item_processor_handler_returns_the_id_or_raises_the_named_error():
    # Given
    handler = load_lambda_module("map_item_processor")
    # Then
    assert handler.lambda_handler({"item": {"id": "A"}, "attempt": 1}, FakeLambdaContext())["id"] == "A"
    with pytest.raises(ItemProcessingFailed):
        handler.lambda_handler({"item": {"id": "A", "fail_attempts": 1}, "attempt": 1}, FakeLambdaContext())


def test_validate_and_record_handlers_run_the_inline_loop():
    # Given
    validate = load_lambda_module("map_validate_items").lambda_handler
    state = validate({"items": [{"id": "A"}, {"id": "B", "fail_attempts": 1}], "max_attempts": 3}, FakeLambdaContext())
    record = load_lambda_module("map_record_pass").lambda_handler
    # When
    state = record({**state, "pass_results": ["A", {"id": "B", "error": "ItemProcessingFailed"}]}, FakeLambdaContext())
    # Then
    assert state["pending"] == [{"item": {"id": "B", "fail_attempts": 1}, "attempt": 2}]
    assert (state["retry"], state["wait_seconds"], state["max_attempts"]) == (True, 2, 3)


def test_recording_a_pass_counts_the_items_retried_or_given_up(capsys):
    # Given: two passes allowed; B fails both
    validate = load_lambda_module("map_validate_items").lambda_handler
    state = validate({"items": [{"id": "A"}, {"id": "B", "fail_attempts": 5}], "max_attempts": 2}, FakeLambdaContext())
    record = load_lambda_module("map_record_pass").lambda_handler
    failed_b = {"id": "B", "error": "ItemProcessingFailed"}
    # When
    state = record({**state, "pass_results": ["A", failed_b]}, FakeLambdaContext())
    record({**state, "pass_results": [failed_b]}, FakeLambdaContext())
    # Then: one item retried after pass 1, one given up after pass 2
    metrics = emf_metrics(capsys.readouterr().out)
    assert [{k: v for k, v in m.items() if k.startswith("Map")} for m in metrics] == [
        {"MapItemsRetried": [1.0]},
        {"MapItemsGivenUp": [1.0]},
    ]


def test_validate_handler_raises_invalid_items():
    validate = load_lambda_module("map_validate_items").lambda_handler
    with pytest.raises(InvalidItems, match="items is empty"):
        validate({"items": []}, FakeLambdaContext())


@pytest.fixture
def s3(monkeypatch):
    """The items bucket and the chunk journal table (keyed as the stack's), on moto."""
    monkeypatch.setenv("ITEMS_BUCKET_NAME", BUCKET)
    monkeypatch.setenv("CHUNK_JOURNAL_TABLE_NAME", JOURNAL_TABLE)
    with mock_aws():
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        boto3.client("dynamodb").create_table(
            TableName=JOURNAL_TABLE,
            KeySchema=[{"AttributeName": "chunk_key", "KeyType": "HASH"}, {"AttributeName": "position", "KeyType": "RANGE"}],
            AttributeDefinitions=[
                {"AttributeName": "chunk_key", "AttributeType": "S"},
                {"AttributeName": "position", "AttributeType": "N"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client


def read(s3, key: str) -> Any:
    return json.loads(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())


def keys(s3, prefix: str) -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", []))


def split(s3, item_list: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    s3.put_object(Bucket=BUCKET, Key="inputs/list.json", Body=json.dumps(item_list))
    handler = load_lambda_module("map_split_items")
    event = {"input": {"items_s3_uri": f"s3://{BUCKET}/inputs/list.json", **options}, "execution_name": "exec-1"}
    return handler.lambda_handler(event, FakeLambdaContext())


def run_chunks(s3, state: dict[str, Any], context: FakeLambdaContext | None = None, handler: Any = None) -> list[Any]:
    """What the Distributed Map does in one pass: each manifest entry through the chunk processor
    (``handler``, or one loaded afresh as a cold start loads it)."""
    handler = handler or load_lambda_module("map_chunk_processor")
    manifest = read(s3, state["manifest"]["Key"])
    return [handler.lambda_handler(entry, context or FakeLambdaContext())["chunk"] for entry in manifest]


def test_split_handler_writes_chunks_manifest_and_ledger_and_returns_a_small_state(s3):
    # When
    state = split(s3, items(*(f"I-{n:03d}" for n in range(600))), max_attempts=3)
    # Then
    assert keys(s3, "runs/exec-1/") == [
        "runs/exec-1/pass-01/chunk-00000.json",
        "runs/exec-1/pass-01/chunk-00001.json",
        "runs/exec-1/pass-01/chunk-00002.json",
        "runs/exec-1/pass-01/manifest.json",
        "runs/exec-1/result.json",
    ]
    assert read(s3, "runs/exec-1/pass-01/chunk-00002.json")[0] == {"item": {"id": "I-500"}, "attempt": 1}
    assert read(s3, "runs/exec-1/result.json")["attempts"]["I-599"] == 0
    assert state["manifest"] == {"Bucket": BUCKET, "Key": "runs/exec-1/pass-01/manifest.json"}
    assert state["result"]["passes"] == 0 and state["max_attempts"] == 3
    assert len(json.dumps(state)) < 2_000


@pytest.mark.parametrize(
    "body, uri, problem",
    [
        (b'[{"id": "A"}, {"id": "A"}]', "inputs/list.json", "repeated: A"),
        (b"not json", "inputs/list.json", "is not valid JSON"),
        (b'{"id": "A"}', "inputs/list.json", "must be a JSON array"),
        (b"[]", "inputs/missing.json", "cannot read s3://map-retry-items/inputs/missing.json (NoSuchKey)"),
    ],
)
def test_split_handler_rejects_bad_documents_as_invalid_items(s3, body, uri, problem):
    # Given
    s3.put_object(Bucket=BUCKET, Key="inputs/list.json", Body=body)
    handler = load_lambda_module("map_split_items")
    # Then
    with pytest.raises(InvalidItems) as raised:
        handler.lambda_handler(
            {"input": {"items_s3_uri": f"s3://{BUCKET}/{uri}"}, "execution_name": "e"}, FakeLambdaContext()
        )
    assert problem in str(raised.value)
    assert keys(s3, "runs/") == []


def test_split_handler_refuses_an_oversized_document_before_reading_it(s3, monkeypatch):
    # Given
    s3.put_object(Bucket=BUCKET, Key="inputs/list.json", Body=json.dumps(items("A", "B")))
    handler = load_lambda_module("map_split_items")
    monkeypatch.setattr(handler, "S3_MAX_BYTES", 10)
    # Then
    with pytest.raises(InvalidItems, match="more than the 10 accepted"):
        handler.lambda_handler({"input": {"items_s3_uri": f"s3://{BUCKET}/inputs/list.json"}, "execution_name": "e"}, FakeLambdaContext())


def test_chunk_processor_writes_results_and_never_reruns_a_finished_chunk(s3):
    # Given
    state = split(s3, [{"id": "A"}, {"id": "B", "fail_attempts": 1}])
    # When
    run_chunks(s3, state)
    s3.put_object(Bucket=BUCKET, Key="runs/exec-1/pass-01/results-00000.json", Body=b'["marker"]')
    again = load_lambda_module("map_chunk_processor").lambda_handler(
        read(s3, state["manifest"]["Key"])[0], FakeLambdaContext()
    )
    # Then: the retried invocation left the written results alone
    assert again == {"chunk": 0, "reused": True}
    assert read(s3, "runs/exec-1/pass-01/results-00000.json") == ["marker"]


def test_chunk_processor_out_of_time_starts_no_item_and_still_writes_results(s3):
    # Given
    state = split(s3, items("A", "B"))
    # When
    run_chunks(s3, state, FakeLambdaContext(remaining_ms=5_000))
    # Then
    assert read(s3, "runs/exec-1/pass-01/results-00000.json") == []


class ChunkDied(BaseException):
    """Stands in for the end of a Lambda invocation mid-item (a timeout, running out of memory): it
    is not an Exception, so nothing in the handler catches it."""


def test_chunk_journal_keeps_the_first_outcome_recorded_for_an_entry(s3):
    # Given
    from patterns_common.map_retry_journal import RECORD_LIFETIME_SECONDS, ChunkJournal

    journal = ChunkJournal(boto3.client("dynamodb"), JOURNAL_TABLE, clock=lambda: 1_000)
    # When
    first = journal.record("runs/e/pass-01/chunk-00000.json", 0, None)
    second = journal.record("runs/e/pass-01/chunk-00000.json", 0, "Sandbox.Timedout")
    journal.record("runs/e/pass-01/chunk-00000.json", 1, "ItemProcessingFailed")
    # Then: a later invocation cannot turn a recorded success into a failure
    assert (first, second) == (None, None)
    assert journal.read("runs/e/pass-01/chunk-00000.json") == {0: None, 1: "ItemProcessingFailed"}
    assert journal.read("runs/e/pass-01/chunk-00001.json") == {}
    stored = boto3.client("dynamodb").scan(TableName=JOURNAL_TABLE)["Items"]
    assert {item["expires_at"]["N"] for item in stored} == {str(1_000 + RECORD_LIFETIME_SECONDS)}


def test_a_chunk_that_dies_mid_item_keeps_what_it_finished_and_the_next_pass_runs_the_rest_once(s3, monkeypatch):
    # Given: one chunk of five items; the invocation dies while running C
    state = split(s3, [{"id": "A"}, {"id": "B", "fail_attempts": 1}, {"id": "C"}, {"id": "D"}, {"id": "E"}], max_attempts=2)
    handler = load_lambda_module("map_chunk_processor")
    runs: list[tuple[str, int]] = []

    def process(item, attempt):
        runs.append((item["id"], attempt))
        if (item["id"], attempt) == ("C", 1):
            raise ChunkDied
        return process_item(item, attempt)

    monkeypatch.setattr(handler, "process_item", process)
    with pytest.raises(ChunkDied):
        run_chunks(s3, state, handler=handler)
    assert keys(s3, "runs/exec-1/pass-01/results") == []
    # When: the Map's Catch reports the chunk failed, and the next pass runs
    state = record_chunks(state, [{"chunk": 0, "error": "Sandbox.Timedout"}])
    assert read(s3, "runs/exec-1/pass-02/chunk-00000.json") == [
        {"item": {"id": "D"}, "attempt": 1},
        {"item": {"id": "E"}, "attempt": 1},
        {"item": {"id": "B", "fail_attempts": 1}, "attempt": 2},
        {"item": {"id": "C"}, "attempt": 2},
    ]
    state = record_chunks(state, run_chunks(s3, state, handler=handler))
    # Then: A ran once; B and C ran again because they failed; D and E ran once, at attempt 1
    assert runs == [("A", 1), ("B", 1), ("C", 1), ("D", 1), ("E", 1), ("B", 2), ("C", 2)]
    result = read(s3, "runs/exec-1/result.json")
    assert sorted(result["succeeded"]) == ["A", "B", "C", "D", "E"] and result["failed"] == []
    assert result["attempts"] == {"A": 1, "B": 2, "C": 2, "D": 1, "E": 1}
    assert state["result"]["passes"] == 2


def test_a_chunk_retried_after_its_invocation_died_runs_only_what_it_had_not_finished(s3, monkeypatch):
    # Given: the first invocation finished A and died running B
    state = split(s3, items("A", "B", "C"))
    handler = load_lambda_module("map_chunk_processor")
    runs: list[str] = []

    def process(item, attempt):
        runs.append(item["id"])
        if runs == ["A", "B"]:
            raise ChunkDied

    monkeypatch.setattr(handler, "process_item", process)
    with pytest.raises(ChunkDied):
        run_chunks(s3, state, handler=handler)
    # When: Step Functions invokes the chunk again
    run_chunks(s3, state, handler=handler)
    # Then
    assert runs == ["A", "B", "B", "C"]
    assert read(s3, "runs/exec-1/pass-01/results-00000.json") == ["A", "B", "C"]


def record_chunks(state: dict[str, Any], map_results: list[Any]) -> dict[str, Any]:
    handler = load_lambda_module("map_record_chunks")
    return handler.lambda_handler({**state, "pass_results": map_results}, FakeLambdaContext())


def test_record_chunks_writes_the_next_pass_with_only_the_failed_items(s3):
    # Given
    item_list = items(*(f"I-{n:03d}" for n in range(300)))
    item_list[7]["fail_attempts"] = 1
    item_list[260]["fail_attempts"] = 5
    state = split(s3, item_list, max_attempts=2)
    # When: pass 1
    state = record_chunks(state, run_chunks(s3, state))
    # Then
    assert (state["retry"], state["remaining_count"], state["wait_seconds"]) == (True, 2, 2)
    assert read(s3, "runs/exec-1/pass-02/chunk-00000.json") == [
        {"item": {"id": "I-007", "fail_attempts": 1}, "attempt": 2},
        {"item": {"id": "I-260", "fail_attempts": 5}, "attempt": 2},
    ]
    # When: pass 2, the last one
    state = record_chunks(state, run_chunks(s3, state))
    # Then
    result = read(s3, "runs/exec-1/result.json")
    assert result["failed"] == [{"id": "I-260", "error": "ItemProcessingFailed"}]
    assert (result["attempts"]["I-007"], result["attempts"]["I-008"], result["passes"]) == (2, 1, 2)
    assert len(result["succeeded"]) == 299
    assert state["result"] == {
        "succeeded_count": 299,
        "failed_count": 1,
        "passes": 2,
        "result_s3_uri": f"s3://{BUCKET}/runs/exec-1/result.json",
    }
    assert (state["retry"], state["remaining_count"]) == (False, 1)
    assert state["failure_cause"].startswith("1 of 300 items still failed after 2 passes: I-260 (ItemProcessingFailed)")
    assert keys(s3, "runs/exec-1/pass-03/") == []


def test_record_chunks_fails_the_first_item_of_a_chunk_that_died_before_recording_any(s3):
    # Given
    state = split(s3, items(*(f"I-{n:03d}" for n in range(300))))
    first_chunk = read(s3, state["manifest"]["Key"])[0]
    load_lambda_module("map_chunk_processor").lambda_handler(first_chunk, FakeLambdaContext())
    # When: chunk 1's Lambda timed out before it recorded an item (its journal is empty)
    state = record_chunks(state, [0, {"chunk": 1, "error": "Sandbox.Timedout"}])
    # Then: the item it was running fails; the 49 it never started keep their attempt number
    result = read(s3, "runs/exec-1/result.json")
    assert result["failed"][0] == {"id": "I-250", "error": "Sandbox.Timedout"}
    assert {f["error"] for f in result["failed"][1:]} == {mr.NOT_ATTEMPTED} and len(result["failed"]) == 50
    next_pass = read(s3, "runs/exec-1/pass-02/chunk-00000.json")
    assert next_pass[0] == {"item": {"id": "I-251"}, "attempt": 1}
    assert next_pass[-1] == {"item": {"id": "I-250"}, "attempt": 2}


def test_record_chunks_retried_after_recording_does_not_apply_the_pass_twice(s3, capsys):
    # Given
    state = split(s3, [{"id": "A"}, {"id": "B", "fail_attempts": 1}], max_attempts=3)
    map_results = run_chunks(s3, state)
    first = record_chunks(state, map_results)
    # When: Step Functions retries the same invocation
    second = record_chunks(state, map_results)
    # Then: recorded and counted once
    assert second == first
    assert read(s3, "runs/exec-1/result.json")["passes"] == 1
    retried = [m["MapItemsRetried"] for m in emf_metrics(capsys.readouterr().out) if "MapItemsRetried" in m]
    assert retried == [[1.0]]


def test_record_chunks_refuses_a_ledger_out_of_step_with_the_machine(s3):
    # Given
    state = split(s3, items("A"))
    s3.put_object(Bucket=BUCKET, Key="runs/exec-1/result.json", Body=json.dumps({"passes": 3}))
    # Then
    with pytest.raises(LedgerMismatch, match="has 3 passes; the machine expected 0"):
        record_chunks(state, [0])


def test_a_pass_whose_map_failed_keeps_only_what_the_journals_recorded():
    # Given: two chunks; the first recorded its first item as succeeded and its second as failed
    paths = RunPaths.for_execution("e")
    manifest, chunks = mr.plan_pass(paths, 1, [{"item": {"id": f"i{n}"}, "attempt": 1} for n in range(4)], chunk_size=2)
    journals = {manifest[0]["chunk_key"]: {0: None, 1: "ItemProcessingFailed"}, manifest[1]["chunk_key"]: {}}
    # When
    outcomes = mr.outcomes_recorded(manifest, chunks, journals)
    # Then: no chunk error is pinned on an item; the unrecorded ones are left out (not attempted)
    assert outcomes == {"i0": None, "i1": "ItemProcessingFailed"}
    result, pending = mr.record_pass(mr.start([{"id": f"i{n}"} for n in range(4)])[0], [e for c in chunks.values() for e in c], outcomes)
    assert [p["item"]["id"] for p in pending] == ["i2", "i3", "i1"]
    assert [p["attempt"] for p in pending] == [1, 1, 2]


# ---- what one pass decides, at its edges --------------------------------------------------------


@pytest.mark.parametrize(
    "function_error, payload, error_name, message",
    [
        # Lambda's answer for an exception the handler raised
        # (https://docs.aws.amazon.com/lambda/latest/dg/python-exceptions.html)
        ("Unhandled", b'{"errorType": "ValueError", "errorMessage": "bad item"}', "ValueError", "bad item"),
        # A timeout or crash: the runtime names it
        ("Unhandled", b'{"errorType": "Sandbox.Timedout", "errorMessage": "Task timed out after 3.00 seconds"}',
         "Sandbox.Timedout", "Task timed out after 3.00 seconds"),
        # No usable errorType: the FunctionError Lambda set (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html)
        ("Unhandled", b'{"errorType": "", "errorMessage": "x"}', "Lambda.Unhandled", "x"),
        ("Handled", b'{"errorMessage": "x"}', "Lambda.Handled", "x"),
        ("Unhandled", b"not json", "Lambda.Unhandled", "b'not json'"),
        ("Unhandled", b"[1]", "Lambda.Unhandled", "b'[1]'"),
        ("Unhandled", b"", "Lambda.Unhandled", "b''"),
        ("Unhandled", b"x" * 300, "Lambda.Unhandled", str(b"x" * 200)),
    ],
)
def test_a_processor_answering_with_a_function_error_fails_its_item_under_lambdas_name(function_error, payload, error_name, message):
    with pytest.raises(mr.ItemFailed) as failed:
        mr.check_processor_answer(function_error, payload)
    assert (failed.value.error_name, str(failed.value)) == (error_name, message)
    assert mr.item_error(failed.value) == error_name


@pytest.mark.parametrize("function_error", [None, ""])
def test_a_processor_answering_without_a_function_error_succeeded(function_error):
    assert mr.check_processor_answer(function_error, b'{"errorType": "ValueError"}') is None
    assert mr.item_error(KeyError("x")) == "KeyError"


@pytest.mark.parametrize(
    "count, max_attempts, refused",
    [(1000, 2, False), (400, 5, False), (200, 10, False), (1001, 2, True), (667, 3, True), (201, 10, True)],
)
def test_an_inline_run_may_make_up_to_2000_item_attempts(count, max_attempts, refused):
    many = items(*(f"I-{n}" for n in range(count)))
    options = Options(max_attempts=max_attempts, fail_on_remaining=True)
    if not refused:
        mr.check_inline_budget(many, options)
        return
    with pytest.raises(InvalidItems) as raised:
        mr.check_inline_budget(many, options)
    assert str(raised.value) == (
        f"{count} items x max_attempts {max_attempts} is more than 2000 item attempts for an inline run; "
        "put the items in S3 and pass items_s3_uri instead"
    )


def test_an_inline_state_may_reach_200_kib_and_not_a_byte_more():
    # Given: one item whose padding makes the largest inline state exactly 200 KiB
    def padded(size):
        return [{"id": "A", "blob": "x" * size}]

    size = 200 * 1024 - mr.inline_peak_bytes(padded(0))  # each ASCII character of padding is one byte
    assert mr.inline_peak_bytes(padded(size)) == 200 * 1024
    options = Options(max_attempts=2, fail_on_remaining=True)
    # Then
    mr.check_inline_budget(padded(size), options)
    with pytest.raises(InvalidItems) as raised:
        mr.check_inline_budget(padded(size + 1), options)
    assert str(raised.value) == (
        "these items would make the inline state 200 KiB, more than 200 KiB (Step Functions payloads stop at 256 KiB); "
        "put the items in S3 and pass items_s3_uri instead"
    )


def test_the_inline_peak_is_every_item_pending_failed_and_in_the_ledger_at_the_last_attempt():
    # The state "Record Pass Results" holds when every item failed every attempt, measured as UTF-8 bytes
    two = [{"id": "A", "n": "\u00e9"}, {"id": "B"}]
    error = "Lambda.ClientExecutionTimeoutException"
    state = {
        "pending": [{"item": two[0], "attempt": 10}, {"item": two[1], "attempt": 10}],
        "pass_results": [{"id": "A", "error": error}, {"id": "B", "error": error}],
        "result": {"succeeded": [], "failed": [{"id": "A", "error": error}, {"id": "B", "error": error}], "attempts": {"A": 10, "B": 10}},
    }
    assert mr.inline_peak_bytes(two) == len(json.dumps(state, ensure_ascii=False).encode("utf-8"))


@pytest.mark.parametrize(
    "uri, cause",
    [
        (7, f"items_s3_uri must be a string like s3://{BUCKET}/inputs/<name>.json, got number"),
        ("inputs/list.json", f'items_s3_uri "inputs/list.json" is not an S3 URI like s3://{BUCKET}/inputs/<name>.json'),
        (f"s3://{BUCKET}/in/list.json", f'items_s3_uri "s3://{BUCKET}/in/list.json" must name an object like s3://{BUCKET}/inputs/<name>.json'),
    ],
)
def test_a_rejected_items_uri_is_the_executions_cause_word_for_word(uri, cause):
    with pytest.raises(InvalidItems) as raised:
        mr.items_key(uri, BUCKET)
    assert str(raised.value) == cause


def test_an_items_document_is_parsed_as_json_and_its_error_quoted():
    assert mr.parse_items_document(b'[{"id": "A"}]', "s3://b/inputs/x.json") == [{"id": "A"}]
    with pytest.raises(InvalidItems) as raised:
        mr.parse_items_document(b"[", "s3://b/inputs/x.json")
    assert str(raised.value) == "s3://b/inputs/x.json is not valid JSON: Expecting value: line 1 column 2 (char 1)"


@pytest.mark.parametrize("count, tail", [(20, ""), (21, " and 1 more")])
def test_a_summary_names_twenty_ids_then_counts_the_rest(count, tail):
    ids = [f"I{n:02d}" for n in range(count)]
    assert mr.summarize(ids) == ", ".join(ids[:20]) + tail


@pytest.mark.parametrize("passes, wait", [(0, 2), (1, 2), (2, 4), (3, 8), (5, 32), (6, 60), (10, 60)])
def test_the_wait_before_a_pass_doubles_from_two_seconds_to_at_most_a_minute(passes, wait):
    assert mr.backoff_seconds(passes) == wait


def test_the_loop_facts_the_choice_reads():
    # Given: a pass that left one of two items failed, first of three passes
    options = Options(max_attempts=3, fail_on_remaining=False)
    result = {"succeeded": ["A"], "failed": [{"id": "B", "error": "E"}], "attempts": {"A": 1, "B": 1}, "passes": 1}
    # Then
    assert mr.loop_facts(options, result, "s3://b/runs/x/result.json") == {
        "max_attempts": 3,
        "fail_on_remaining": False,
        "remaining_count": 1,
        "retry": True,
        "wait_seconds": 2,
        "failure_cause": "1 of 2 items still failed after 1 pass: B (E); full result in s3://b/runs/x/result.json",
    }
    done = {**result, "failed": [], "succeeded": ["A", "B"], "passes": 2}
    assert mr.loop_facts(options, done) == {
        "max_attempts": 3, "fail_on_remaining": False, "remaining_count": 0, "retry": False, "wait_seconds": 4, "failure_cause": "",
    }
    assert mr.should_retry(options, {**result, "passes": 2}) and not mr.should_retry(options, {**result, "passes": 3})


@pytest.mark.parametrize(
    "facts, metrics",
    [
        ({"remaining_count": 0, "retry": False}, {}),
        ({"remaining_count": 3, "retry": True}, {"MapItemsRetried": 3}),
        ({"remaining_count": 2, "retry": False}, {"MapItemsGivenUp": 2}),
    ],
)
def test_a_pass_counts_its_remaining_items_as_retried_or_given_up(facts, metrics):
    assert mr.pass_metrics(facts) == metrics


def test_a_cause_fills_up_to_a_thousand_characters_and_names_how_many_it_left_out():
    # Given: 15 failed items with 60-character ids
    result = failing_result(15, id_length=60)
    # When
    cause = mr.retry_failed_cause(result)
    # Then: as many ids as fit, whole, and the count of the others
    shown = re.findall(r"\d{60} \(ItemProcessingFailed\)", cause)
    left_out = int(re.search(r" and (\d+) more$", cause).group(1))
    assert len(shown) + left_out == 15 and left_out > 0
    assert len(cause) - len(f" and {left_out} more") <= mr.CAUSE_MAX_CHARS
    part = len(shown[0]) + 2
    assert len(cause) - len(f" and {left_out} more") + part > mr.CAUSE_MAX_CHARS  # one more would not fit


def test_the_listed_ids_may_end_at_the_thousandth_character():
    # Given: 15 failed items whose parts ("<id> (E)") take the cause to exactly 1,000 characters: the head's
    # 42, 14 parts of 64 and one of 34, with ", " between them
    ids = [f"a{n:02d}" + "x" * 57 for n in range(14)] + ["b" * 30]
    result = {"succeeded": [], "failed": [{"id": i, "error": "E"} for i in ids], "attempts": {i: 1 for i in ids}, "passes": 1}
    listed = "15 of 15 items still failed after 1 pass: " + ", ".join(f"{i} (E)" for i in ids)
    assert len(listed) == 42 + 14 * 64 + 34 + 14 * 2 == mr.CAUSE_MAX_CHARS
    # When/Then: every id is listed, none counted as left out
    assert mr.retry_failed_cause(result) == listed


def test_an_id_that_still_fits_in_the_thousand_characters_is_listed_and_the_next_is_counted():
    # Given: 16 failed items: 14 whose parts ("<id> (E)") are 64 characters, one of 32, one of 5
    ids = [f"a{n:02d}" + "x" * 57 for n in range(14)] + ["b" * 28, "c"]
    result = {"succeeded": [], "failed": [{"id": i, "error": "E"} for i in ids], "attempts": {i: 1 for i in ids}, "passes": 1}
    head = "16 of 16 items still failed after 1 pass: "
    listed = head + ", ".join(f"{i} (E)" for i in ids[:15])
    # The 15 listed parts end at 42 + 14 x 64 + 32 + 14 x 2 = 998 characters, within the 1,000;
    # the next one's ", c (E)" would end at 1,005
    assert len(listed) == 998
    # When/Then
    assert mr.retry_failed_cause(result) == listed + " and 1 more"


@pytest.mark.parametrize("id_length", range(40, 90, 3))
@pytest.mark.parametrize("uri", [None, "s3://map-retry-items/runs/exec-with-a-long-name-0123456789/result.json"])
def test_a_cause_with_its_result_uri_stays_within_a_thousand_characters(id_length, uri):
    # Given: 20 failed items with long ids, and the full result's URI at the end of the cause
    cause = mr.retry_failed_cause(failing_result(20, id_length=id_length), uri)
    # Then: besides the count of the ids left out, the cause fits in 1,000 characters, the URI whole
    left_out = re.search(r" and (\d+) more(; full result in .*)?$", cause)
    assert len(cause) - len(f" and {left_out.group(1)} more") <= mr.CAUSE_MAX_CHARS
    assert cause.endswith(f"; full result in {uri}") if uri else "full result" not in cause


def test_an_id_that_is_not_a_string_is_shown_as_json():
    with pytest.raises(LedgerMismatch, match=r"^item 7 has more than one result in this pass$"):
        mr.outcomes_from_iterations([{"id": 7, "error": "E"}, {"id": 7, "error": "E"}])


def test_a_chunk_starts_an_item_while_its_reserve_and_longest_item_still_fit_exactly():
    # Given: 1,000 ms left before each item, a 1,000 ms reserve, items taking no time
    started = []
    results = mr.process_chunk(
        [{"item": {"id": "A"}, "attempt": 1}, {"item": {"id": "B"}, "attempt": 2}],
        lambda item, attempt: started.append((item["id"], attempt)),
        remaining_ms=lambda: 1000,
        reserve_ms=1000,
        journal={},
        record=lambda position, error: error,
    )
    # Then: both ran (1,000 ms left is not less than 1,000 reserved)
    assert started == [("A", 1), ("B", 2)] and results == ["A", "B"]
    assert mr.process_chunk([{"item": {"id": "A"}, "attempt": 1}], lambda *_: started.append("late"), lambda: 999, 1000, {}, lambda p, e: e) == []
    assert started[-1] != "late"


def test_the_s3_state_points_at_the_next_pass_and_the_full_result():
    paths = RunPaths.for_execution("exec-1")
    result = {"succeeded": ["A"], "failed": [{"id": "B", "error": "E"}], "attempts": {"A": 1, "B": 1}, "passes": 1}
    state = mr.s3_state(Options(max_attempts=2, fail_on_remaining=True), BUCKET, paths, result)
    assert state["run_prefix"] == "runs/exec-1/"
    assert state["manifest"] == {"Bucket": BUCKET, "Key": "runs/exec-1/pass-02/manifest.json"}
    assert state["result"] == {
        "succeeded_count": 1, "failed_count": 1, "passes": 1, "result_s3_uri": f"s3://{BUCKET}/runs/exec-1/result.json",
    }
    assert state["failure_cause"].endswith(f"; full result in s3://{BUCKET}/runs/exec-1/result.json")

"""Rules of the Map retry-failed machine: input validation, the pass ledger, chunking, causes.

Plain Python with no AWS client, so every rule is tested without mocks. The machine carries the
ledger between passes (in its payload for ``items``, in S3 for ``items_s3_uri``); these functions
are the only place that changes it, so "an item that succeeded is never processed again" is
enforced in one spot.

Shapes (all JSON):
- pending entry: ``{"item": {...}, "attempt": n}``: one item to run in the next pass, with the
  attempt number the processor sees (the machine's count, never the processor's memory).
- iteration result: the item's id (str) when it succeeded, ``{"id", "error"}`` when it failed.
- result (the ledger): ``{"succeeded": [ids], "failed": [{"id", "error"}], "attempts": {id: n},
  "passes": n}``; ``failed`` holds the items still failed after the latest pass.
- journal (S3 mode): ``{position: error or None}``, the outcome of each entry of one chunk that a
  chunk processor finished, recorded the moment it finished (``position`` is the entry's index in
  the chunk object). It outlives the invocation, so a chunk that dies keeps its finished items.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_ATTEMPTS = 2  # the seed's first pass plus one retry pass
MAX_ATTEMPTS_LIMIT = 10
# Inline mode: a Map iteration writes 7 history events (9 when it fails); items x passes at most
# 2,000 keeps the execution under Step Functions' 25,000-event history limit.
INLINE_ITEM_ATTEMPTS_LIMIT = 2_000
# Inline mode carries items and ledger in the payload, which Step Functions caps at 256 KiB.
INLINE_STATE_LIMIT_BYTES = 200 * 1024
LONGEST_ERROR_NAME = "Lambda.ClientExecutionTimeoutException"
S3_MAX_ITEMS = 100_000
S3_MAX_BYTES = 64 * 1024 * 1024
# 10,000 items make 40 chunks: 40 child executions per pass instead of 10,000.
CHUNK_SIZE = 250
BACKOFF_BASE_SECONDS = 2
BACKOFF_MAX_SECONDS = 60
CAUSE_MAX_IDS = 20
CAUSE_MAX_CHARS = 1_000
ID_DISPLAY_CHARS = 64
# Error recorded for an item a chunk processor did not start because its time ran out; the
# item keeps its attempt number and runs in the next pass.
NOT_ATTEMPTED = "ItemNotAttempted"
INPUT_FIELDS = frozenset({"items", "items_s3_uri", "max_attempts", "fail_on_remaining"})
INPUTS_PREFIX = "inputs/"
RUNS_PREFIX = "runs/"
_S3_URI = re.compile(r"^s3://(?P<bucket>[^/]+)/(?P<key>.+)$")

PendingEntry = dict[str, Any]
Result = dict[str, Any]
IterationResult = str | dict[str, Any]
Journal = Mapping[int, str | None]


class InvalidItems(Exception):
    """The machine's input is unusable; the message says why (it becomes the execution's cause)."""


class LedgerMismatch(RuntimeError):
    """Pass results do not match the items the pass was given: a bug, never retried into a success."""


class ItemFailed(Exception):
    """An item's attempt failed in a processor that runs elsewhere (a team's Lambda function, invoked by
    the chunk processor): ``error_name`` is the error as the processor named it."""

    def __init__(self, error_name: str, message: str) -> None:
        super().__init__(message)
        self.error_name = error_name


def item_error(exc: Exception) -> str:
    """The error an item's failed attempt records: the processor's own error name, as Step Functions
    records a Lambda task's error in inline mode (for an exception raised in-process, its class name)."""
    return exc.error_name if isinstance(exc, ItemFailed) else type(exc).__name__


def check_processor_answer(function_error: str | None, payload: bytes) -> None:
    """Raise ``ItemFailed`` when a synchronous Invoke of the processor answered with a function error.

    Lambda sets ``FunctionError`` and answers ``{"errorType", "errorMessage", ...}`` for an exception
    the handler raised (errorType is the exception's class name) and for a timeout or a crash
    (``Sandbox.Timedout``, ``Runtime.ExitError``...):
    https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html,
    https://docs.aws.amazon.com/lambda/latest/dg/python-exceptions.html
    """
    if not function_error:
        return
    # Equivalent mutants: whatever fails to parse, or parses to anything but an object, reads as {}.
    try:
        answer = json.loads(payload or b"null")  # pragma: no mutate
    except ValueError:
        answer = None  # pragma: no mutate
    answer = answer if isinstance(answer, dict) else {}
    error_type = answer.get("errorType")
    raise ItemFailed(
        error_type if isinstance(error_type, str) and error_type else f"Lambda.{function_error}",
        str(answer.get("errorMessage", payload[:200])),
    )


@dataclass(frozen=True)
class Options:
    max_attempts: int
    fail_on_remaining: bool


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return "number"
    # The fallback names a type JSON cannot hold; every JSON value is named above: its mutants are equivalent.
    return {dict: "object", list: "array", str: "string"}.get(type(value), type(value).__name__)  # pragma: no mutate


def _display(value: Any) -> str:
    """An id as a person reads it, cut to ID_DISPLAY_CHARS."""
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= ID_DISPLAY_CHARS else text[: ID_DISPLAY_CHARS - 1] + "…"


def _literal(value: Any) -> str:
    """A value the way it appeared in the JSON input (so "3" and 3 differ), cut to ID_DISPLAY_CHARS."""
    return _display(json.dumps(value))


def parse_options(event: Any) -> Options:
    """Check the top level of the input (exactly one item source, known fields) and read the options."""
    if not isinstance(event, dict):
        raise InvalidItems(f"input must be a JSON object, got {_json_type(event)}")
    unknown = sorted(set(event) - INPUT_FIELDS)
    if unknown:
        raise InvalidItems(f"unknown input field(s) {', '.join(unknown)}; expected {', '.join(sorted(INPUT_FIELDS))}")
    if ("items" in event) == ("items_s3_uri" in event):
        raise InvalidItems("give exactly one of items (a JSON array) or items_s3_uri (s3://bucket/key.json)")
    max_attempts = event.get("max_attempts", DEFAULT_MAX_ATTEMPTS)
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or not 1 <= max_attempts <= MAX_ATTEMPTS_LIMIT:
        raise InvalidItems(
            f"max_attempts must be an integer from 1 to {MAX_ATTEMPTS_LIMIT} (passes, the first included), "
            f"got {_literal(max_attempts)}"
        )
    fail_on_remaining = event.get("fail_on_remaining", True)
    if not isinstance(fail_on_remaining, bool):
        raise InvalidItems(f"fail_on_remaining must be true or false, got {_literal(fail_on_remaining)}")
    return Options(max_attempts=max_attempts, fail_on_remaining=fail_on_remaining)


def validate_items(items: Any, *, max_items: int | None = None) -> list[dict[str, Any]]:
    """Return ``items`` if it is a non-empty array of objects with unique, non-empty string ids."""
    if not isinstance(items, list):
        raise InvalidItems(f"items must be a JSON array of objects, got {_json_type(items)}")
    if not items:
        raise InvalidItems("items is empty: give at least one item")
    if max_items is not None and len(items) > max_items:
        raise InvalidItems(f"{len(items)} items is more than the {max_items} one execution accepts")
    seen: set[str] = set()
    repeated: list[str] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise InvalidItems(f"items[{index}] must be an object with a string id, got {_json_type(item)}")
        if "id" not in item:
            raise InvalidItems(f"items[{index}] has no id")
        item_id = item["id"]
        if not isinstance(item_id, str) or not item_id:
            raise InvalidItems(f"items[{index}].id must be a non-empty string, got {_literal(item_id)}")
        if item_id in seen and item_id not in repeated:
            repeated.append(item_id)
        seen.add(item_id)
    if repeated:
        raise InvalidItems(f"ids must be unique; repeated: {summarize(repeated)}")
    return items


def inline_peak_bytes(items: Sequence[dict[str, Any]]) -> int:
    """Size of the largest inline state: every item pending and failed, as "Record Pass Results" sees it."""
    # Only the size counts: a key changed to another of the same length is an equivalent mutant.
    failures = [{"id": item["id"], "error": LONGEST_ERROR_NAME} for item in items]  # pragma: no mutate
    peak = {
        "pending": [{"item": item, "attempt": MAX_ATTEMPTS_LIMIT} for item in items],  # pragma: no mutate
        "pass_results": failures,  # pragma: no mutate
        "result": {"succeeded": [], "failed": failures, "attempts": {item["id"]: MAX_ATTEMPTS_LIMIT for item in items}},  # pragma: no mutate
    }
    return len(json.dumps(peak, ensure_ascii=False).encode())


def check_inline_budget(items: Sequence[dict[str, Any]], options: Options) -> None:
    """Inline mode runs in the parent's history and payload: bound items x passes and the state size."""
    if len(items) * options.max_attempts > INLINE_ITEM_ATTEMPTS_LIMIT:
        raise InvalidItems(
            f"{len(items)} items x max_attempts {options.max_attempts} is more than {INLINE_ITEM_ATTEMPTS_LIMIT} "
            "item attempts for an inline run; put the items in S3 and pass items_s3_uri instead"
        )
    peak = inline_peak_bytes(items)
    if peak > INLINE_STATE_LIMIT_BYTES:
        raise InvalidItems(
            f"these items would make the inline state {peak // 1024} KiB, more than {INLINE_STATE_LIMIT_BYTES // 1024} KiB "
            "(Step Functions payloads stop at 256 KiB); put the items in S3 and pass items_s3_uri instead"
        )


def items_key(items_s3_uri: Any, bucket: str) -> str:
    """The object key of ``items_s3_uri``, which must name an object under inputs/ in ``bucket``."""
    where = f"s3://{bucket}/{INPUTS_PREFIX}<name>.json"
    if not isinstance(items_s3_uri, str):
        raise InvalidItems(f"items_s3_uri must be a string like {where}, got {_json_type(items_s3_uri)}")
    match = _S3_URI.match(items_s3_uri)
    if not match:
        raise InvalidItems(f"items_s3_uri {_literal(items_s3_uri)} is not an S3 URI like {where}")
    if match["bucket"] != bucket or not match["key"].startswith(INPUTS_PREFIX) or match["key"] == INPUTS_PREFIX:
        raise InvalidItems(f"items_s3_uri {_literal(items_s3_uri)} must name an object like {where}")
    return match["key"]


def parse_items_document(body: bytes, uri: str) -> Any:
    try:
        return json.loads(body)
    except ValueError as error:
        raise InvalidItems(f"{uri} is not valid JSON: {error}") from None


def summarize(ids: Sequence[str], limit: int = CAUSE_MAX_IDS) -> str:
    shown = ", ".join(_display(i) for i in ids[:limit])
    return shown if len(ids) <= limit else f"{shown} and {len(ids) - limit} more"


def start(items: Sequence[dict[str, Any]]) -> tuple[Result, list[PendingEntry]]:
    """The ledger before the first pass, and the first pass: every item, attempt 1."""
    result = {"succeeded": [], "failed": [], "attempts": {item["id"]: 0 for item in items}, "passes": 0}
    return result, [{"item": item, "attempt": 1} for item in items]


def outcomes_from_iterations(results: Iterable[IterationResult]) -> dict[str, str | None]:
    """``{id: None}`` for an iteration that succeeded, ``{id: error}`` for one that failed."""
    outcomes: dict[str, str | None] = {}
    for result in results:
        item_id, error = (result, None) if isinstance(result, str) else (result["id"], result["error"])
        if item_id in outcomes:
            raise LedgerMismatch(f"item {_display(item_id)} has more than one result in this pass")
        outcomes[item_id] = error
    return outcomes


def record_pass(
    result: Result, pending: Sequence[PendingEntry], outcomes: Mapping[str, str | None]
) -> tuple[Result, list[PendingEntry]]:
    """Apply one pass's outcomes; return the new ledger and the entries the next pass would run.

    An id missing from ``outcomes`` was not attempted (a chunk ran out of time, or died on an item
    before it): it keeps its attempt number. A failed item's next attempt is one more than this one.
    Items not attempted come first in the next pass, so an item that kills its chunk every time runs
    after them and cannot keep them from running.
    """
    pending_ids = [entry["item"]["id"] for entry in pending]
    unexpected = set(outcomes) - set(pending_ids)
    if unexpected:
        raise LedgerMismatch(f"results for items this pass did not run: {summarize(sorted(unexpected))}")
    rerun = set(pending_ids) & set(result["succeeded"])
    if rerun:
        raise LedgerMismatch(f"items that already succeeded were pending again: {summarize(sorted(rerun))}")

    succeeded = list(result["succeeded"])
    attempts = dict(result["attempts"])
    failed: list[dict[str, str]] = []
    not_attempted: list[PendingEntry] = []
    retried: list[PendingEntry] = []
    for entry in pending:
        item_id = entry["item"]["id"]
        if item_id not in outcomes:
            failed.append({"id": item_id, "error": NOT_ATTEMPTED})
            not_attempted.append(entry)
            continue
        attempts[item_id] = entry["attempt"]
        error = outcomes[item_id]
        if error is None:
            succeeded.append(item_id)
        else:
            failed.append({"id": item_id, "error": error})
            retried.append({"item": entry["item"], "attempt": entry["attempt"] + 1})
    new_result = {"succeeded": succeeded, "failed": failed, "attempts": attempts, "passes": result["passes"] + 1}
    return new_result, not_attempted + retried


def should_retry(options: Options, result: Result) -> bool:
    return bool(result["failed"]) and result["passes"] < options.max_attempts


def backoff_seconds(passes: int) -> int:
    """Wait before pass ``passes + 1``: 2, 4, 8 ... seconds, at most a minute."""
    return min(BACKOFF_BASE_SECONDS * 2 ** max(passes - 1, 0), BACKOFF_MAX_SECONDS)


def retry_failed_cause(result: Result, full_result_uri: str | None = None) -> str:
    """The ``RetryFailed`` cause: how many failed, then ids with their errors, cut to a readable size."""
    failed, passes = result["failed"], result["passes"]
    head = f"{len(failed)} of {len(result['attempts'])} items still failed after {passes} pass{'es' if passes != 1 else ''}: "
    tail = f"; full result in {full_result_uri}" if full_result_uri else ""
    shown: list[str] = []
    length = len(head) + len(tail)
    for failure in failed[:CAUSE_MAX_IDS]:
        part = f"{_display(failure['id'])} ({failure['error']})"
        added = len(part) + (2 if shown else 0)  # and the ", " before it, unless it is the first
        if shown and length + added > CAUSE_MAX_CHARS:
            break
        shown.append(part)
        length += added
    more = f" and {len(failed) - len(shown)} more" if len(failed) > len(shown) else ""
    return head + ", ".join(shown) + more + tail


def loop_facts(options: Options, result: Result, full_result_uri: str | None = None) -> dict[str, Any]:
    """What the machine's "Retry Failed Items?" Choice and its Wait/Fail states read."""
    return {
        "max_attempts": options.max_attempts,
        "fail_on_remaining": options.fail_on_remaining,
        "remaining_count": len(result["failed"]),
        "retry": should_retry(options, result),
        "wait_seconds": backoff_seconds(result["passes"]),
        "failure_cause": retry_failed_cause(result, full_result_uri) if result["failed"] else "",
    }


def pass_metrics(facts: Mapping[str, Any]) -> dict[str, int]:
    """A recorded pass's business metrics: the items still failed run again, or are given up on."""
    remaining = facts["remaining_count"]
    if not remaining:
        return {}
    return {"MapItemsRetried": remaining} if facts["retry"] else {"MapItemsGivenUp": remaining}


# ---- inline mode: the whole ledger travels in the execution payload ----------------------------


def start_inline(event: Any) -> dict[str, Any]:
    """"Validate Items": check the input and build the state the inline pass loop carries."""
    options = parse_options(event)
    items = validate_items(event["items"])
    check_inline_budget(items, options)
    result, pending = start(items)
    return {**loop_facts(options, result), "pending": pending, "result": result}


def record_inline_pass(state: Mapping[str, Any]) -> dict[str, Any]:
    """"Record Pass Results": fold the Map's iteration results into the ledger."""
    options = Options(state["max_attempts"], state["fail_on_remaining"])
    pending = state["pending"]
    outcomes = outcomes_from_iterations(state["pass_results"])
    missing = {entry["item"]["id"] for entry in pending} - set(outcomes)
    if missing:  # an inline Map returns one result per item, so nothing can be "not attempted" here
        raise LedgerMismatch(f"no result for pending items: {summarize(sorted(missing))}")
    result, next_pending = record_pass(state["result"], pending, outcomes)
    return {**loop_facts(options, result), "pending": next_pending, "result": result}


# ---- S3 mode: chunks, manifests and the ledger live under runs/<execution>/ --------------------


@dataclass(frozen=True)
class RunPaths:
    """Object keys of one execution's run in the items bucket."""

    prefix: str

    @classmethod
    def for_execution(cls, execution_name: str) -> "RunPaths":
        return cls(f"{RUNS_PREFIX}{execution_name}/")

    @property
    def result_key(self) -> str:
        return f"{self.prefix}result.json"

    def manifest_key(self, pass_number: int) -> str:
        return f"{self.prefix}pass-{pass_number:02d}/manifest.json"

    def chunk_key(self, pass_number: int, chunk: int) -> str:
        return f"{self.prefix}pass-{pass_number:02d}/chunk-{chunk:05d}.json"

    def results_key(self, pass_number: int, chunk: int) -> str:
        return f"{self.prefix}pass-{pass_number:02d}/results-{chunk:05d}.json"


def plan_pass(
    paths: RunPaths, pass_number: int, pending: Sequence[PendingEntry], chunk_size: int = CHUNK_SIZE
) -> tuple[list[dict[str, Any]], dict[str, list[PendingEntry]]]:
    """Split a pass's entries into chunks: the manifest (one entry per child execution) and the
    chunk objects by key."""
    manifest: list[dict[str, Any]] = []
    chunks: dict[str, list[PendingEntry]] = {}
    for chunk, start_at in enumerate(range(0, len(pending), chunk_size)):
        key = paths.chunk_key(pass_number, chunk)
        chunks[key] = list(pending[start_at : start_at + chunk_size])
        manifest.append({"chunk": chunk, "chunk_key": key, "results_key": paths.results_key(pass_number, chunk)})
    return manifest, chunks


def process_chunk(
    entries: Sequence[PendingEntry],
    process: Callable[[dict[str, Any], int], Any],
    remaining_ms: Callable[[], int],
    reserve_ms: int,
    journal: Journal,
    record: Callable[[int, str | None], str | None],
) -> list[IterationResult]:
    """Run each entry like one inline iteration: an exception becomes ``{"id", "error"}``.

    Each outcome goes to ``record(position, error)`` as soon as the entry finishes, before the next
    one starts, and the chunk goes on with what ``record`` says was recorded (an earlier writer's
    outcome wins). An entry already in ``journal`` (an earlier invocation of this chunk finished
    it) is not run again. Before each entry it checks the time left (``remaining_ms``, the
    invocation's clock): it starts the entry only if ``reserve_ms`` plus the longest entry so far
    still fit, so the results object can still be written. Entries not started are left out of
    the results and run next pass.
    """
    results: list[IterationResult] = []
    longest_ms = 0
    out_of_time = False  # pragma: no mutate (equivalent: None is as false)
    for position, entry in enumerate(entries):
        item_id = entry["item"]["id"]
        if position in journal:
            error = journal[position]
        elif out_of_time:
            continue
        else:
            before_ms = remaining_ms()
            if before_ms < reserve_ms + longest_ms:
                # Equivalent mutants: unset, the flag only makes the next entries read the clock again,
                # which has not gone back.
                out_of_time = True  # pragma: no mutate
                continue
            try:
                process(entry["item"], entry["attempt"])
            except Exception as exc:  # noqa: BLE001 - every item error is that item's failed result
                error = item_error(exc)
            else:
                error = None
            longest_ms = max(longest_ms, before_ms - remaining_ms())
            error = record(position, error)
        results.append(item_id if error is None else {"id": item_id, "error": error})
    return results


def split_map_results(
    manifest: Sequence[Mapping[str, Any]], map_results: Sequence[int | Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], dict[int, str]]:
    """The manifest entries whose child iteration finished (their results object is written), and
    the error of each chunk whose iteration failed (its Lambda timed out or crashed)."""
    chunk_errors = {r["chunk"]: r["error"] for r in map_results if isinstance(r, Mapping)}
    finished = [r for r in map_results if not isinstance(r, Mapping)]
    expected = sorted(entry["chunk"] for entry in manifest)
    if sorted([*finished, *chunk_errors]) != expected:
        raise LedgerMismatch(f"the Map returned results for chunks {sorted([*finished, *chunk_errors])}, expected {expected}")
    return [entry for entry in manifest if entry["chunk"] not in chunk_errors], chunk_errors


def outcomes_from_journal(entries: Sequence[PendingEntry], journal: Journal, chunk_error: str) -> dict[str, str | None]:
    """Outcomes of a chunk whose invocation died: every outcome it recorded stands. A chunk runs its
    entries in order and records each before starting the next, so the first entry not recorded is
    the one it died on (it fails with the chunk's error); the others not recorded never started and
    are left out (not attempted)."""
    outcomes: dict[str, str | None] = {}
    blamed = False  # pragma: no mutate (equivalent: None is as false)
    for position, entry in enumerate(entries):
        if position in journal:
            outcomes[entry["item"]["id"]] = journal[position]
        elif not blamed:
            outcomes[entry["item"]["id"]] = chunk_error
            blamed = True
    return outcomes


def outcomes_from_chunks(
    manifest: Sequence[Mapping[str, Any]],
    chunk_errors: Mapping[int, str],
    chunks: Mapping[str, Sequence[PendingEntry]],
    chunk_results: Mapping[str, Sequence[IterationResult]],
    journals: Mapping[str, Journal],
) -> dict[str, str | None]:
    """Outcomes of a chunked pass: a finished chunk's results object has them; a failed chunk's
    come from its journal (``journals`` by chunk key)."""
    outcomes: dict[str, str | None] = {}
    for entry in manifest:
        key = entry["chunk_key"]
        if entry["chunk"] in chunk_errors:
            outcomes.update(outcomes_from_journal(chunks[key], journals[key], chunk_errors[entry["chunk"]]))
        else:
            outcomes.update(outcomes_from_iterations(chunk_results[entry["results_key"]]))
    return outcomes


def outcomes_recorded(
    manifest: Sequence[Mapping[str, Any]], chunks: Mapping[str, Sequence[PendingEntry]], journals: Mapping[str, Journal]
) -> dict[str, str | None]:
    """Outcomes of a pass whose Map state failed as a whole: only what the chunk journals recorded.
    No chunk's error names an item, so every item not recorded is left out (not attempted)."""
    outcomes: dict[str, str | None] = {}
    for entry in manifest:
        entries = chunks[entry["chunk_key"]]
        for position, error in journals[entry["chunk_key"]].items():
            outcomes[entries[position]["item"]["id"]] = error
    return outcomes


def s3_summary(result: Result, full_result_uri: str) -> dict[str, Any]:
    """The S3-mode execution output: counts and where the full result is."""
    return {
        "succeeded_count": len(result["succeeded"]),
        "failed_count": len(result["failed"]),
        "passes": result["passes"],
        "result_s3_uri": full_result_uri,
    }


def s3_state(options: Options, bucket: str, paths: RunPaths, result: Result) -> dict[str, Any]:
    """The state the chunked pass loop carries: small whatever the number of items."""
    full_result_uri = f"s3://{bucket}/{paths.result_key}"
    return {
        **loop_facts(options, result, full_result_uri),
        "run_prefix": paths.prefix,
        "manifest": {"Bucket": bucket, "Key": paths.manifest_key(result["passes"] + 1)},
        "result": s3_summary(result, full_result_uri),
    }

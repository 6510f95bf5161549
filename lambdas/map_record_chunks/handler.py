"""Record Chunk Results: folds a chunked pass's results into the run's ledger in S3 and writes the
next pass's chunks when one is due. The outcomes of a chunk whose invocation failed come from its
chunk journal, whatever it wrote before; so do those of every chunk when the Map state itself
failed (``map_error``). Safe to retry: a pass already recorded is not applied twice."""

from __future__ import annotations

import os
from typing import Any

import boto3
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.map_retry import (
    LedgerMismatch,
    Options,
    Result,
    RunPaths,
    outcomes_from_chunks,
    outcomes_recorded,
    pass_metrics,
    record_pass,
    s3_state,
    should_retry,
    split_map_results,
)
from patterns_common.map_retry_journal import ChunkJournal
from patterns_common.map_retry_store import RunStore
from patterns_common.observability import logger, metrics, tracer

store = RunStore(boto3.client("s3"), os.environ["ITEMS_BUCKET_NAME"])
journal = ChunkJournal(boto3.client("dynamodb"), os.environ["CHUNK_JOURNAL_TABLE_NAME"])


def record(paths: RunPaths, options: Options, result: Result, map_results: list[Any] | None, map_error: str | None) -> Result:
    pass_number = result["passes"] + 1
    manifest = store.read_json(paths.manifest_key(pass_number))
    chunks = store.read_many(entry["chunk_key"] for entry in manifest)
    if map_error is not None:
        # The Map state itself failed (its manifest unreadable...): what the chunk journals hold
        # stands, and every item they do not hold was not attempted.
        journals = journal.read_many(entry["chunk_key"] for entry in manifest)
        outcomes = outcomes_recorded(manifest, chunks, journals)
        logger.warning("The pass's Map failed; recorded outcomes kept", extra={"error": map_error, "recorded": len(outcomes)})
    else:
        finished, chunk_errors = split_map_results(manifest, map_results)
        chunk_results = store.read_many(entry["results_key"] for entry in finished)
        journals = journal.read_many(entry["chunk_key"] for entry in manifest if entry["chunk"] in chunk_errors)
        outcomes = outcomes_from_chunks(manifest, chunk_errors, chunks, chunk_results, journals)
    pending = [pending for entry in manifest for pending in chunks[entry["chunk_key"]]]
    result, next_pending = record_pass(result, pending, outcomes)
    if should_retry(options, result):
        store.write_pass(paths, pass_number + 1, next_pending)
    store.write_json(paths.result_key, result)  # last: marks the pass as recorded
    return result


@metrics.log_metrics
@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    options = Options(event["max_attempts"], event["fail_on_remaining"])
    paths = RunPaths(event["run_prefix"])
    result = store.read_json(paths.result_key)
    recorded, expected = result["passes"], event["result"]["passes"]
    if recorded == expected:
        result = record(paths, options, result, event["pass_results"], event.get("map_error"))
    elif recorded == expected + 1:
        logger.info("Pass already recorded by an earlier invocation", extra={"passes": recorded})
    else:
        raise LedgerMismatch(f"{paths.result_key} has {recorded} passes; the machine expected {expected}")
    state = s3_state(options, store.bucket, paths, result)
    if recorded == expected:  # a pass recorded by an earlier invocation was counted by it
        for name, count in pass_metrics(state).items():
            metrics.add_metric(name=name, unit=MetricUnit.Count, value=count)
    logger.info("Recorded pass", extra={"passes": result["passes"], "still_failing": state["remaining_count"]})
    return state

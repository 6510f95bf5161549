"""Process Item Chunk: one Distributed Map child runs a chunk's items, records each outcome in the
chunk journal as it finishes, and writes the chunk's results to S3."""

from __future__ import annotations

import os
from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.items_demo import process_item
from patterns_common.map_retry import process_chunk
from patterns_common.map_retry_journal import ChunkJournal
from patterns_common.map_retry_store import RunStore
from patterns_common.observability import logger, tracer

# Time kept back, beyond the longest item so far, for writing the results before the function's
# timeout: a chunk that ends in time costs its pass nothing, one that is killed costs the item it
# was running an attempt. Items left over run next pass.
TIME_RESERVE_MS = 30_000

store = RunStore(boto3.client("s3"), os.environ["ITEMS_BUCKET_NAME"])
journal = ChunkJournal(boto3.client("dynamodb"), os.environ["CHUNK_JOURNAL_TABLE_NAME"])


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    logger.append_keys(chunk_key=event["chunk_key"])
    if store.exists(event["results_key"]):
        # A retried invocation (e.g. after Lambda.ServiceException) whose first run finished.
        logger.info("Chunk already processed; its items are not run again")
        return {"chunk": event["chunk"], "reused": True}
    chunk_key = event["chunk_key"]
    entries = store.read_json(chunk_key)
    recorded = journal.read(chunk_key)  # outcomes of an earlier invocation of this chunk that died
    results = process_chunk(
        entries,
        process_item,
        context.get_remaining_time_in_millis,
        TIME_RESERVE_MS,
        recorded,
        lambda position, error: journal.record(chunk_key, position, error),
    )
    store.write_json(event["results_key"], results)
    failed = sum(isinstance(result, dict) for result in results)
    logger.info(
        "Processed chunk",
        extra={"items": len(entries), "run": len(results) - len(recorded), "failed": failed, "recorded_before": len(recorded)},
    )
    return {"chunk": event["chunk"], "run": len(results), "failed": failed}

"""Process Item Chunk: one Distributed Map child runs a chunk's items, records each outcome in the
chunk journal as it finishes, and writes the chunk's results to S3.

Items run through the demo processor in this process, or, when the construct was given a team's
``item_processor`` (``ITEM_PROCESSOR_FUNCTION_NAME``), through one synchronous Invoke of that
function per item attempt, with the payload inline mode gives it.
"""

from __future__ import annotations

import json
import os
from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.config import Config
from botocore.exceptions import ClientError

from patterns_common.items_demo import process_item
from patterns_common.map_retry import ItemFailed, check_processor_answer, process_chunk
from patterns_common.map_retry_journal import ChunkJournal
from patterns_common.map_retry_store import RunStore
from patterns_common.observability import logger, tracer

# Time kept back, beyond the longest item so far, for writing the results before the function's
# timeout: a chunk that ends in time costs its pass nothing, one that is killed costs the item it
# was running an attempt. Items left over run next pass.
TIME_RESERVE_MS = 30_000

store = RunStore(boto3.client("s3"), os.environ["ITEMS_BUCKET_NAME"])
journal = ChunkJournal(boto3.client("dynamodb"), os.environ["CHUNK_JOURNAL_TABLE_NAME"])
ITEM_PROCESSOR_FUNCTION_NAME = os.environ.get("ITEM_PROCESSOR_FUNCTION_NAME")
# The read timeout outlasts the longest processor the construct accepts (under the inline task's
# TimeoutSeconds); throttling and transient errors are retried by botocore's standard mode, as the
# inline task's Retry does for Lambda's service errors.
lambda_client = boto3.client("lambda", config=Config(read_timeout=90, retries={"mode": "standard"}))


def invoke_processor(item: dict[str, Any], attempt: int) -> None:
    """One attempt of the team's processor: returns when it returned, raises ``ItemFailed`` named
    after its error (a service error after retries as ``Lambda.<code>``, as Step Functions names it)."""
    try:
        response = lambda_client.invoke(
            FunctionName=ITEM_PROCESSOR_FUNCTION_NAME, Payload=json.dumps({"item": item, "attempt": attempt}).encode()
        )
    except ClientError as error:
        raise ItemFailed(f"Lambda.{error.response['Error']['Code']}", str(error)) from error
    check_processor_answer(response.get("FunctionError"), response["Payload"].read())


def run_item(item: dict[str, Any], attempt: int) -> None:
    """One attempt: through the team's processor when the construct was given one, else the demo's here."""
    if ITEM_PROCESSOR_FUNCTION_NAME:
        invoke_processor(item, attempt)
    else:
        process_item(item, attempt)


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
        run_item,
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

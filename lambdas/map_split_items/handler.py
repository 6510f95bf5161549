"""Split Items Into Chunks: validates the S3 items document and writes pass 1's chunks and manifest."""

from __future__ import annotations

import os
from typing import Any

import boto3
from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.map_retry import (
    S3_MAX_BYTES,
    S3_MAX_ITEMS,
    RunPaths,
    items_key,
    parse_options,
    s3_state,
    start,
    validate_items,
)
from patterns_common.map_retry_store import RunStore
from patterns_common.observability import logger, tracer

store = RunStore(boto3.client("s3"), os.environ["ITEMS_BUCKET_NAME"])


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    machine_input = event["input"]
    options = parse_options(machine_input)
    key = items_key(machine_input["items_s3_uri"], store.bucket)
    items = validate_items(store.read_items(key, S3_MAX_BYTES), max_items=S3_MAX_ITEMS)
    paths = RunPaths.for_execution(event["execution_name"])
    result, pending = start(items)
    manifest = store.write_pass(paths, 1, pending)
    store.write_json(paths.result_key, result)
    logger.info("Split items into chunks", extra={"items": len(items), "chunks": len(manifest), "run": paths.prefix})
    return s3_state(options, store.bucket, paths, result)

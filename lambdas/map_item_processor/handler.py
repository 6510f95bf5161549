"""Process Item: runs one item's attempt with the demo processor (the machine's inline iteration)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.items_demo import process_item
from patterns_common.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    logger.append_keys(item_id=event["item"]["id"], attempt=event["attempt"])
    return process_item(event["item"], event["attempt"])

"""Validate Items: checks an inline `items` input and builds the state of the pass loop."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.map_retry import start_inline
from patterns_common.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return start_inline(event)

"""Validate Job Input: fills the defaults in and rejects bad input with InvalidJobInput."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from job_validate_input_logic import normalize_job_input

from patterns_common.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: Any, context: LambdaContext) -> dict[str, Any]:
    return normalize_job_input(event)

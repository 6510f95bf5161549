"""Validate Job Input: fills the defaults in and rejects bad input with InvalidJobInput.

Event: ``{"input": <the execution input>, "polls": true|false}``; a machine that polls (the S3
poller) also has its settings checked against the history limit.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext
from job_validate_input_logic import check_history_budget, normalize_job_input

from patterns_common.observability import logger, tracer


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = normalize_job_input(event["input"])
    return check_history_budget(settings) if event["polls"] else settings

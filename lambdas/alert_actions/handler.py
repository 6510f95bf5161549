"""Alert actions endpoint (function URL): refuses every request until acting on alerts is built."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.observability import logger

PAGE = (
    "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Link not valid</title></head>"
    "<body><h1>This link cannot be used</h1><p>Alerts cannot be acted on from here yet.</p></body></html>"
)


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return {
        "statusCode": 404,
        "headers": {"Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store"},
        "body": PAGE,
    }

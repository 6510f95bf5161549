"""Notify Next User: posts one alert notification to Slack, at most once per (execution, round, user).

A retried attempt (the state machine's Retry, or a Lambda retry after a timeout) finds the first
attempt's idempotency record and returns its result instead of posting again.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
)
from aws_lambda_powertools.utilities.typing import LambdaContext
from slack_webhook import Notification, post_message

from patterns_common.observability import logger, tracer

SECRET_MAX_AGE_SECONDS = 300  # a rotated webhook URL is picked up within five minutes

persistence = DynamoDBPersistenceLayer(table_name=os.environ["IDEMPOTENCY_TABLE_NAME"])
idempotency = IdempotencyConfig(
    event_key_jmespath="[execution_id, round, user]",
    raise_on_no_idempotency_key=True,
    # Retries of one notification happen within minutes; the key also names the execution.
    expires_after_seconds=3600,
)


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@idempotent(config=idempotency, persistence_store=persistence)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    notification = Notification.from_event(event)
    webhook_url = parameters.get_secret(os.environ["SLACK_WEBHOOK_SECRET_NAME"], max_age=SECRET_MAX_AGE_SECONDS)
    status = post_message(webhook_url, notification.text())
    logger.info("Notified", extra={"alert_id": notification.alert_id, "round": notification.round, "user": notification.user})
    return {"user": notification.user, "round": notification.round, "status": status}

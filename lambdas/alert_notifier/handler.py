"""Notify User: posts one alert notification to Slack, at most once per (execution, round, user).

The event is {execution_id, alert_id, message, round, user, links, post_at, attempt}: the alert, the
user to notify and their signed action links, when the round's pace lets this post go, and which
attempt of the machine's this is.

A retried attempt (the state machine's Retry, or a Lambda retry after a timeout) finds the first
attempt's idempotency record and returns its result instead of posting again.
"""

from __future__ import annotations

import os
import time
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
)
from aws_lambda_powertools.utilities.typing import LambdaContext
from slack_webhook import Notification, SlackRejectedError, SlackTransientError, gives_up, pacing_wait, post_message

from patterns_common.observability import logger, metrics, tracer

SECRET_MAX_AGE_SECONDS = 300  # a rotated webhook URL is picked up within five minutes

persistence = DynamoDBPersistenceLayer(table_name=os.environ["IDEMPOTENCY_TABLE_NAME"])
idempotency = IdempotencyConfig(
    event_key_jmespath="[execution_id, round, user]",
    raise_on_no_idempotency_key=True,
    # Retries of one notification happen within minutes; the key also names the execution.
    expires_after_seconds=3600,
)


def count_for_alert(metric: str, alert_id: str) -> None:
    # The alert id is a property of the metric's log line, not a dimension: a dimension value is a
    # separately billed custom metric, and alert ids are unbounded. Logs Insights still finds it.
    metrics.add_metadata(key="alert_id", value=alert_id)
    metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)


# Metrics outermost: they are flushed however the handler ends. The idempotent body runs once per
# (execution, round, user), so a replayed notification is not counted twice.
@metrics.log_metrics
@logger.inject_lambda_context
# The response names the person notified: never record it in a trace. Errors carry Slack's answer.
@tracer.capture_lambda_handler(capture_response=False)
@idempotent(config=idempotency, persistence_store=persistence)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    notification = Notification.from_event(event)
    webhook_url = parameters.get_secret(os.environ["SLACK_WEBHOOK_SECRET_NAME"], max_age=SECRET_MAX_AGE_SECONDS)
    time.sleep(pacing_wait(event.get("post_at"), time.time()))
    try:
        status = post_message(webhook_url, notification.payload())
    except (SlackTransientError, SlackRejectedError) as error:
        if gives_up(error, event.get("attempt", 1)):
            count_for_alert("NotificationsFailed", notification.alert_id)
        raise
    count_for_alert("NotificationsSent", notification.alert_id)
    # Not who: logs hold no one's account (the item records who acted, the channel who was notified).
    logger.info("Notified", extra={"alert_id": notification.alert_id, "round": notification.round})
    return {"user": notification.user, "round": notification.round, "status": status}

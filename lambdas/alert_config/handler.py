"""Fetch Alert Config: reads the alert item (strongly consistent) and returns its validated loop config."""

from __future__ import annotations

import os
from typing import Any

import boto3
from alert_config_logic import AlertNotFound, parse_alert_config, read_alert_id
from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.observability import logger, tracer

table = boto3.resource("dynamodb").Table(os.environ["ALERT_TABLE_NAME"])


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    alert_id = read_alert_id(event)
    item = table.get_item(Key={"alert_id": alert_id}, ConsistentRead=True).get("Item")
    if item is None:
        raise AlertNotFound(f"alert_id: the alert table has no item {alert_id!r}")
    config = parse_alert_config(item)
    logger.info("Alert config", extra={"alert_id": alert_id, "users": config.user_count, "rounds": config.rounds})
    return config.to_state()

"""Fetch Alert Config: reads the alert item (strongly consistent), claims the alert for this execution,
and returns its validated loop config with each user's signed action links.

The claim is a conditional write on the item, so two executions started at once cannot both win;
a claim left by an execution that has ended (released, failed, stopped, timed out) is taken over.
"""

from __future__ import annotations

import os
import time
from typing import Any

import boto3
from alert_config_logic import (
    AlertAlreadyRunning,
    AlertNotFound,
    claim_to_check,
    fetched_config,
    read_input,
    status_of,
)
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import ClientError

from patterns_common.alert_executions import CLAIM_ATTRIBUTE, CLAIM_EXPIRY_ATTRIBUTE, claim_expiry
from patterns_common.observability import logger, tracer

SECRET_MAX_AGE_SECONDS = 300  # a rotated signing key is picked up within five minutes
# Races lost in a row before giving up; each loss means another execution claimed the alert, which
# the next look then finds running.
CLAIM_LOOKS = 3

table = boto3.resource("dynamodb").Table(os.environ["ALERT_TABLE_NAME"])
stepfunctions = boto3.client("stepfunctions")


@logger.inject_lambda_context
# The response holds every user's account and signed links: never record it in a trace. Its errors
# name fields and positions, never an account (alert_config_logic), so they are recorded.
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    execution = read_input(event["input"])
    me = event["execution_arn"]  # the task sends the input, this execution's ARN and the action endpoint's URL
    now = time.time()
    item = read_item(execution.alert_id)
    key = parameters.get_secret(os.environ["ACTION_LINK_KEY_SECRET_ARN"], max_age=SECRET_MAX_AGE_SECONDS).encode()
    config = fetched_config(
        item, start_delay_seconds=execution.start_delay_seconds, key=key, actions_url=event["actions_url"], now=now
    )
    item = claim(item, me=me, now=now)
    logger.info(
        "Alert config",
        extra={"alert_id": execution.alert_id, "users": len(config.users), "rounds": config.rounds, "execution": me},
    )
    return {
        **config.to_state(),
        "status": status_of(item),
        # Who acted, for an alert already stopped before its first round (the output names them).
        **{field: value if isinstance(value := item.get(field), str) else None for field in ("acknowledged_by", "resolved_by")},
    }


def read_item(alert_id: str) -> dict[str, Any]:
    item = table.get_item(Key={"alert_id": alert_id}, ConsistentRead=True).get("Item")
    if item is None:
        raise AlertNotFound(f"alert_id: the alert table has no item {alert_id!r}")
    return item


def claim(item: dict[str, Any], *, me: str, now: float) -> dict[str, Any]:
    """Write ``me`` as the alert's escalation, unless a running execution holds it; the item as claimed."""
    for _ in range(CLAIM_LOOKS):
        holder = claim_to_check(item, me=me, now=now)
        if holder is not None and is_running(holder):
            raise AlertAlreadyRunning(holder)
        previous = item.get(CLAIM_ATTRIBUTE)
        try:
            table.update_item(
                Key={"alert_id": item["alert_id"]},
                UpdateExpression="SET #claim = :me, #expires = :expires",
                # Only over what was read: a claim written since then wins, and is looked at again.
                ConditionExpression=(
                    "attribute_exists(alert_id) AND "
                    + ("attribute_not_exists(#claim)" if previous is None else "#claim = :previous")
                ),
                ExpressionAttributeNames={"#claim": CLAIM_ATTRIBUTE, "#expires": CLAIM_EXPIRY_ATTRIBUTE},
                ExpressionAttributeValues={
                    ":me": me,
                    ":expires": claim_expiry(now),
                    **({} if previous is None else {":previous": previous}),
                },
            )
            return item
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
        raised_at = item.get("raised_at")
        item = read_item(item["alert_id"])
        if item.get("raised_at") != raised_at:
            # Raised again meanwhile: the alarm handed the claim to the new occurrence's execution
            # (which may not have started yet), and this one's links are of the earlier occurrence.
            raise AlertAlreadyRunning(item.get(CLAIM_ATTRIBUTE))
    raise AlertAlreadyRunning(item.get(CLAIM_ATTRIBUTE))


def is_running(execution_arn: str) -> bool:
    """Whether the claim's execution still runs. One that does not exist (any more) does not."""
    try:
        return stepfunctions.describe_execution(executionArn=execution_arn)["status"] == "RUNNING"
    except ClientError as error:
        if error.response["Error"]["Code"] in ("ExecutionDoesNotExist", "InvalidArn"):
            return False
        raise

"""Declared On-Call Schedules: the custom resource that writes ``AlertNotification(schedules=[...])`` into the on-call table.

CloudFormation sends Create, Update and Delete (docs/on-call-schedules.md); every request is answered
on its ResponseURL, FAILED with the reason when a write fails, so a deployment never waits out the
custom resource's timeout. Each put reads the item first and keeps its runtime covers
(alert_oncall_declared_logic.merge); it is written only if no cover changed meanwhile, else merged again. With handoff notices (a Slack webhook), Handoff Notice is then asked to
arm the next handoff's notice.
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

import boto3
from alert_oncall_declared_logic import Put, merge, plan, response, unchanged_since
from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.observability import logger

table = boto3.resource("dynamodb").Table(os.environ["ON_CALL_TABLE_NAME"])
lambda_client = boto3.client("lambda")
RESPONSE_TIMEOUT_SECONDS = 10
# A cover written between a put's read and its write makes it merge again; more than a few in a row is
# no race but a fault, for CloudFormation to report.
PUT_ATTEMPTS = 5


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> None:
    physical_id = event.get("PhysicalResourceId") or f"{os.environ['ON_CALL_TABLE_NAME']}/declared-schedules"
    reason = None
    try:
        writes = plan(event)
        for put in writes.puts:
            write_keeping_runtime_covers(put)
        for schedule_id in writes.deletes:
            table.delete_item(Key={"schedule_id": schedule_id})
        if os.environ.get("HANDOFF_FUNCTION_NAME") and event["RequestType"] != "Delete":
            # Handoff Notice arms the notice of the next handoff, now that the schedules are in.
            lambda_client.invoke(FunctionName=os.environ["HANDOFF_FUNCTION_NAME"], InvocationType="Event", Payload=b"{}")
        logger.info("Declared schedules written", extra={"request": event["RequestType"],
                    "put": [put.item["schedule_id"] for put in writes.puts], "deleted": writes.deletes})
    except Exception as error:  # noqa: BLE001 - any failure is CloudFormation's to report, not a retry's
        logger.exception("Declared schedules not written")
        reason = f"{type(error).__name__}: {error}"
    body = json.dumps(response(event, physical_id, reason)).encode()
    # The ResponseURL is a presigned S3 PUT: no content type, or the signature does not match.
    request = urllib.request.Request(event["ResponseURL"], data=body, method="PUT", headers={"Content-Type": ""})
    with urllib.request.urlopen(request, timeout=RESPONSE_TIMEOUT_SECONDS):  # noqa: S310 - CloudFormation's URL
        pass


def write_keeping_runtime_covers(put: Put) -> None:
    schedule_id = put.item["schedule_id"]
    for _ in range(PUT_ATTEMPTS):
        current = table.get_item(Key={"schedule_id": schedule_id}, ConsistentRead=True).get("Item")
        merged = merge(put, current)
        try:
            table.put_item(Item=merged.item, **unchanged_since(current))
        except table.meta.client.exceptions.ConditionalCheckFailedException:
            continue
        for dropped in merged.dropped:
            logger.warning("Runtime cover dropped: the declaration wins", extra={
                "schedule_id": schedule_id, "cover": dropped.cover, "reason": dropped.reason})
        if merged.kept:
            logger.info("Runtime covers kept", extra={"schedule_id": schedule_id, "covers": merged.kept})
        return
    raise RuntimeError(f"schedule {schedule_id!r}: its covers kept changing while it was written ({PUT_ATTEMPTS} attempts)")

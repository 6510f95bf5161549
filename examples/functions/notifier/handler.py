"""The team's notifier: instead of Slack, each notification becomes one message on the team's queue,
which its own paging tool reads. It gets one notification and raises to report a failure."""

from __future__ import annotations

import json
import os
from typing import Any

import boto3

sqs = boto3.client("sqs")
QUEUE_URL = os.environ["NOTIFICATION_QUEUE_URL"]
# The paging tool knows no one at this domain: the notification fails, the alert goes on.
UNREACHABLE_DOMAIN = "@unreachable.example.com"


class RecipientUnreachable(Exception):
    """The paging tool has no way to reach this user."""


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event["user"].endswith(UNREACHABLE_DOMAIN):
        raise RecipientUnreachable(f"no pager for {event['user']}")
    sqs.send_message(QueueUrl=QUEUE_URL, MessageBody=json.dumps(event))
    return {"user": event["user"], "round": event["round"], "status": "queued"}

"""Alert Follow-up: what the channel is told, after whoever asked has been answered.

The action endpoint answers a click (Slack wants an answer within 3 s) right after its one
conditional write, and hands this function, invoked asynchronously, the rest:
{"text": the follow-up, "response_url": the click's (or null), "replacement": the clicked message as it
now reads (or null)}. Contact and the notifier hand it what the channel must hear of a person not
reached, the replies function who acted by text: {"text"} alone. The replacement goes to the
``response_url`` (https://api.slack.com/interactivity/handling#message_responses), first; the text to
the incoming webhook, in its turn on the webhook's shared pace (slack_post.post_followup_in_turn).

A text not posted (its turn came after this function's time, in a storm's queue, or Slack refused it)
fails the invocation: Lambda invokes it again a minute and then two minutes later, and after that the
event lands on the follow-up failure queue, whose alarm tells the status topic (FollowUpNotPosted).
A text about a person nobody reached must not be dropped for a busy channel; the price is that a post
Slack took but never answered may show twice. A replacement that failed is logged and not retried:
the clicked message is a courtesy, and the change it reports is saved already.
"""

from __future__ import annotations

import os
import time
from typing import Any

import boto3
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.observability import logger, tracer
from patterns_common.slack_post import FOLLOWUP_TIMEOUT_SECONDS, post_followup_in_turn, post_json

SECRET_MAX_AGE_SECONDS = 300  # a rotated webhook URL is picked up within five minutes
# Slack's pace item: the notifier's short-lived table (absent with a team's notifier: no webhook).
pace_table = boto3.resource("dynamodb").Table(os.environ["PACE_TABLE_NAME"]) if "PACE_TABLE_NAME" in os.environ else None


class FollowUpNotPosted(Exception):
    """The channel was not told: Lambda retries the invocation, then keeps it on the failure queue."""


@logger.inject_lambda_context
# The event holds a response_url, which acts on the message for 30 minutes: never record it in a trace.
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    problems = {}
    if event.get("response_url") and event.get("replacement"):
        problems["message_update"] = post_json(event["response_url"], event["replacement"])
    webhook_secret_name = os.environ.get("SLACK_WEBHOOK_SECRET_NAME")
    if webhook_secret_name is not None:  # none: a team's notifier delivers, the app has no channel of its own
        webhook_url = parameters.get_secret(webhook_secret_name, max_age=SECRET_MAX_AGE_SECONDS)
        latest = time.time() + context.get_remaining_time_in_millis() / 1000 - FOLLOWUP_TIMEOUT_SECONDS - 1
        problems["followup"] = post_followup_in_turn(pace_table, webhook_url, event["text"], latest=latest)
    failed = {what: problem for what, problem in problems.items() if problem is not None}
    if failed:
        logger.warning("Not posted", extra=failed)
    if "followup" in failed:
        raise FollowUpNotPosted(failed["followup"])
    return {"posted": sorted(what for what, problem in problems.items() if problem is None), "failed": sorted(failed)}

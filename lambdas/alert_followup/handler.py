"""Alert Follow-up: what the channel is told once a person has acted, after the endpoint has answered.

The action endpoint answers a click (Slack wants an answer within 3 s) right after its one
conditional write, and hands this function, invoked asynchronously, the rest:
{"text": the follow-up, "response_url": the click's (or null), "replacement": the clicked message as it
now reads (or null)}. The follow-up goes to the incoming webhook; the replacement to the
``response_url`` (https://api.slack.com/interactivity/handling#message_responses). Neither is retried:
a courtesy that failed is logged, and the change it reports is saved already.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.observability import logger, tracer
from patterns_common.slack_post import post_followup, post_json

SECRET_MAX_AGE_SECONDS = 300  # a rotated webhook URL is picked up within five minutes


@logger.inject_lambda_context
# The event holds a response_url, which acts on the message for 30 minutes: never record it in a trace.
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    problems = {}
    webhook_secret_name = os.environ.get("SLACK_WEBHOOK_SECRET_NAME")
    if webhook_secret_name is not None:  # none: a team's notifier delivers, the app has no channel of its own
        webhook_url = parameters.get_secret(webhook_secret_name, max_age=SECRET_MAX_AGE_SECONDS)
        problems["followup"] = post_followup(webhook_url, event["text"])
    if event.get("response_url") and event.get("replacement"):
        problems["message_update"] = post_json(event["response_url"], event["replacement"])
    failed = {what: problem for what, problem in problems.items() if problem is not None}
    if failed:
        logger.warning("Not posted", extra=failed)
    return {"posted": sorted(what for what, problem in problems.items() if problem is None), "failed": sorted(failed)}

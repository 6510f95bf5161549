"""Alert action endpoint (public function URL): Acknowledge/Resolve links, Slack button clicks and /oncall.

GET shows, POST acts: one conditional UpdateItem per action, then a follow-up post to the channel.
Nothing here logs a token, a signature or a request body.
"""

from __future__ import annotations

import os
import time
from typing import Any

import boto3
import oncall_slash
from alert_actions_logic import (
    Refused,
    Request,
    check_form_matches,
    check_slack_signature,
    claim_of,
    confirm_page,
    form_fields,
    outcome_page,
    read_request,
    refused_page,
    slack_answer,
    slack_click,
)
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.typing import LambdaContext
from boto3.dynamodb.types import TypeDeserializer
from oncall_command import COMMAND

from patterns_common.alert_action_links import TOKEN_PARAMETER, ActionClaim
from patterns_common.alert_status import (
    Outcome,
    act_update,
    followup_text,
    outcome_for_page,
    outcome_of_refusal,
    raised_after,
    timestamp,
)
from patterns_common.observability import logger, tracer
from patterns_common.slack_post import post_followup

SECRET_MAX_AGE_SECONDS = 300  # a key put by hand (rotation) is picked up within five minutes

table = boto3.resource("dynamodb").Table(os.environ["ALERT_TABLE_NAME"])


@logger.inject_lambda_context
# The pages hold the token: never record a response (or the event) in a trace.
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    try:
        return respond(read_request(event))
    except Refused as refused:
        logger.info("Refused", extra={"status": refused.status, "reason": refused.title})
        return refused_page(refused)


def respond(request: Request) -> dict[str, Any]:
    now = time.time()
    if request.method in ("GET", "HEAD"):
        token = request.query.get(TOKEN_PARAMETER)
        claim = claim_of(signing_key(), token, now)
        item = read_item(claim.alert_id)
        shown = outcome_for_page(item, claim.action)
        if shown is not None:
            return outcome_page(claim, shown)
        # The machine's default message when the item has none (alert_config_logic)
        message = str(item.get("message", f"Alert {claim.alert_id} is active"))
        return confirm_page(claim, token, message, raised_again_at=raised_after(item, timestamp(claim.issued)))
    if request.method != "POST":
        raise Refused(405, "Method not allowed", "Open the link (GET) and use its button (POST).")
    fields = form_fields(request)
    if request.from_slack:
        secret_name = os.environ.get("SLACK_SIGNING_SECRET_NAME")
        if not secret_name:
            raise Refused(403, "Slack requests are not accepted", "No Slack app signing secret is configured.")
        check_slack_signature(_secret(secret_name).encode(), request, now)
        if fields.get("command") == COMMAND:
            return oncall_slash.answer(fields, now)
        click = slack_click(fields)
        claim = claim_of(signing_key(), click.token, now)
        # No page is shown before a Slack click acts: only on the occurrence its message was about.
        return slack_answer(act(claim, by=click.user_id, now=now, current_since=timestamp(claim.issued)))
    claim = claim_of(signing_key(), fields.get(TOKEN_PARAMETER), now)
    check_form_matches(claim, fields)
    outcome = act(claim, by=claim.user, now=now)
    return outcome_page(claim, outcome, acted_now=outcome.kind == "acted")


def act(claim: ActionClaim, *, by: str, now: float, current_since: str | None = None) -> Outcome:
    at = timestamp(now)
    update = act_update(claim.alert_id, claim.action, by=by, at=at, current_since=current_since)
    try:
        table.update_item(**update, ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except table.meta.client.exceptions.ConditionalCheckFailedException as refused:
        old = refused.response.get("Item")
        item = _plain(old) if old is not None else read_item(claim.alert_id)
        outcome = outcome_of_refusal(item, claim.action, current_since)
        logger.info("Not acted", extra={"alert_id": claim.alert_id, "action": claim.action, "outcome": outcome.kind})
        return outcome
    outcome = Outcome("acted", update["ExpressionAttributeValues"][":new"], by, at)
    logger.info("Acted", extra={"alert_id": claim.alert_id, "action": claim.action, "by": by, "at": at})
    webhook_secret_name = os.environ.get("SLACK_WEBHOOK_SECRET_NAME")
    if webhook_secret_name is None:  # a team's notifier delivers the notifications: no channel to follow up in
        return outcome
    problem = post_followup(_secret(webhook_secret_name), followup_text(claim.alert_id, outcome.status, by=by, at=at))
    if problem is not None:
        logger.warning("Follow-up not posted", extra={"alert_id": claim.alert_id, "problem": problem})
    return outcome


def read_item(alert_id: str) -> dict[str, Any] | None:
    return table.get_item(Key={"alert_id": alert_id}, ConsistentRead=True).get("Item")


def signing_key() -> bytes:
    return _secret(os.environ["SIGNING_KEY_SECRET_ARN"]).encode()


def _secret(name: str) -> str:
    return parameters.get_secret(name, max_age=SECRET_MAX_AGE_SECONDS)


_deserializer = TypeDeserializer()


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    """An item as DynamoDB's low-level API gives it (a refused update's ALL_OLD) in the resource API's form."""
    return {name: _deserializer.deserialize(value) for name, value in item.items()}

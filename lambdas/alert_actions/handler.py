"""Alert action endpoint (public function URL): Acknowledge/Resolve links, Slack button clicks and /oncall.

GET shows, POST acts: one conditional UpdateItem per action, then the answer. What the channel is
told (the follow-up, and for a Slack click the clicked message updated) is handed to the follow-up
function, invoked asynchronously, so a click is answered well within Slack's 3 s. The link key is read
when an execution environment starts, again only after five minutes or when a link signed with a
newer key arrives (a rotation); the Slack app's signing secret only when a Slack request comes, so
while it is missing or renamed Slack's requests are refused and every signed link still works.
Nothing here logs a token, a signature, a request body or who acted.
"""

from __future__ import annotations

import functools
import json
import os
import time
from typing import Any

import boto3
import oncall_slash
from alert_actions_logic import (
    Refused,
    Request,
    acted_message,
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

from patterns_common.alert_action_links import TOKEN_PARAMETER, ActionClaim, ActionLinkKeys
from patterns_common.alert_status import (
    Outcome,
    act_update,
    followup_text,
    outcome_for_page,
    outcome_of_refusal,
    timestamp,
)
from patterns_common.observability import logger, tracer

SIGNING_KEY_MAX_AGE_SECONDS = 300
# A link signed with a key newer than the ones held makes them be fetched again, at most once a second:
# a rotation, a signing function fetching the new key, its Slack post and a person's click take longer.
KEY_REFETCH_INTERVAL_SECONDS = 1

table = boto3.resource("dynamodb").Table(os.environ["ALERT_TABLE_NAME"])
lambda_client = boto3.client("lambda")
secrets = boto3.client("secretsmanager")


@functools.cache
def _secret(name: str) -> str:
    """Once per execution environment, at its first Slack request: a Slack signing secret put by hand
    reaches environments started after it (an update of the function's configuration starts new ones at
    once). A read that fails is not cached: the next Slack request reads again."""
    return parameters.get_secret(name)


def slack_signing_secret() -> bytes:
    """The Slack app's signing secret; Refused when no Slack app is configured or its secret cannot be read."""
    name = os.environ.get("SLACK_SIGNING_SECRET_NAME")
    if not name:
        raise Refused(403, "Slack requests are not accepted", "No Slack app signing secret is configured.")
    try:
        return _secret(name).encode()
    except parameters.GetParameterError as error:
        # Missing, renamed, not granted or throttled: the deployer's to fix, and not the requester's to know which.
        logger.warning("Slack signing secret unreadable", extra={"secret_name": name, "error": str(error)})
        raise Refused(
            503, "Slack requests cannot be checked now", "The Slack app's signing secret cannot be read; try again later."
        ) from None


def fetch_signing_keys() -> list[bytes]:
    """The link key's AWSCURRENT value, then its AWSPREVIOUS one if it was ever rotated."""
    keys = []
    for stage in ("AWSCURRENT", "AWSPREVIOUS"):
        try:
            value = secrets.get_secret_value(SecretId=os.environ["SIGNING_KEY_SECRET_ARN"], VersionStage=stage)
        except secrets.exceptions.ResourceNotFoundException:
            if stage == "AWSCURRENT":
                raise
            continue  # never rotated: no previous version
        keys.append(value["SecretString"].encode())
    return keys


signing_keys = ActionLinkKeys(
    fetch_signing_keys, max_age=SIGNING_KEY_MAX_AGE_SECONDS, refetch_interval=KEY_REFETCH_INTERVAL_SECONDS
)

signing_keys.held()  # at a cold start: every link and every click needs the link keys


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
    """Routes a request: a person's browser (GET shows, POST acts) or Slack (a signed POST)."""
    now = time.time()
    if request.method in ("GET", "HEAD"):
        return show_link(request, now)
    if request.method != "POST":
        raise Refused(405, "Method not allowed", "Open the link (GET) and use its button (POST).")
    fields = form_fields(request)
    if request.from_slack:
        return slack_interaction(request, fields, now)
    claim = claim_of(signing_keys, fields.get(TOKEN_PARAMETER), now)
    check_form_matches(claim, fields)
    outcome = act(claim, by=claim.user, now=now)
    return outcome_page(claim, outcome, acted_now=outcome.kind == "acted")


def show_link(request: Request, now: float) -> dict[str, Any]:
    token = request.query.get(TOKEN_PARAMETER)
    claim = claim_of(signing_keys, token, now)
    item = read_item(claim.alert_id)
    shown = outcome_for_page(item, claim.action, claim.occurrence)
    if shown is not None:
        return outcome_page(claim, shown)
    # The machine's default message when the item has none (alert_config_logic)
    message = str(item.get("message", f"Alert {claim.alert_id} is active"))
    return confirm_page(claim, token, message)


def slack_interaction(request: Request, fields: dict[str, str], now: float) -> dict[str, Any]:
    """A verified Slack request: /oncall is answered from the on-call table; a button click acts at once
    for the Slack member who clicked."""
    check_slack_signature(slack_signing_secret(), request, now)
    if fields.get("command") == COMMAND:
        return oncall_slash.answer(fields, now, hand_off)
    click = slack_click(fields)
    claim = claim_of(signing_keys, click.token, now)
    outcome = act(claim, by=click.user_id, now=now, clicked=click.message, response_url=click.response_url)
    return slack_answer(outcome)


def act(
    claim: ActionClaim, *, by: str, now: float, clicked: dict | None = None, response_url: str | None = None
) -> Outcome:
    """The one conditional write; a link acts only on the occurrence it was sent for. Then the hand-off."""
    at = timestamp(now)
    update = act_update(claim.alert_id, claim.action, by=by, at=at, occurrence=claim.occurrence)
    try:
        table.update_item(**update, ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except table.meta.client.exceptions.ConditionalCheckFailedException as refused:
        old = refused.response.get("Item")
        item = _plain(old) if old is not None else read_item(claim.alert_id)
        outcome = outcome_of_refusal(item, claim.occurrence)
        logger.info("Not acted", extra={"alert_id": claim.alert_id, "action": claim.action, "outcome": outcome.kind})
        return outcome
    outcome = Outcome("acted", update["ExpressionAttributeValues"][":new"], by, at)
    # Who acted is in the item (acknowledged_by, resolved_by), never in a log.
    logger.info("Acted", extra={"alert_id": claim.alert_id, "action": claim.action, "at": at})
    text = followup_text(claim.alert_id, outcome.status, by=by, at=at)
    hand_off({
        "text": text,
        "response_url": response_url,
        "replacement": acted_message(clicked, text) if clicked is not None and response_url else None,
    })
    return outcome


def hand_off(followup: dict[str, Any]) -> None:
    """Queues the follow-up (an asynchronous Invoke: Lambda accepts it and returns at once)."""
    try:
        lambda_client.invoke(
            FunctionName=os.environ["FOLLOW_UP_FUNCTION_NAME"], InvocationType="Event", Payload=json.dumps(followup)
        )
    except Exception as error:  # noqa: BLE001 - the action is saved; a lost courtesy must not fail the answer
        logger.warning("Follow-up not queued", extra={"error": type(error).__name__})


def read_item(alert_id: str) -> dict[str, Any] | None:
    return table.get_item(Key={"alert_id": alert_id}, ConsistentRead=True).get("Item")


_deserializer = TypeDeserializer()


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    """An item as DynamoDB's low-level API gives it (a refused update's ALL_OLD) in the resource API's form."""
    return {name: _deserializer.deserialize(value) for name, value in item.items()}

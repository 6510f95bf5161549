"""Contact: one of a person's rules, fired: a text, a call or an e-mail about an alert, checked just before sending.

Invoked asynchronously by Notify User (a rule at minute 0) or by the one-time schedule it armed (a
later minute), with {alert_id, occurrence, member, contact, after_minutes, round, execution_id,
notified_at, actions_url}: no signed link and no secret. It reads the alert (consistently): nothing is
sent once the alert is acknowledged, resolved, deleted or raised again since. It reads the person:
nothing is sent on a method that is gone or unverified. A text or a call carries the person's reply
code for this alert and occurrence (taken with a conditional UpdateItem of the people item); an
e-mail carries Acknowledge and Resolve links this function signs.

A send AWS refuses (sandbox, opt-out, spend limit, throttling, SES's MessageRejected), or a channel the
deployment left off, is told to the Slack channel through the follow-up function. Any other error
fails the invocation: Lambda retries it twice, then the failure queue (alarm ContactAttemptFailed)
records it. The person's later rules are schedules of their own, so they run either way.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3
from alert_contact_logic import (
    KIND,
    channel_off_reason,
    claim_code,
    code_held,
    codes_to_free,
    email_content,
    next_page,
    refusal_reason,
    refusal_text,
    sms_text,
    usable_method,
    voice_text,
    why_not_page,
)
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.typing import LambdaContext
from botocore.exceptions import ClientError

from patterns_common.alert_action_links import LINK_LIFETIME_SECONDS, links_for
from patterns_common.observability import logger, tracer
from patterns_common.people import EMAIL, SMS, InvalidPerson, parse_person

SECRET_MAX_AGE_SECONDS = 300  # as Fetch Alert Config: a rotated signing key is picked up within five minutes
# Two pages of one person choosing a code at once: the loser reads the item again, this many times in all.
CODE_ATTEMPTS = 3
BATCH_GET_MAX_KEYS = 100  # BatchGetItem reads at most 100 items a call (DynamoDB API Reference)

dynamodb = boto3.resource("dynamodb")
alerts = dynamodb.Table(os.environ["ALERT_TABLE_NAME"])
people = dynamodb.Table(os.environ["PEOPLE_TABLE_NAME"])
sms_voice = boto3.client("pinpoint-sms-voice-v2")
ses = boto3.client("sesv2")
lambda_client = boto3.client("lambda")


class ReplyCodeContended(Exception):
    """Other pages of the person kept taking the code this one chose; Lambda's retry chooses again."""


@logger.inject_lambda_context
# The event and the answer name a person: never record them in a trace.
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    alert_id, occurrence, member = event["alert_id"], event["occurrence"], event["member"]
    alert = alerts.get_item(Key={"alert_id": alert_id}, ConsistentRead=True).get("Item")
    skipped = why_not_page(alert, occurrence)
    if skipped is None:
        item = people.get_item(Key={"member": member}, ConsistentRead=True).get("Item")
        try:
            person = parse_person(item) if item is not None else None
        except InvalidPerson as invalid:  # written by hand past tools.people: nothing to page on
            logger.warning("Person unreadable", extra={"field": invalid.field, "problem": invalid.problem})
            person = None
        method, skipped = usable_method(person, event["contact"])
    if skipped is not None:
        logger.info("Not sent", extra={"alert_id": alert_id, "contact": event["contact"], "reason": skipped})
        return {"sent": False, "reason": skipped}
    following = next_page(person, event["after_minutes"])
    try:
        if method.type == EMAIL:
            _email(event, method.address, str(alert.get("message", "")))
        else:
            _phone(event, method, item, str(alert.get("message", "")))
    except PersonGone:  # deleted between the read and the code's write: as if read so
        logger.info("Not sent", extra={"alert_id": alert_id, "contact": event["contact"], "reason": "person deleted"})
        return {"sent": False, "reason": "the person is no longer in the people table"}
    except ChannelOff:
        reason = channel_off_reason(method.type)
    except ClientError as error:
        answer = error.response.get("Error", {})
        reason = refusal_reason(method.type, answer.get("Code", ""), error.response.get("Reason"), answer.get("Message", ""))
        if reason is None:
            raise
    else:
        logger.info("Sent", extra={"alert_id": alert_id, "kind": KIND[method.type], "contact": method.id})
        return {"sent": True, "kind": KIND[method.type]}
    # Not who: logs hold no one's account (the channel is told who).
    logger.warning("Refused", extra={"alert_id": alert_id, "kind": KIND[method.type], "reason": reason})
    _tell_channel(refusal_text(member, alert_id, method, reason, following))
    return {"sent": False, "reason": reason}


class PersonGone(Exception):
    """The person's item was deleted while this page chose their code."""


class ChannelOff(Exception):
    """The deployment names no origination identity (texts, calls) or no sender (e-mail)."""


def _phone(event: dict[str, Any], method: Any, item: dict[str, Any], message: str) -> None:
    origination = os.environ.get("SMS_ORIGINATION_IDENTITY")
    if not origination:
        raise ChannelOff
    code = _reply_code(event["member"], item, event["alert_id"], event["occurrence"])
    if method.type == SMS:
        sms_voice.send_text_message(
            DestinationPhoneNumber=method.address, OriginationIdentity=origination,
            MessageBody=sms_text(message, code), MessageType="TRANSACTIONAL",
        )
    else:
        sms_voice.send_voice_message(
            DestinationPhoneNumber=method.address, OriginationIdentity=origination,
            MessageBody=voice_text(message, code), MessageBodyTextType="TEXT",
        )


def _email(event: dict[str, Any], address: str, message: str) -> None:
    sender = os.environ.get("ALERT_EMAIL_FROM")
    if not sender:
        raise ChannelOff
    key = parameters.get_secret(os.environ["ACTION_LINK_KEY_SECRET_ARN"], max_age=SECRET_MAX_AGE_SECONDS).encode()
    links = links_for(
        key, event["actions_url"], alert_id=event["alert_id"], user=event["member"],
        expires_at=int(time.time()) + LINK_LIFETIME_SECONDS,
        # The link acts on the occurrence the page was about ("": the alarm never raised the alert).
        occurrence=event["occurrence"] or None,
    )
    ses.send_email(
        FromEmailAddress=sender, Destination={"ToAddresses": [address]},
        Content=email_content(event["alert_id"], message, links),
    )


def _reply_code(member: str, item: dict[str, Any], alert_id: str, occurrence: str) -> str:
    """The person's code for this alert and occurrence: the one held, else the lowest free one, taken."""
    conflict = people.meta.client.exceptions.ConditionalCheckFailedException
    for _ in range(CODE_ATTEMPTS):
        codes = item.get("reply_codes")
        held = code_held(codes or {}, alert_id, occurrence)
        if held is not None:
            return held
        freed = codes_to_free(codes or {}, _alerts_of(codes or {}))
        code, update = claim_code(member, codes, alert_id, occurrence, freed)
        try:
            people.update_item(**update)
        except conflict:
            item = people.get_item(Key={"member": member}, ConsistentRead=True).get("Item")
            if item is None:
                raise PersonGone from None
            continue
        return code
    raise ReplyCodeContended(f"the reply code of {alert_id} was taken {CODE_ATTEMPTS} times by other pages")


def _alerts_of(codes: dict[str, Any]) -> dict[str, Any]:
    """The alert items the person's codes are for, by id (an id with no item is absent: deleted)."""
    ids = sorted({entry.get("alert_id") for entry in codes.values() if isinstance(entry, dict) and entry.get("alert_id")})
    found: dict[str, Any] = {}
    for start in range(0, len(ids), BATCH_GET_MAX_KEYS):
        request = {alerts.name: {"Keys": [{"alert_id": i} for i in ids[start:start + BATCH_GET_MAX_KEYS]],
                                 "ConsistentRead": True}}
        while request:
            answer = dynamodb.batch_get_item(RequestItems=request)
            found.update({alert["alert_id"]: alert for alert in answer["Responses"].get(alerts.name, [])})
            request = answer.get("UnprocessedKeys") or None
    return found


def _tell_channel(text: str) -> None:
    """The note goes the way a click's follow-up goes, sharing whatever pace that path keeps."""
    lambda_client.invoke(
        FunctionName=os.environ["FOLLOW_UP_FUNCTION_NAME"], InvocationType="Event",
        Payload=json.dumps({"text": text}).encode(),
    )

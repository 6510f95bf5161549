"""SMS Replies: a text to the alert number acknowledges or resolves an alert as the person who sent it.

Subscribed to the replies topic (stack output ``SmsRepliesTopicArn``), the number's two-way channel.
Per text: one consistent Scan of the people table (teams are small) finds who sent it and the codes
they hold, one conditional UpdateItem acts (the same ``act_update`` a Slack click makes), the
channel gets the same follow-up a click gives (through the follow-up function), and the sender is
texted the result. A text AWS refuses to send (opted out, a destination not verified while in the
sandbox, the spend limit) or no origination identity configured leaves the act as it is: logged.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3
from alert_sms_replies_logic import ACT, BadPayload, Decision, answer_for, decide, read_inbound, read_people
from aws_lambda_powertools.utilities.typing import LambdaContext
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import BotoCoreError, ClientError

from patterns_common.alert_status import Outcome, act_update, followup_text, outcome_of_refusal, timestamp
from patterns_common.observability import logger, tracer

alerts = boto3.resource("dynamodb").Table(os.environ["ALERT_TABLE_NAME"])
people_table = boto3.resource("dynamodb").Table(os.environ["PEOPLE_TABLE_NAME"])
lambda_client = boto3.client("lambda")
sms = boto3.client("pinpoint-sms-voice-v2")


@logger.inject_lambda_context
# A record holds a person's phone number and what they texted: never in a trace.
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    handled = []
    for record in event["Records"]:  # SNS delivers one message per invocation; a list by format
        try:
            inbound = read_inbound(record["Sns"]["Message"])
        except BadPayload as bad:
            # Not End User Messaging's: nobody to answer, and a retry reads the same message.
            logger.warning("Not a two-way SMS payload", extra={"problem": str(bad)})
            continue
        people = read_people(scan_people())
        if people.unreadable:
            logger.warning("People items not read", extra={"members": list(people.unreadable)})
        decision = decide(inbound, people)
        answer = decision.answer
        if decision.kind == ACT:
            answer = answer_for(decision, act(decision), people)
        if decision.channel is not None:
            hand_off(decision.channel)
        if answer is not None:
            text(inbound.origination_number, answer)
        # Which message and what it led to; the number, its owner and the body stay out of the log.
        logger.info("Text handled", extra={"inbound_message_id": inbound.inbound_message_id, "decision": decision.kind})
        handled.append(decision.kind)
    return {"handled": handled}


def scan_people() -> list[dict[str, Any]]:
    """Every people item, read consistently: a code written just before the text was sent is seen."""
    items, arguments = [], {"ConsistentRead": True}
    while True:
        page = people_table.scan(**arguments)
        items.extend(page["Items"])
        if "LastEvaluatedKey" not in page:
            return items
        arguments["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def act(decision: Decision) -> Outcome:
    """The one conditional write, as the person; the channel's follow-up when it changed the alert."""
    at = timestamp(time.time())
    update = act_update(decision.alert_id, decision.action, by=decision.member, at=at, occurrence=decision.occurrence)
    try:
        alerts.update_item(**update, ReturnValuesOnConditionCheckFailure="ALL_OLD")
    except alerts.meta.client.exceptions.ConditionalCheckFailedException as refused:
        old = refused.response.get("Item")  # none: there is no such alert
        item = {name: _deserializer.deserialize(value) for name, value in old.items()} if old is not None else None
        return outcome_of_refusal(item, decision.occurrence)
    status = update["ExpressionAttributeValues"][":new"]
    hand_off(followup_text(decision.alert_id, status, by=decision.member, at=at))
    return Outcome("acted", status, decision.member, at)


def hand_off(channel_text: str) -> None:
    """Queues a channel message on the follow-up function, the path a click's follow-up takes."""
    try:
        lambda_client.invoke(
            FunctionName=os.environ["FOLLOW_UP_FUNCTION_NAME"],
            InvocationType="Event",
            Payload=json.dumps({"text": channel_text}),
        )
    except (BotoCoreError, ClientError) as error:  # the act is saved; a lost courtesy must not repeat it
        logger.warning("Channel message not queued", extra={"error": type(error).__name__})


def text(number: str, body: str) -> None:
    """Texts the sender the answer from the alert number; a refusal is logged, never retried."""
    identity = os.environ.get("SMS_ORIGINATION_IDENTITY")
    if not identity:
        logger.warning("No origination identity (smsOriginationIdentity): answer not sent")
        return
    try:
        sms.send_text_message(
            DestinationPhoneNumber=number, OriginationIdentity=identity, MessageBody=body, MessageType="TRANSACTIONAL"
        )
    except ClientError as refused:
        error = refused.response["Error"]
        logger.warning("Answer not sent", extra={"error": error["Code"], "reason": refused.response.get("Reason")})


_deserializer = TypeDeserializer()

"""Answers /oncall contact|rules|rule (already verified as Slack's, from the app's workspace): the caller's own
people item, their codes sent by text, call or e-mail.

One GetItem, at most one conditional UpdateItem, and for an add or a sandboxed verify the End User
Messaging or SES calls, well within Slack's 3 s. What to write and answer is people_command's; this
module makes the AWS calls. A send AWS refuses is answered with AWS's reason and stores nothing.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

import boto3
from botocore.exceptions import ClientError
from oncall_command import slack_reply
from people_command import (
    CODE_SECONDS,
    VIA_SANDBOX,
    WRITTEN,
    Delivery,
    PeopleRefused,
    Write,
    add,
    check_member,
    code_matches,
    parse_command,
    pending_of,
    remove,
    rule,
    rules,
    through_sandbox,
    verified,
    wrong_code,
)

from patterns_common.observability import logger
from patterns_common.people import EMAIL, SMS, person_update


@cache
def people_table() -> Any:
    """Made on the first such command, not at import: the endpoint's other requests never need it."""
    return boto3.resource("dynamodb").Table(os.environ["PEOPLE_TABLE_NAME"])


@cache
def sms_voice() -> Any:
    return boto3.client("pinpoint-sms-voice-v2")


@cache
def ses() -> Any:
    return boto3.client("sesv2")


def answer(fields: dict[str, str], now: float) -> dict[str, Any]:
    """The ephemeral answer; only the caller's own item (their Slack member ID) is read or written."""
    member = fields.get("user_id", "")
    try:
        check_member(member)
        command = parse_command(fields.get("text", ""))
        item = people_table().get_item(Key={"member": member}, ConsistentRead=True).get("Item")
        if command.verb == "rules":
            return slack_reply(rules(item, member))
        if command.verb == "add":
            write, delivery = add(item, member, command.kind, command.address, command.method_id, now)
            write = _deliver(write, delivery)
        elif command.verb == "verify":
            write = _verify(item, member, command.method_id, command.code or "", now)
        elif command.verb == "remove":
            write = remove(item, member, command.method_id)
        else:
            write = rule(item, member, command.method_id, command.minutes)
        _write(write)
        logger.info("Person changed", extra={"command": command.verb})
        return slack_reply(write.answer)
    except PeopleRefused as refused:
        return slack_reply(str(refused))


def _deliver(write: Write, delivery: Delivery) -> Write:
    """Sends the code; in the SMS sandbox, has AWS send its own. Refused by AWS: PeopleRefused, nothing stored."""
    if delivery.kind == EMAIL:
        _email(delivery)
        return write
    identity = os.environ.get("SMS_ORIGINATION_IDENTITY")
    if not identity:
        raise PeopleRefused("Not added: this deployment sends no texts or calls (the context key "
                            "smsOriginationIdentity names no End User Messaging phone number).")
    client = sms_voice()
    try:
        if delivery.kind == SMS:
            client.send_text_message(
                DestinationPhoneNumber=delivery.address, OriginationIdentity=identity, MessageType="TRANSACTIONAL",
                MessageBody=f"Your alert paging code is {delivery.code}. In Slack: /oncall contact verify "
                            f"{delivery.method_id} {delivery.code} (valid {CODE_SECONDS // 60} minutes)")
        else:
            spoken = ", ".join(delivery.code)
            client.send_voice_message(
                DestinationPhoneNumber=delivery.address, OriginationIdentity=identity, MessageBodyTextType="TEXT",
                MessageBody=f"Your alert paging code is {spoken}. Again: {spoken}.")
        return write
    except ClientError as error:
        if _reason(error) != "DESTINATION_PHONE_NUMBER_NOT_VERIFIED":
            raise PeopleRefused(f"Not added: AWS refused the {'text' if delivery.kind == SMS else 'call'} to "
                                f"{delivery.address}: {_said(error)}") from None
    # The sandbox: AWS's own verification of the destination number (End User Messaging SMS User Guide,
    # "Adding a verified destination number"), its code sent by AWS and checked by VerifyDestinationNumber.
    try:
        destination_id, registered_before = _verified_destination(client, delivery.address)
        client.send_destination_number_verification_code(
            VerifiedDestinationNumberId=destination_id, VerificationChannel="TEXT" if delivery.kind == SMS else "VOICE",
            OriginationIdentity=identity)
    except ClientError as error:
        raise PeopleRefused(f"Not added: this AWS account is in End User Messaging's sandbox and AWS refused to "
                            f"verify {delivery.address}: {_said(error)}") from None
    return through_sandbox(write, delivery.method_id, destination_id, registered_before)


def _verified_destination(client: Any, number: str) -> tuple[str, bool]:
    """The sandbox's verified destination number for ``number``, created unless it was already."""
    try:
        return client.create_verified_destination_number(DestinationPhoneNumber=number)["VerifiedDestinationNumberId"], False
    except ClientError as error:
        if _reason(error) != "RESOURCE_ALREADY_EXISTS":
            raise
    found = client.describe_verified_destination_numbers(DestinationPhoneNumbers=[number])["VerifiedDestinationNumbers"]
    return found[0]["VerifiedDestinationNumberId"], True


def _email(delivery: Delivery) -> None:
    sender = os.environ.get("ALERT_EMAIL_FROM")
    if not sender:
        raise PeopleRefused("Not added: this deployment sends no e-mail (the context key alertEmailFrom names no SES identity).")
    text = (f"Your alert paging code is {delivery.code}.\n\nIn Slack, type: /oncall contact verify {delivery.method_id} "
            f"{delivery.code}\n\nIt is valid for {CODE_SECONDS // 60} minutes.")
    try:
        ses().send_email(FromEmailAddress=sender, Destination={"ToAddresses": [delivery.address]},
                         Content={"Simple": {"Subject": {"Data": "Your alert paging code"}, "Body": {"Text": {"Data": text}}}})
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") == "MessageRejected":
            raise PeopleRefused(
                f"Not added: SES refused the e-mail to {delivery.address} ({_said(error)}). While this AWS account is in "
                "the SES sandbox it sends only to verified addresses: an administrator verifies the address in SES, "
                "or moves the account out of the SES sandbox; then add it again.") from None
        raise PeopleRefused(f"Not added: SES refused the e-mail to {delivery.address}: {_said(error)}") from None


def _verify(item: dict[str, Any] | None, member: str, method_id: str, code: str, now: float) -> Write:
    pending = pending_of(item, member, method_id, now)
    if pending["via"] != VIA_SANDBOX:
        right = code_matches(pending, code)
    else:
        try:
            sms_voice().verify_destination_number(VerifiedDestinationNumberId=pending["destination_id"], VerificationCode=code)
            right = True
        except ClientError as error:
            if _reason(error) == "VERIFICATION_ALREADY_COMPLETE":
                # Verified with AWS by someone else's code (another method on the same number): not proof from this person.
                raise PeopleRefused("AWS has this number verified already: `/oncall contact add` it again to get a "
                                    "code from this app instead.") from None
            if error.response.get("Error", {}).get("Code") != "ValidationException":
                raise PeopleRefused(f"Not verified: AWS could not check the code: {_said(error)}") from None
            right = False
    return verified(item, member, method_id) if right else wrong_code(item, member, method_id)


def _write(write: Write) -> None:
    """Only over the fields the change was worked out from: a change made meanwhile (another command of the
    person's, an administrator's put) is never overwritten."""
    update = person_update(write.member, write.after, WRITTEN, before=write.before)
    try:
        people_table().update_item(**update)
    except people_table().meta.client.exceptions.ConditionalCheckFailedException:
        raise PeopleRefused("Your contact methods changed while you typed; run the command again.") from None


def _reason(error: ClientError) -> str | None:
    return error.response.get("Reason") or error.response.get("Error", {}).get("Reason")


def _said(error: ClientError) -> str:
    details = error.response.get("Error", {})
    reason = _reason(error)
    return f"{details.get('Code', '')}{f' {reason}' if reason else ''}: {details.get('Message', '')}"

"""End User Messaging SMS and voice for one LocalAws: the sandbox's rules, the phone log, replies to SNS.

Error names and ``Reason`` values are the API Reference's (botocore's model of
``pinpoint-sms-voice-v2`` lists the same): a send to a destination not verified while in the sandbox is
``ConflictException`` ``DESTINATION_PHONE_NUMBER_NOT_VERIFIED``, to an opted-out number
``ConflictException`` ``DESTINATION_PHONE_NUMBER_OPTED_OUT``, past the spend limit
``ServiceQuotaExceededException`` ``MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT``.
"""

from __future__ import annotations

import json
import math
import re
import secrets
import threading
import uuid
from datetime import datetime, timezone
from typing import Any, Callable

from emulator.clock import SimClock

# The JSON protocol's X-Amz-Target prefix (botocore's service model: targetPrefix).
TARGET_PREFIX = "PinpointSMSVoiceV2."
# The account's one phone number (555-01xx numbers are reserved for fiction) and its id.
PHONE_NUMBER = "+12065550100"
PHONE_NUMBER_ID = "phone-0123456789abcdef0123456789abcdef"
# The emulator's round price of one SMS message part, not AWS's (which depends on country and number type).
SMS_PART_USD = 0.01
# A new account's sandbox ("SMS/MMS and Voice sandbox", "Set an SMS, MMS or voice spending limit").
SANDBOX_SMS_SPEND_LIMIT_USD = 1
VERIFIED_DESTINATIONS_MAX = 10
SANDBOX_VOICE_PER_DAY = 20
SANDBOX_VOICE_PER_RECIPIENT_24H = 5
SANDBOX_VOICE_PER_MINUTE = 5
DEFAULT_OPT_OUT_LIST = "Default"
# Keywords a phone number answers by default; STOP opts the sender out ("Keywords", User Guide).
OPT_OUT_KEYWORDS = {"STOP"}
DEFAULT_KEYWORDS = {"STOP", "HELP"}
# The API Reference's pattern for a phone number in E.164 form.
_E164 = re.compile(r"^\+[1-9][0-9]{1,18}$")
# GSM 03.38's basic character set (and its extension table, two septets each): a text only of these
# is 160 characters a part (153 in a long one), any other 70 (67): "SMS character limits".
_GSM = set("@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§"
           "¿abcdefghijklmnopqrstuvwxyzäöñüà")
_GSM_EXTENDED = set("^{}\\[~]|€\f")


class SmsError(Exception):
    """An error answer: its ``__type`` and the modelled fields (``Reason``, ``ResourceType``...)."""

    def __init__(self, code: str, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fields = fields


def message_parts(body: str) -> int:
    """How many SMS message parts a text is sent (and charged) as."""
    if all(c in _GSM or c in _GSM_EXTENDED for c in body):
        septets = sum(2 if c in _GSM_EXTENDED else 1 for c in body)
        return 1 if septets <= 160 else math.ceil(septets / 153)
    units = len(body.encode("utf-16-le")) // 2
    return 1 if units <= 70 else math.ceil(units / 67)


class SmsVoice:
    """The account's End User Messaging state and its API. ``publish(topic_arn, message, source_arn, role_arn)``
    delivers to SNS as the service (PermissionError: IAM refuses it)."""

    def __init__(self, clock: SimClock, account_id: str, region: str, publish: Callable[[str, str, str, str | None], str],
                 refusal: Callable[[dict, str, dict], tuple[int, dict[str, str], bytes] | None]) -> None:
        """``refusal(environ, operation, body)``: IAM's access-denied answer to a request, or None to serve it."""
        self.clock = clock
        self._refusal = refusal
        self.account_id = account_id
        self.region = region
        self._publish = publish
        # Leaving the sandbox is a support case on AWS; here a test or person sets it False.
        self.sandbox = True
        self.sms_part_usd = SMS_PART_USD
        # Every text and call, to and from the account's number, oldest first: {"to", "from", "kind",
        # "body", "at", "message_id"}; a reply also has "published" (the SNS message id, or None).
        self.phone_log: list[dict] = []
        self._lock = threading.RLock()
        self._number = {
            "PhoneNumberArn": self._arn("phone-number", PHONE_NUMBER_ID), "PhoneNumberId": PHONE_NUMBER_ID,
            "PhoneNumber": PHONE_NUMBER, "Status": "ACTIVE", "IsoCountryCode": "US", "MessageType": "TRANSACTIONAL",
            "NumberCapabilities": ["SMS", "VOICE"], "NumberType": "TOLL_FREE", "MonthlyLeasingPrice": "2.00",
            "TwoWayEnabled": False, "SelfManagedOptOutsEnabled": False, "OptOutListName": DEFAULT_OPT_OUT_LIST,
            "InternationalSendingEnabled": False, "DeletionProtectionEnabled": False, "CreatedTimestamp": clock.now(),
        }
        self._verified: dict[str, dict] = {}  # VerifiedDestinationNumberId -> information (+ "code")
        self._opted_out: dict[str, dict[str, dict]] = {DEFAULT_OPT_OUT_LIST: {}}  # list -> number -> information
        self._operations: dict[str, Callable[[dict], dict]] = {
            "DescribePhoneNumbers": self.describe_phone_numbers,
            "UpdatePhoneNumber": self.update_phone_number,
            "SendTextMessage": self.send_text_message,
            "SendVoiceMessage": self.send_voice_message,
            "CreateVerifiedDestinationNumber": self.create_verified_destination_number,
            "SendDestinationNumberVerificationCode": self.send_destination_number_verification_code,
            "VerifyDestinationNumber": self.verify_destination_number,
            "DescribeVerifiedDestinationNumbers": self.describe_verified_destination_numbers,
            "PutOptedOutNumber": self.put_opted_out_number,
            "DescribeOptedOutNumbers": self.describe_opted_out_numbers,
            "DescribeSpendLimits": self.describe_spend_limits,
            "DescribeAccountAttributes": self.describe_account_attributes,
        }

    # -- WSGI -------------------------------------------------------------------------------------
    def wsgi(self, environ: dict, start_response: Any) -> list[bytes]:
        operation = environ.get("HTTP_X_AMZ_TARGET", "")[len(TARGET_PREFIX):]
        length = int(environ.get("CONTENT_LENGTH") or 0)
        try:
            body = json.loads(environ["wsgi.input"].read(length) or b"{}")
            denied = self._refusal(environ, operation, body)
            if denied is not None:
                status, headers, payload = denied
                start_response(f"{status} {'Forbidden' if status == 403 else 'Bad Request'}",
                               [*headers.items(), ("Content-Length", str(len(payload)))])
                return [payload]
            if operation not in self._operations:
                raise SmsError("ValidationException", f"The local emulator's End User Messaging SMS answers "
                                                      f"{', '.join(self._operations)}, not {operation}", Reason="UNKNOWN_OPERATION")
            with self._lock:
                status, result = "200 OK", self._operations[operation](body)
        except SmsError as exc:
            status, result = "400 Bad Request", {"__type": exc.code, "Message": exc.message, **exc.fields}
        payload = json.dumps(result).encode()
        start_response(status, [("Content-Type", "application/x-amz-json-1.0"), ("Content-Length", str(len(payload)))])
        return [payload]

    # -- the phone number -------------------------------------------------------------------------
    def describe_phone_numbers(self, body: dict) -> dict:
        for wanted in body.get("PhoneNumberIds") or []:
            self._phone_number(wanted)
        return {"PhoneNumbers": [dict(self._number)]}

    def update_phone_number(self, body: dict) -> dict:
        self._phone_number(body.get("PhoneNumberId", ""))
        enabled = body.get("TwoWayEnabled", self._number["TwoWayEnabled"])
        channel = body.get("TwoWayChannelArn", self._number.get("TwoWayChannelArn"))
        if enabled and not channel:
            raise SmsError("ValidationException", "TwoWayChannelArn is required to enable two-way SMS",
                           Reason="TWO_WAY_CHANNEL_NOT_PRESENT")
        if channel and not channel.startswith("arn:aws:sns:") and not channel.startswith("connect."):
            raise SmsError("ValidationException", f"TwoWayChannelArn {channel} is not an SNS topic ARN",
                           Reason="INVALID_ARN")
        if "OptOutListName" in body:
            self._opt_out_list(body["OptOutListName"])
        self._number["TwoWayEnabled"] = bool(enabled)
        for key in ("TwoWayChannelArn", "TwoWayChannelRole", "SelfManagedOptOutsEnabled", "OptOutListName",
                    "DeletionProtectionEnabled", "InternationalSendingEnabled"):
            if key in body:
                self._number[key] = body[key]
        return dict(self._number)

    # -- sending ----------------------------------------------------------------------------------
    def send_text_message(self, body: dict) -> dict:
        destination = self._destination(body)
        text = body.get("MessageBody") or ""
        self._refuse_unreachable(destination)
        cost = message_parts(text) * self.sms_part_usd
        spent = sum(entry.get("usd", 0) for entry in self._this_month("sms"))
        if spent + cost > SANDBOX_SMS_SPEND_LIMIT_USD + 1e-9:
            raise SmsError("ServiceQuotaExceededException",
                           f"Sending this message would exceed the monthly spend limit of "
                           f"${SANDBOX_SMS_SPEND_LIMIT_USD:.2f} for text messages (spent ${spent:.2f})",
                           Reason="MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT")
        if body.get("DryRun"):
            return {"MessageId": str(uuid.uuid4())}
        return {"MessageId": self._log(destination, PHONE_NUMBER, "sms", text, usd=cost)}

    def send_voice_message(self, body: dict) -> dict:
        destination = self._destination(body)
        self._refuse_unreachable(destination)
        if self.sandbox:
            now = self.clock.now()
            calls = [entry for entry in self.phone_log if entry["kind"] == "voice" and entry["from"] == PHONE_NUMBER]
            if sum(1 for entry in calls if now - entry["at"] < 60) >= SANDBOX_VOICE_PER_MINUTE:
                raise SmsError("ThrottlingException", f"The voice sandbox sends at most {SANDBOX_VOICE_PER_MINUTE} calls a minute")
            if sum(1 for entry in calls if _day(entry["at"]) == _day(now)) >= SANDBOX_VOICE_PER_DAY:
                # AWS documents the daily limit but no Reason for it: none is given here.
                raise SmsError("ServiceQuotaExceededException",
                               f"The voice sandbox sends at most {SANDBOX_VOICE_PER_DAY} voice messages a day")
            if sum(1 for entry in calls if entry["to"] == destination and now - entry["at"] < 86400) >= SANDBOX_VOICE_PER_RECIPIENT_24H:
                raise SmsError("ServiceQuotaExceededException",
                               f"The voice sandbox sends at most {SANDBOX_VOICE_PER_RECIPIENT_24H} voice messages "
                               f"to {destination} in 24 hours", Reason="DAILY_DESTINATION_CALL_LIMIT")
        if body.get("DryRun"):
            return {"MessageId": str(uuid.uuid4())}
        return {"MessageId": self._log(destination, PHONE_NUMBER, "voice", body.get("MessageBody") or "")}

    def _destination(self, body: dict) -> str:
        self._phone_number(body.get("OriginationIdentity") or PHONE_NUMBER_ID)
        destination = body.get("DestinationPhoneNumber", "")
        _check_e164("DestinationPhoneNumber", destination)
        return destination

    def _refuse_unreachable(self, destination: str) -> None:
        if self.sandbox and not any(v["DestinationPhoneNumber"] == destination and v["Status"] == "VERIFIED"
                                    for v in self._verified.values()):
            raise SmsError("ConflictException", f"Destination phone number {destination} is not verified; while the "
                                                "account is in the sandbox only verified destination numbers receive messages",
                           Reason="DESTINATION_PHONE_NUMBER_NOT_VERIFIED", ResourceType="verified-destination-number",
                           ResourceId=destination)
        if destination in self._opted_out[self._number["OptOutListName"]]:
            raise SmsError("ConflictException", f"Destination phone number {destination} has opted out",
                           Reason="DESTINATION_PHONE_NUMBER_OPTED_OUT", ResourceType="opted-out-number",
                           ResourceId=destination)

    # -- the sandbox's verified destinations ------------------------------------------------------
    def create_verified_destination_number(self, body: dict) -> dict:
        number = body.get("DestinationPhoneNumber", "")
        _check_e164("DestinationPhoneNumber", number)
        if any(v["DestinationPhoneNumber"] == number for v in self._verified.values()):
            raise SmsError("ConflictException", f"Verified destination number {number} already exists",
                           Reason="RESOURCE_ALREADY_EXISTS", ResourceType="verified-destination-number", ResourceId=number)
        if len(self._verified) >= VERIFIED_DESTINATIONS_MAX:
            raise SmsError("ServiceQuotaExceededException",
                           f"An account in the sandbox has at most {VERIFIED_DESTINATIONS_MAX} verified destination numbers",
                           Reason="VERIFIED_DESTINATION_NUMBERS_PER_ACCOUNT")
        number_id = "verifieddestinationnumber-" + uuid.uuid4().hex
        self._verified[number_id] = {
            "VerifiedDestinationNumberArn": self._arn("verified-destination-number", number_id),
            "VerifiedDestinationNumberId": number_id, "DestinationPhoneNumber": number, "Status": "PENDING",
            "CreatedTimestamp": self.clock.now(), "code": None,
        }
        return {**_public(self._verified[number_id]), "Tags": body.get("Tags", [])}

    def send_destination_number_verification_code(self, body: dict) -> dict:
        verified = self._verified_number(body.get("VerifiedDestinationNumberId", ""))
        if verified["Status"] == "VERIFIED":
            raise SmsError("ConflictException", "The destination number is already verified",
                           Reason="VERIFICATION_ALREADY_COMPLETE", ResourceType="verified-destination-number",
                           ResourceId=verified["VerifiedDestinationNumberId"])
        channel = body.get("VerificationChannel", "TEXT")
        if channel not in ("TEXT", "VOICE"):
            raise SmsError("ValidationException", f"VerificationChannel must be TEXT or VOICE, not {channel}",
                           Reason="FIELD_VALIDATION_FAILED", Fields=[{"Name": "VerificationChannel", "Message": "TEXT or VOICE"}])
        verified["code"] = f"{secrets.randbelow(10**6):06d}"  # a new code replaces the last one
        # Not charged: AWS waives the first code's fee, and a sandbox owner sends few.
        text = f"Your verification code is {verified['code']}"
        message_id = self._log(verified["DestinationPhoneNumber"], PHONE_NUMBER, "sms" if channel == "TEXT" else "voice", text)
        return {"MessageId": message_id}

    def verify_destination_number(self, body: dict) -> dict:
        verified = self._verified_number(body.get("VerifiedDestinationNumberId", ""))
        if verified["Status"] == "VERIFIED":
            raise SmsError("ConflictException", "The destination number is already verified",
                           Reason="VERIFICATION_ALREADY_COMPLETE", ResourceType="verified-destination-number",
                           ResourceId=verified["VerifiedDestinationNumberId"])
        if verified["code"] is None or body.get("VerificationCode") != verified["code"]:
            raise SmsError("ValidationException", "The verification code does not match",
                           Reason="VERIFICATION_CODE_MISMATCH",
                           Fields=[{"Name": "VerificationCode", "Message": "does not match the code sent"}])
        verified["Status"] = "VERIFIED"
        return _public(verified)

    def describe_verified_destination_numbers(self, body: dict) -> dict:
        ids, numbers = body.get("VerifiedDestinationNumberIds"), body.get("DestinationPhoneNumbers")
        for wanted in ids or []:
            self._verified_number(wanted)
        return {"VerifiedDestinationNumbers": [
            _public(v) for v in self._verified.values()
            if (not ids or v["VerifiedDestinationNumberId"] in ids) and (not numbers or v["DestinationPhoneNumber"] in numbers)]}

    # -- opt-outs ---------------------------------------------------------------------------------
    def put_opted_out_number(self, body: dict) -> dict:
        name = self._opt_out_list(body.get("OptOutListName", ""))
        number = body.get("OptedOutNumber", "")
        _check_e164("OptedOutNumber", number)
        entry = self._opt_out(name, number, end_user=False)
        return {"OptOutListArn": self._arn("opt-out-list", name), "OptOutListName": name, **entry}

    def describe_opted_out_numbers(self, body: dict) -> dict:
        name = self._opt_out_list(body.get("OptOutListName", ""))
        wanted = body.get("OptedOutNumbers")
        return {"OptOutListArn": self._arn("opt-out-list", name), "OptOutListName": name,
                "OptedOutNumbers": [dict(e) for n, e in self._opted_out[name].items() if not wanted or n in wanted]}

    def _opt_out(self, name: str, number: str, *, end_user: bool) -> dict:
        entry = {"OptedOutNumber": number, "OptedOutTimestamp": self.clock.now(), "EndUserOptedOut": end_user}
        self._opted_out[name][number] = entry
        return dict(entry)

    # -- the account ------------------------------------------------------------------------------
    def describe_spend_limits(self, body: dict) -> dict:
        text = {"Name": "TEXT_MESSAGE_MONTHLY_SPEND_LIMIT", "EnforcedLimit": SANDBOX_SMS_SPEND_LIMIT_USD,
                "MaxLimit": SANDBOX_SMS_SPEND_LIMIT_USD, "Overridden": False}
        return {"SpendLimits": [text]}

    def describe_account_attributes(self, body: dict) -> dict:
        return {"AccountAttributes": [{"Name": "ACCOUNT_TIER", "Value": "SANDBOXED" if self.sandbox else "PRODUCTION"}]}

    # -- replies ----------------------------------------------------------------------------------
    def receive(self, sender: str, body: str) -> dict:
        """A text from the phone ``sender`` to the account's number: logged, an opt-out if it says STOP, and
        published to the number's two-way topic. Returns the log entry: ``published``, the SNS message id or
        None; ``refused``, why IAM kept it from the topic, or None."""
        _check_e164("from", sender)
        if not body.strip():
            raise SmsError("ValidationException", "A text has a body", Reason="MISSING_PARAMETER")
        with self._lock:
            keyword = body.strip().split()[0].upper()
            if keyword in OPT_OUT_KEYWORDS and not self._number["SelfManagedOptOutsEnabled"]:
                self._opt_out(self._number["OptOutListName"], sender, end_user=True)
            previous = next((e["message_id"] for e in reversed(self.phone_log)
                             if e["to"] == sender and e["from"] == PHONE_NUMBER and e["kind"] == "sms"), None)
            inbound_id = self._log(PHONE_NUMBER, sender, "sms", body)
            entry = self.phone_log[-1]
            entry["published"] = entry["refused"] = None
            channel, role = self._number.get("TwoWayChannelArn"), self._number.get("TwoWayChannelRole")
            if not (self._number["TwoWayEnabled"] and channel and channel.startswith("arn:aws:sns:")):
                return dict(entry)  # a number without two-way SMS: the reply reaches no one
            payload = {
                "originationNumber": sender, "destinationNumber": PHONE_NUMBER,
                # A registered keyword the text starts with; otherwise what real payloads carry (not documented).
                "messageKeyword": keyword if keyword in DEFAULT_KEYWORDS else f"KEYWORD_{self.account_id}",
                "messageBody": body, "inboundMessageId": inbound_id,
            }
            if previous is not None:
                payload["previousPublishedMessageId"] = previous
        try:
            entry["published"] = self._publish(channel, json.dumps(payload), self._number["PhoneNumberArn"], role)
        except PermissionError as refused:
            entry["refused"] = str(refused)
        return dict(entry)

    # -- internals --------------------------------------------------------------------------------
    def _log(self, to: str, sender: str, kind: str, body: str, usd: float = 0.0) -> str:
        message_id = str(uuid.uuid4())
        self.phone_log.append({"to": to, "from": sender, "kind": kind, "body": body, "at": self.clock.now(),
                               "message_id": message_id, "usd": usd})
        return message_id

    def _this_month(self, kind: str) -> list[dict]:
        month = _day(self.clock.now())[:7]
        return [e for e in self.phone_log if e["kind"] == kind and e["from"] == PHONE_NUMBER and _day(e["at"])[:7] == month]

    def _phone_number(self, identity: str) -> dict:
        if identity not in (PHONE_NUMBER, PHONE_NUMBER_ID, self._number["PhoneNumberArn"]):
            raise SmsError("ResourceNotFoundException", f"Phone number {identity} not found",
                           ResourceType="phone-number", ResourceId=identity)
        return self._number

    def _verified_number(self, number_id: str) -> dict:
        if number_id not in self._verified:
            raise SmsError("ResourceNotFoundException", f"Verified destination number {number_id} not found",
                           ResourceType="verified-destination-number", ResourceId=number_id)
        return self._verified[number_id]

    def _opt_out_list(self, name: str) -> str:
        if name not in self._opted_out:
            raise SmsError("ResourceNotFoundException", f"Opt-out list {name} not found",
                           ResourceType="opt-out-list", ResourceId=name)
        return name

    def _arn(self, kind: str, resource_id: str) -> str:
        return f"arn:aws:sms-voice:{self.region}:{self.account_id}:{kind}/{resource_id}"


def _check_e164(field: str, number: str) -> None:
    if not isinstance(number, str) or not _E164.match(number):
        raise SmsError("ValidationException", f"{field} {number!r} is not a phone number in E.164 form",
                       Reason="FIELD_VALIDATION_FAILED", Fields=[{"Name": field, "Message": "E.164 form, such as +14255550182"}])


def _public(verified: dict) -> dict:
    return {key: value for key, value in verified.items() if key != "code"}


def _day(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d")

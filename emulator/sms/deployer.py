"""What a deployer does in End User Messaging's sandbox before a number can be texted or called."""

from __future__ import annotations

from typing import Any


def verify_destination(aws: Any, number: str) -> str:
    """Make ``number`` a verified destination of the running emulator ``aws``, as a deployer does
    (End User Messaging SMS User Guide, "Adding a verified destination phone number"): add it, have
    the code texted to it, read the code on the phone (the emulator's phone log), type it back.
    Returns the code."""
    phone = aws.client("pinpoint-sms-voice-v2")
    number_id = phone.create_verified_destination_number(DestinationPhoneNumber=number)["VerifiedDestinationNumberId"]
    phone.send_destination_number_verification_code(VerifiedDestinationNumberId=number_id, VerificationChannel="TEXT")
    code = [entry["body"] for entry in aws.sms.phone_log if entry["to"] == number][-1].rsplit(" ", 1)[1]
    phone.verify_destination_number(VerifiedDestinationNumberId=number_id, VerificationCode=code)
    return code

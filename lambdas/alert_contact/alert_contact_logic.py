"""Contact: what one of a person's rules sends when it fires, and what the channel is told when it cannot.

A rule fires minutes after a round notified the person (armed by Notify User, docs/reaching-people.md).
Just before sending, the alert item decides whether anything is sent at all (``why_not_page``), the
person's item which method (``usable_method``), and for a text or a call the person's reply code for
this alert and occurrence (``code_held``, ``codes_to_free``, ``claim_code``). A send AWS refuses, or a
channel the deployment left off, is told to the channel, naming the person and why (``refusal_text``).

Nothing here holds an AWS client: the handler makes the calls with what is built here.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

from patterns_common.alert_status import ACTIVE, RESOLVED, status_of
from patterns_common.people import EMAIL, SMS, VOICE, ContactMethod, Person, free_code, reply_instruction

# What each kind of method sends, as the channel names it.
KIND = {SMS: "text", VOICE: "call", EMAIL: "e-mail"}
_A_KIND = {SMS: "a text", VOICE: "a call", EMAIL: "an e-mail"}
# One SMS message part: 160 GSM-7 septets, or 70 characters when any character is outside GSM-7
# (End User Messaging SMS User Guide, "SMS character limits"). A page is one part: the sandbox's
# $1.00 a month buys about as many pages as parts.
GSM_PART_SEPTETS = 160
UCS2_PART_CHARACTERS = 70
# GSM 03.38's basic character set, and its extension table whose characters take two septets.
_GSM = set(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§"
    "¿abcdefghijklmnopqrstuvwxyzäöñüà"
)
_GSM_EXTENDED = set("^{}\\[~]|€\f")
_CUT = "..."  # GSM-7, so a cut never makes a text UCS-2
# A voice message in the sandbox lasts at most 30 seconds (User Guide, "SMS/MMS and Voice sandbox"):
# about 75 spoken words, so the alert's message is read to at most this many characters.
MAX_SPOKEN_MESSAGE = 200
MAX_SUBJECT_MESSAGE = 100
# Why AWS refused a text or a call, by (error code, Reason) as the End User Messaging SMS API
# Reference names them (ConflictException, ServiceQuotaExceededException: Reason).
_SMS_REFUSALS = {
    ("ConflictException", "DESTINATION_PHONE_NUMBER_NOT_VERIFIED"):
        "the number is not a verified destination, and the account is in the SMS and voice sandbox",
    ("ConflictException", "DESTINATION_PHONE_NUMBER_OPTED_OUT"): "the number has opted out (it replied STOP)",
    ("ServiceQuotaExceededException", "MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT"):
        "the account's monthly spend limit for texts is reached",
    ("ServiceQuotaExceededException", "MONTHLY_SPEND_LIMIT_REACHED_FOR_VOICE"):
        "the account's monthly spend limit for voice is reached",
    ("ServiceQuotaExceededException", "DAILY_DESTINATION_CALL_LIMIT"):
        "the daily limit of calls to this number is reached",
}
# SES v2 SendEmail errors that say the mail was refused, not that the call failed (SES API v2 Reference).
_EMAIL_REFUSALS = (
    "MessageRejected", "AccountSuspendedException", "SendingPausedException", "MailFromDomainNotVerifiedException",
    "LimitExceededException", "TooManyRequestsException",
)


def occurrence_of(alert: Mapping[str, Any]) -> str:
    """The alert's occurrence as a page records it: its ``raised_at``, "" when the alarm never raised it."""
    raised_at = alert.get("raised_at")
    return raised_at if isinstance(raised_at, str) else ""


def why_not_page(alert: Mapping[str, Any] | None, occurrence: str) -> str | None:
    """Why nothing is sent about ``alert`` for a round that notified of ``occurrence``; None: send."""
    if alert is None:
        return "the alert was deleted"
    status = status_of(alert)
    if status != ACTIVE:
        return f"the alert is {status}"
    if occurrence_of(alert) != occurrence:
        return "the alert was raised again since"
    return None


def usable_method(person: Person | None, method_id: str) -> tuple[ContactMethod | None, str | None]:
    """(the method to page on, None) or (None, why not): a rule only ever uses a verified method."""
    if person is None:
        return None, "the person is no longer in the people table"
    method = person.method(method_id)
    if method is None:
        return None, f"the person has no contact method {method_id!r} any more"
    if not method.verified:
        return None, f"contact method {method_id!r} is not verified"
    return method, None


def next_page(person: Person, after_minutes: int) -> tuple[int, ContactMethod] | None:
    """The person's first rule later than ``after_minutes``: it still runs whatever happened to this one."""
    return next((page for page in person.pages() if page[0] > after_minutes), None)


def code_held(codes: Mapping[str, Any], alert_id: str, occurrence: str) -> str | None:
    """The code the person holds already for this alert and occurrence (a text sent before, a call)."""
    return next(
        (code for code, entry in sorted(codes.items(), key=lambda pair: int(pair[0]))
         if _entry(entry) == (alert_id, occurrence)),
        None,
    )


def codes_to_free(codes: Mapping[str, Any], alerts: Mapping[str, Mapping[str, Any] | None]) -> list[str]:
    """The codes whose alert is resolved, deleted or raised again (``alerts``: the items by id, None if gone)."""
    freed = []
    for code, entry in codes.items():
        alert_id, occurrence = _entry(entry)
        alert = alerts.get(alert_id)
        if alert is None or status_of(alert) == RESOLVED or occurrence_of(alert) != occurrence:
            freed.append(code)
    return sorted(freed, key=int)


def claim_code(
    member: str, codes: Mapping[str, Any] | None, alert_id: str, occurrence: str, freed: list[str]
) -> tuple[str, dict[str, Any]]:
    """The lowest free code and the UpdateItem (no TableName) that takes it, freeing ``freed`` on the way.

    Conditional on the item as read: the person still exists, the code is still free (or still held by
    the closed alert it frees) and every code freed is still that closed alert's, so two pages choosing
    at once cannot both take one code; the loser reads the item again.
    """
    entry = {"alert_id": alert_id, "occurrence": occurrence}
    if codes is None:  # the item holds no map yet: it is created with the code
        code = free_code({})
        return code, {
            "Key": {"member": member},
            "UpdateExpression": "SET reply_codes = :codes",
            "ConditionExpression": "attribute_exists(#member) AND attribute_not_exists(reply_codes)",
            "ExpressionAttributeNames": {"#member": "member"},
            "ExpressionAttributeValues": {":codes": {code: entry}},
        }
    code = free_code({held: value for held, value in codes.items() if held not in freed})
    names: dict[str, str] = {"#member": "member", "#code": code}
    values: dict[str, Any] = {":entry": entry}
    conditions = ["attribute_exists(#member)"]
    removed = []
    for index, old in enumerate(freed):
        name = "#code" if old == code else f"#freed{index}"
        names[name] = old
        old_alert, old_occurrence = _entry(codes[old])
        values[f":alert{index}"], values[f":occurrence{index}"] = old_alert, old_occurrence
        conditions.append(f"reply_codes.{name}.alert_id = :alert{index} AND reply_codes.{name}.occurrence = :occurrence{index}")
        if old != code:
            removed.append(f"reply_codes.{name}")
    if code not in freed:
        conditions.append("attribute_not_exists(reply_codes.#code)")
    update = "SET reply_codes.#code = :entry" + (f" REMOVE {', '.join(removed)}" if removed else "")
    return code, {
        "Key": {"member": member},
        "UpdateExpression": update,
        "ConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": values,
    }


def _entry(entry: Any) -> tuple[Any, Any]:
    if not isinstance(entry, Mapping):
        return None, None
    return entry.get("alert_id"), entry.get("occurrence")


def septets(text: str) -> int | None:
    """GSM-7 septets ``text`` takes; None when a character is outside GSM-7 (the text goes as UCS-2)."""
    count = 0
    for character in text:
        if character in _GSM:
            count += 1
        elif character in _GSM_EXTENDED:
            count += 2
        else:
            return None
    return count


def sms_text(message: str, code: str) -> str:
    """The alert's message, cut to fit one message part with the reply instruction at its end."""
    ending = "\n" + reply_instruction(code)
    text = message + ending
    if _fits(text):
        return text
    # Cut the message shorter until it fits: a character may take two septets, so count, do not guess.
    kept = len(message)
    while kept > 0 and not _fits(message[:kept].rstrip() + _CUT + ending):
        kept -= 1
    return message[:kept].rstrip() + _CUT + ending


def _fits(text: str) -> bool:
    used = septets(text)
    return used <= GSM_PART_SEPTETS if used is not None else len(text) <= UCS2_PART_CHARACTERS


def voice_text(message: str, code: str) -> str:
    """What the call reads: the alert and how to act on it by a text back."""
    spoken = message if len(message) <= MAX_SPOKEN_MESSAGE else message[:MAX_SPOKEN_MESSAGE].rstrip() + "..."
    # A sentence's end makes text-to-speech pause before the instructions instead of running on into them.
    spoken = spoken if spoken.rstrip().endswith((".", "!", "?")) else spoken.rstrip() + "."
    return (f"This is an alert. {spoken} "
            f"To acknowledge, text back {code} a. To resolve, text back {code} r.")


def email_content(alert_id: str, message: str, links: Mapping[str, str]) -> dict[str, Any]:
    """SES v2 ``Content.Simple``: the alert, with a text part and an HTML part carrying the signed links."""
    first_line = message.splitlines()[0] if message.strip() else ""
    shown = first_line if len(first_line) <= MAX_SUBJECT_MESSAGE else first_line[:MAX_SUBJECT_MESSAGE].rstrip() + "..."
    text = (f"Alert {alert_id} is active.\n\n{message}\n\n"
            f"Acknowledge: {links['acknowledge']}\nResolve: {links['resolve']}\n")
    page = (f"<p>Alert <strong>{html.escape(alert_id)}</strong> is active.</p>"
            f"<p>{html.escape(message)}</p>"
            f'<p><a href="{html.escape(links["acknowledge"])}">Acknowledge</a> &middot; '
            f'<a href="{html.escape(links["resolve"])}">Resolve</a></p>')
    return {
        "Simple": {
            "Subject": {"Data": f"Alert {alert_id}: {shown}", "Charset": "UTF-8"},
            "Body": {"Text": {"Data": text, "Charset": "UTF-8"}, "Html": {"Data": page, "Charset": "UTF-8"}},
        }
    }


def refusal_reason(kind: str, error_code: str, reason: str | None, message: str) -> str | None:
    """Why AWS refused a send, as the channel reads it; None: not a refusal but a failure (retried)."""
    if kind == EMAIL:
        return f"SES refused it ({error_code}: {message})" if error_code in _EMAIL_REFUSALS else None
    known = _SMS_REFUSALS.get((error_code, reason))
    if known is not None:
        return f"AWS refused it: {known}"
    if error_code == "ThrottlingException":
        return "AWS throttled it"
    if error_code in ("ConflictException", "ServiceQuotaExceededException"):
        return f"AWS refused it ({error_code}{f' {reason}' if reason else ''}: {message})"
    return None


def channel_off_reason(kind: str) -> str:
    if kind == EMAIL:
        return "e-mail is off in this deployment (no alertEmailFrom)"
    return "texts and calls are off in this deployment (no smsOriginationIdentity)"


def refusal_text(member: str, alert_id: str, method: ContactMethod, reason: str,
                 following: tuple[int, ContactMethod] | None) -> str:
    """The channel's note: who was not reached, how, why, and what still runs."""
    then = (f"Their next rule still runs: {_A_KIND[following[1].type]} ({following[1].id}) at minute {following[0]}."
            if following is not None else "They have no later rule: only the channel post reached them.")
    return f"<@{member}>'s {KIND[method.type]} ({method.id}) about alert {alert_id} was not sent: {reason}. {then}"

"""What a text to the alert number means, and what the sender and the channel are told: no AWS client.

End User Messaging publishes every text a number receives to its two-way channel's SNS topic as one
JSON payload (End User Messaging SMS User Guide, "Example of a two-way SMS message payload for Amazon
SNS topics"). The sender is the person whose VERIFIED sms or voice method has that number; their
reply ``12a`` or ``12r`` names the alert their ``reply_codes`` hold under ``12`` and acts as them,
under the same occurrence rules as a Slack click (patterns_common.alert_status). Anything else is
refused and the sender is told why, in a text.

Keywords are End User Messaging's: a text that begins with a registered keyword is answered by AWS
itself, and the payload's ``messageKeyword`` names the keyword it matched. An opt-out keyword has
opted the number out already (AWS's own answer is the only text it gets now); the app tells the channel.
Which words opt out depends on the number (a US toll-free number takes STOP only, at the carrier),
so the app believes ``messageKeyword`` rather than keeping its own list per number type.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from patterns_common.alert_status import Outcome, mention
from patterns_common.people import InvalidPerson, Person, parse_person, parse_reply

# The opt-out keywords AWS requires and registers on a long or short code (End User Messaging SMS User
# Guide, "Required opt-out keywords"): a reply that begins with one opts the number out.
OPT_OUT_KEYWORDS = frozenset(
    {"ARRET", "CANCEL", "END", "OPT-OUT", "OPTOUT", "QUIT", "REMOVE", "STOP", "TD", "UNSUBSCRIBE"}
)
# HELP is answered by End User Messaging with the number's help response ("Keywords"): nothing to add.
HELP_KEYWORD = "HELP"

# What a text leads to.
ACT = "act"  # a known person's reply naming one of their codes: act_update
OPTED_OUT = "opted_out"  # an opt-out keyword: the channel is told, the sender is not texted
AWS_ANSWERED = "aws_answered"  # HELP: AWS answered it
STRANGER = "stranger"
SHARED_NUMBER = "shared_number"  # two people claim the number: nobody may act through it
NOT_A_REPLY = "not_a_reply"
UNKNOWN_CODE = "unknown_code"


class BadPayload(ValueError):
    """A message on the topic that is not End User Messaging's two-way payload."""


@dataclass(frozen=True)
class Inbound:
    """One text to the alert number, as End User Messaging published it."""

    origination_number: str  # the sender's phone
    destination_number: str  # the app's number
    keyword: str  # the registered keyword the text matched (AWS sends a placeholder when none)
    body: str
    inbound_message_id: str
    previous_published_message_id: str | None  # the message the sender is answering, when AWS knows it


def read_inbound(message: str) -> Inbound:
    """The payload in an SNS record's ``Message``; BadPayload when it is not one."""
    try:
        payload = json.loads(message)
    except (TypeError, ValueError):
        raise BadPayload("the message is not JSON") from None
    if not isinstance(payload, dict):
        raise BadPayload("the message is not a JSON object")
    fields = {}
    for name in ("originationNumber", "destinationNumber", "messageBody", "inboundMessageId"):
        value = payload.get(name)
        if not isinstance(value, str) or not value:
            raise BadPayload(f"{name} must be a non-empty string")
        fields[name] = value
    keyword, previous = payload.get("messageKeyword"), payload.get("previousPublishedMessageId")
    return Inbound(
        origination_number=fields["originationNumber"],
        destination_number=fields["destinationNumber"],
        keyword=keyword if isinstance(keyword, str) else "",
        body=fields["messageBody"],
        inbound_message_id=fields["inboundMessageId"],
        previous_published_message_id=previous if isinstance(previous, str) and previous else None,
    )


@dataclass(frozen=True)
class Decision:
    """What to do with a text: act (``member`` does ``action`` on ``alert_id``), or only answer and tell."""

    kind: str
    answer: str | None = None  # the text to send back; None: none (ACT's answer depends on the outcome)
    channel: str | None = None  # what the channel is told, or None
    member: str | None = None
    action: str | None = None  # acknowledge | resolve
    code: str | None = None
    alert_id: str | None = None
    occurrence: str | None = None


@dataclass(frozen=True)
class People:
    """The people table as read: every person it holds, and the members whose item could not be read."""

    persons: tuple[Person, ...]
    unreadable: tuple[str, ...]
    reply_codes: Mapping[str, Mapping[str, Any]]  # member -> the item's reply_codes

    def owners(self, number: str) -> list[Person]:
        return [person for person in self.persons if person.owns_number(number)]

    def name_of(self, account: str) -> str:
        """How a text names an account: the person's name, else the account as the item records it."""
        person = next((p for p in self.persons if p.member == account), None)
        return person.name if person is not None and person.name else account


def read_people(items: Iterable[Mapping[str, Any]]) -> People:
    """The people items as the functions read them; one that cannot be read is left out, named."""
    persons, unreadable, codes = [], [], {}
    for item in items:
        try:
            person = parse_person(item)
        except InvalidPerson as invalid:
            unreadable.append(invalid.member)
            continue
        persons.append(person)
        held = item.get("reply_codes")
        codes[person.member] = held if isinstance(held, Mapping) else {}
    return People(tuple(persons), tuple(unreadable), codes)


STRANGER_ANSWER = "Not done: this number is not the verified number of anyone the alerts page. Nothing was changed."
SHARED_NUMBER_ANSWER = (
    "Not done: this number is the verified number of more than one person, so a reply cannot say who acts. "
    "Ask an administrator to fix the people table."
)
NOT_A_REPLY_ANSWER = (
    "Not understood: answer an alert text with its code and a or r, such as 12a to acknowledge or 12r to resolve."
)


def decide(inbound: Inbound, people: People) -> Decision:
    """What a text asks for, checked against the people table: who sent it, and which alert its code names."""
    keyword = inbound.keyword.strip().upper()
    owners = people.owners(inbound.origination_number)
    if keyword in OPT_OUT_KEYWORDS:
        told = opted_out_text([person.member for person in owners], inbound.origination_number, keyword)
        return Decision(OPTED_OUT, channel=told)
    if keyword == HELP_KEYWORD:
        return Decision(AWS_ANSWERED)
    if not owners:
        return Decision(STRANGER, answer=STRANGER_ANSWER)
    if len(owners) > 1:
        return Decision(SHARED_NUMBER, answer=SHARED_NUMBER_ANSWER)
    [person] = owners
    reply = parse_reply(inbound.body)
    if reply is None:
        return Decision(NOT_A_REPLY, answer=NOT_A_REPLY_ANSWER, member=person.member)
    action, code = reply
    held = people.reply_codes.get(person.member, {}).get(code)
    alert_id = held.get("alert_id") if isinstance(held, Mapping) else None
    occurrence = held.get("occurrence") if isinstance(held, Mapping) else None
    if not isinstance(alert_id, str) or not alert_id or not isinstance(occurrence, str):
        answer = f"Not done: {code} is not the code of an open alert texted to you. Nothing was changed."
        return Decision(UNKNOWN_CODE, answer=answer, member=person.member, action=action, code=code)
    return Decision(ACT, member=person.member, action=action, code=code, alert_id=alert_id, occurrence=occurrence)


def opted_out_text(members: list[str], number: str, keyword: str) -> str | None:
    """The channel's notice of an opt-out, naming the people whose number it is; None: nobody's number."""
    if not members:
        return None
    who = " and ".join(mention(member) for member in members)
    return (
        f"{who}'s number {number} opted out of texts from the alert number ({keyword}): "
        f"End User Messaging sends it no more texts. Their next notification rule still runs."
    )


def answer_for(decision: Decision, outcome: Outcome, people: People) -> str:
    """The text answering a reply that was acted on, or why it was not."""
    alert = decision.alert_id
    if outcome.kind == "acted":
        return f"Done: you {outcome.status} alert {alert} at {outcome.at}. The channel is told."
    if outcome.kind == "already":
        who = "you" if outcome.by == decision.member else people.name_of(outcome.by or "someone")
        when = f" at {outcome.at}" if outcome.at else ""
        return f"Not done: alert {alert} was already {outcome.status} by {who}{when}."
    if outcome.kind == "earlier_occurrence":
        return (
            f"Not done: alert {alert} was raised again at {outcome.at}, after the text you answered. "
            "Answer the newest text about it."
        )
    if outcome.kind == "not_found":
        return f"Not done: alert {alert} no longer exists."
    return f"Not done: alert {alert} is {outcome.status}, which a reply cannot change."

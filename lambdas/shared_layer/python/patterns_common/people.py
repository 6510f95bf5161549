"""People and their notification rules: the people-table item validated, and the rules a page arms.

A person is one item of the people table (docs/reaching-people.md), keyed by ``member``, the Slack
member ID escalations and schedules already name. ``contact_methods`` are the person's phone numbers
and e-mail addresses (``sms``, ``voice``, ``email``), each with an ``id`` a rule names and whether it
was ``verified``; ``rules`` say which method is tried how many minutes after a round notifies the
person. ``contact: "slack"`` is the round's channel post, which every notified person gets at once: it
is the team's record and carries the buttons, so a ``slack`` rule is only ever at minute 0.

The same code checks an item an administrator writes (``python -m tools.people put``) and the item a
function reads, so nothing written can be refused later. Nothing given to the parser raises anything
but ``InvalidPerson``, naming the member and the field. Fields the app itself keeps on the item
(``RUNTIME_FIELDS``) are ignored when read and refused when written.

A text's reply code is 1 to 4 digits, unique among the person's open alerts: ``12a`` acknowledges the
alert whose text said 12, ``12r`` resolves it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

SLACK = "slack"
SMS, VOICE, EMAIL = "sms", "voice", "email"
PHONE_TYPES = (SMS, VOICE)
METHOD_TYPES = (SMS, VOICE, EMAIL)
FIELDS = ("member", "name", "contact_methods", "rules")
METHOD_FIELDS = ("id", "type", "address", "verified")
RULE_FIELDS = ("after_minutes", "contact")
# Kept on the item by the app, never by a person's file: pending verification codes, open reply codes.
RUNTIME_FIELDS = ("verifications", "reply_codes")
MAX_RULES = 10
MAX_METHODS = 10
MAX_AFTER_MINUTES = 60
MAX_NAME_LENGTH = 100
MEMBER = re.compile(r"[UW][A-Z0-9]{2,}")
METHOD_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,31}")
# E.164: a plus, a country code that does not start with 0, at most 15 digits in all (ITU-T E.164).
E164 = re.compile(r"\+[1-9][0-9]{1,14}")
# An address SES accepts is far looser than this; what is refused here is what cannot be one: no @,
# spaces, an empty part, a domain with no dot. 254 is the longest a path may carry (RFC 5321).
EMAIL_ADDRESS = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s.]+")
MAX_EMAIL_LENGTH = 254
MAX_REPLY_CODE = 9999
# "12a", "12 A", " 12r ": a code and a letter, as a person types them on a phone.
_REPLY = re.compile(r"\s*([0-9]{1,4})\s*([arAR])\s*")
REPLY_ACTIONS = {"a": "acknowledge", "r": "resolve"}


class InvalidPerson(ValueError):
    """A people item that cannot be read, naming the member and the field at fault."""

    def __init__(self, member: str, field: str, problem: str) -> None:
        super().__init__(f"person {member}: {field} {problem}")
        self.member, self.field, self.problem = member, field, problem


@dataclass(frozen=True)
class ContactMethod:
    id: str
    type: str  # sms | voice | email
    address: str
    verified: bool


@dataclass(frozen=True)
class Rule:
    after_minutes: int
    contact: str  # "slack" or a contact method's id


@dataclass(frozen=True)
class Person:
    member: str
    name: str | None
    contact_methods: tuple[ContactMethod, ...]
    rules: tuple[Rule, ...]

    def method(self, method_id: str) -> ContactMethod | None:
        return next((method for method in self.contact_methods if method.id == method_id), None)

    def pages(self) -> list[tuple[int, ContactMethod]]:
        """The contacts a round's notice arms, by minute: every rule but the channel post, on a verified method."""
        armed = []
        for rule in self.rules:
            method = self.method(rule.contact)
            if method is not None and method.verified:
                armed.append((rule.after_minutes, method))
        return sorted(armed, key=lambda pair: pair[0])

    def owns_number(self, number: str) -> bool:
        """Whether ``number`` is one of this person's verified phone numbers: their replies act as them."""
        return any(m.verified and m.type in PHONE_TYPES and m.address == number for m in self.contact_methods)


def parse_person(item: Mapping[str, Any], *, written: bool = False) -> Person:
    """The person an item describes; ``written``: the item comes from a person's file, not the table."""
    member = item.get("member") if isinstance(item, Mapping) else None
    shown = member if isinstance(member, str) else "?"

    def fail(field: str, problem: str) -> None:
        raise InvalidPerson(shown, field, problem)

    if not isinstance(item, Mapping):
        fail("item", "must be an object")
    if not isinstance(member, str) or not MEMBER.fullmatch(member):
        fail("member", f"must be a Slack member ID such as U0AAAAAA1, got {member!r}")
    allowed = FIELDS if written else FIELDS + RUNTIME_FIELDS
    for field in item:
        if field not in allowed:
            why = "is kept by the app; leave it out" if field in RUNTIME_FIELDS else f"is not a field (fields: {', '.join(FIELDS)})"
            fail(str(field), why)
    name = item.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME_LENGTH):
        fail("name", f"must be a non-empty string of at most {MAX_NAME_LENGTH} characters")
    methods = _methods(item.get("contact_methods", []), fail)
    rules = _rules(item.get("rules", []), methods, fail)
    return Person(member, name, methods, rules)


def _methods(value: Any, fail: Any) -> tuple[ContactMethod, ...]:
    if not isinstance(value, list):
        fail("contact_methods", "must be a list")
    if len(value) > MAX_METHODS:
        fail("contact_methods", f"must have at most {MAX_METHODS} methods, got {len(value)}")
    methods: list[ContactMethod] = []
    for index, entry in enumerate(value):
        field = f"contact_methods[{index}]"
        if not isinstance(entry, Mapping):
            fail(field, "must be an object")
        for key in entry:
            if key not in METHOD_FIELDS:
                fail(f"{field}.{key}", f"is not a field (fields: {', '.join(METHOD_FIELDS)})")
        method_id = entry.get("id")
        if not isinstance(method_id, str) or not METHOD_ID.fullmatch(method_id) or method_id == SLACK:
            fail(f"{field}.id", f"must be 1-32 lower-case letters, digits or dashes, not {SLACK!r}, got {method_id!r}")
        if any(method.id == method_id for method in methods):
            fail(f"{field}.id", f"{method_id!r} is used twice")
        kind = entry.get("type")
        if kind not in METHOD_TYPES:
            fail(f"{field}.type", f"must be one of {', '.join(METHOD_TYPES)}, got {kind!r}")
        address = entry.get("address")
        if kind in PHONE_TYPES and not (isinstance(address, str) and E164.fullmatch(address)):
            fail(f"{field}.address", f"must be a phone number in E.164 form such as +4915112345678, got {address!r}")
        if kind == EMAIL and not (
            isinstance(address, str) and len(address) <= MAX_EMAIL_LENGTH and EMAIL_ADDRESS.fullmatch(address)
        ):
            fail(f"{field}.address", f"must be an e-mail address such as ana@example.com, got {address!r}")
        verified = entry.get("verified", False)
        if not isinstance(verified, bool):
            fail(f"{field}.verified", f"must be true or false, got {verified!r}")
        methods.append(ContactMethod(method_id, kind, address, verified))
    return tuple(methods)


def _rules(value: Any, methods: tuple[ContactMethod, ...], fail: Any) -> tuple[Rule, ...]:
    if not isinstance(value, list):
        fail("rules", "must be a list")
    if len(value) > MAX_RULES:
        fail("rules", f"must have at most {MAX_RULES} rules, got {len(value)}")
    ids = [method.id for method in methods]
    rules: list[Rule] = []
    for index, entry in enumerate(value):
        field = f"rules[{index}]"
        if not isinstance(entry, Mapping):
            fail(field, "must be an object")
        for key in entry:
            if key not in RULE_FIELDS:
                fail(f"{field}.{key}", f"is not a field (fields: {', '.join(RULE_FIELDS)})")
        minutes = _whole_number(entry.get("after_minutes"))
        if minutes is None or not 0 <= minutes <= MAX_AFTER_MINUTES:
            fail(f"{field}.after_minutes", f"must be a whole number of minutes from 0 to {MAX_AFTER_MINUTES}, got {entry.get('after_minutes')!r}")
        contact = entry.get("contact")
        if contact == SLACK:
            if minutes != 0:
                fail(f"{field}.after_minutes", "must be 0 for slack: the channel post is made when the round notifies")
        elif contact not in ids:
            fail(f"{field}.contact", f"must be {SLACK!r} or a contact method's id ({', '.join(ids) or 'none defined'}), got {contact!r}")
        rule = Rule(minutes, contact)
        if rule in rules:
            fail(field, f"repeats {contact!r} at minute {minutes}")
        rules.append(rule)
    return tuple(rules)


def _whole_number(value: Any) -> int | None:
    """An int as JSON or DynamoDB (Decimal) writes one; a bool, a fraction or anything else is not."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        return int(value)
    return None


def reply_instruction(code: str) -> str:
    """How every alert text ends."""
    return f"reply {code}a to acknowledge, {code}r to resolve"


def parse_reply(body: str) -> tuple[str, str] | None:
    """(action, code) a reply asks for, or None when it is not a reply code."""
    match = _REPLY.fullmatch(body)
    if match is None:
        return None
    return REPLY_ACTIONS[match.group(2).lower()], str(int(match.group(1)))


def free_code(held: Mapping[str, Any]) -> str:
    """The lowest code no open alert of the person holds (``held``: code -> what holds it), "1" first.

    At most MAX_REPLY_CODE alerts can be open for one person at once; the caller frees the codes of
    closed alerts before asking, so this is never full in practice, and a full set raises ValueError.
    """
    for number in range(1, MAX_REPLY_CODE + 1):
        if str(number) not in held:
            return str(number)
    raise ValueError(f"every reply code 1-{MAX_REPLY_CODE} is held")


def summary(person: Person) -> list[str]:
    """A person's methods (verified or not) and rules by minute, one line each: what `tools.people show`
    and `/oncall rules` print."""
    lines = [f"{person.member}" + (f" ({person.name})" if person.name else "")]
    lines.append("Contact methods:" if person.contact_methods else "Contact methods: none")
    for method in person.contact_methods:
        state = "verified" if method.verified else "not verified: never used for paging"
        lines.append(f"  {method.id}: {method.type} {method.address} ({state})")
    lines.append("Rules, by minute after a round notifies you:" if person.rules else "Rules: none (only the channel post)")
    for rule in sorted(person.rules, key=lambda rule: rule.after_minutes):
        method = person.method(rule.contact)
        if method is None:  # slack
            lines.append(f"  {rule.after_minutes} min: slack (the channel post, made for everyone notified)")
        else:
            unused = "" if method.verified else " (not used until verified)"
            lines.append(f"  {rule.after_minutes} min: {method.id} ({method.type} {method.address}){unused}")
    return lines


def person_update(member: str, after: Mapping[str, Any], fields: tuple[str, ...],
                  before: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An UpdateItem of ``fields`` only, so what else the item keeps (reply codes...) survives: SET the ones
    ``after`` has, REMOVE the others. With ``before`` (the fields as read, absent ones absent), written only
    if the item still holds exactly those: DynamoDB compares lists and maps whole (API Reference,
    "Condition": "EQ is supported for all data types, including lists and maps")."""
    names = {f"#f{index}": field for index, field in enumerate(fields)}
    values: dict[str, Any] = {}
    sets, removes, unchanged = [], [], []
    for alias, field in names.items():
        if field in after:
            values[f":a{alias[2:]}"] = after[field]
            sets.append(f"{alias} = :a{alias[2:]}")
        else:
            removes.append(alias)
        if before is not None:
            if field in before:
                values[f":b{alias[2:]}"] = before[field]
                unchanged.append(f"{alias} = :b{alias[2:]}")
            else:
                unchanged.append(f"attribute_not_exists({alias})")
    expression = " ".join(part for part in (
        f"SET {', '.join(sets)}" if sets else "", f"REMOVE {', '.join(removes)}" if removes else "") if part)
    update: dict[str, Any] = {"Key": {"member": member}, "UpdateExpression": expression,
                              "ExpressionAttributeNames": names}
    if values:
        update["ExpressionAttributeValues"] = values
    if unchanged:
        update["ConditionExpression"] = " AND ".join(unchanged)
    return update

"""A person's own contact methods and notification rules from Slack (/oncall contact|rules|rule), as plain logic.

``/oncall contact add sms|voice|email <address> [<id>]`` stores a method unverified with a pending
verification and sends it a code (the ids default to ``mobile``, ``mobile-call`` and ``work-mail``, the
issue's example); ``/oncall contact verify <id> <code>`` marks it verified; ``/oncall contact remove
<id>`` removes it and the rules naming it; ``/oncall rules`` shows the caller's methods and rules;
``/oncall rule <id> <minutes>`` adds a rule (0-60; ``slack`` only at 0) and ``/oncall rule <id> off``
removes that method's rules. A person changes only their own item (their Slack member ID).

Every change is checked with ``parse_person`` as a written item (the checks ``tools.people put`` makes)
and written only over the fields it was worked out from (``Write.before``). A code is 6 random digits
(``secrets``), kept only as an HMAC-SHA256 under a random salt, for 10 minutes and 5 wrong tries; then
the person adds the method again. In End User Messaging's sandbox a text or call to a number not yet
verified with AWS is refused, so the code is then AWS's own (``SendDestinationNumberVerificationCode``)
and checked by AWS (``VerifyDestinationNumber``): the pending verification says which (``via``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from patterns_common.people import (
    EMAIL,
    MAX_AFTER_MINUTES,
    MEMBER,
    SMS,
    VOICE,
    InvalidPerson,
    Person,
    parse_person,
    summary,
)

VERBS = ("contact", "rules", "rule")
DEFAULT_IDS = {SMS: "mobile", VOICE: "mobile-call", EMAIL: "work-mail"}
CODE_DIGITS = 6
CODE_SECONDS = 600
MAX_WRONG_TRIES = 5
VIA_APP, VIA_SANDBOX = "app", "aws-sandbox"
# The item's fields a command writes: never name (the administrator's) nor the app's reply codes.
WRITTEN = ("contact_methods", "rules", "verifications")
USAGE = (
    "`/oncall contact add sms|voice|email <address> [<id>]` adds a way to reach you and sends it a code "
    "(a phone number in E.164 form such as +4915112345678; the id defaults to mobile, mobile-call or work-mail); "
    "`/oncall contact verify <id> <code>` confirms it (the code lasts 10 minutes and 5 tries); "
    "`/oncall contact remove <id>` removes it and its rules; `/oncall rules` shows your methods and rules; "
    "`/oncall rule <id> <minutes>` tries that method so many minutes (0-60) after a round notifies you "
    "unless the alert was acknowledged or resolved by then; `/oncall rule <id> off` removes its rules. "
    "Only verified methods are used."
)


class PeopleRefused(Exception):
    """Answered to the person who typed the command, changing nothing."""


@dataclass(frozen=True)
class PeopleCommand:
    verb: str  # add, verify, remove, rules, rule
    method_id: str | None = None
    kind: str | None = None  # add: sms, voice or email
    address: str | None = None  # add
    code: str | None = None  # verify
    minutes: int | None = None  # rule; None: off


@dataclass(frozen=True)
class Write:
    """The person's ``WRITTEN`` fields, written only while the item still holds ``before``, then ``answer``."""

    member: str
    before: dict[str, Any]  # the fields as read; an absent one absent
    after: dict[str, Any]
    answer: str


@dataclass(frozen=True)
class Delivery:
    """A code to send: to ``address`` by ``kind``; the handler sends it or, in the sandbox, has AWS send one."""

    kind: str
    address: str
    code: str
    method_id: str


def is_people_command(text: str) -> bool:
    words = text.split()
    return bool(words) and words[0] in VERBS


def check_member(member: str) -> None:
    """Slack names the caller in every signed request; without a member ID there is no item of theirs."""
    if not MEMBER.fullmatch(member):
        raise PeopleRefused("Your Slack member ID is not in the request: only a Slack member's own contact methods can be changed.")


def parse_command(text: str) -> PeopleCommand:
    words = text.split()
    match words:
        case ["rules"]:
            return PeopleCommand("rules")
        case ["rule", method_id, "off"]:
            return PeopleCommand("rule", method_id)
        case ["rule", method_id, minutes]:
            if not minutes.isdigit() or int(minutes) > MAX_AFTER_MINUTES:
                raise PeopleRefused(f"Not changed: minutes are a whole number from 0 to {MAX_AFTER_MINUTES} (or off), got {minutes!r}.")
            return PeopleCommand("rule", method_id, minutes=int(minutes))
        case ["contact", "add", kind, address, *named] if kind in DEFAULT_IDS and len(named) <= 1:
            return PeopleCommand("add", named[0] if named else DEFAULT_IDS[kind], kind=kind, address=address)
        case ["contact", "verify", method_id, code]:
            return PeopleCommand("verify", method_id, code=code)
        case ["contact", "remove", method_id]:
            return PeopleCommand("remove", method_id)
    raise PeopleRefused(USAGE)


def fields_of(item: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``WRITTEN`` fields an item holds (none for a person with no item yet)."""
    return {field: item[field] for field in WRITTEN if item is not None and field in item}


def rules(item: Mapping[str, Any] | None, member: str) -> str:
    if item is None:
        return "You have no contact methods or rules: a round notifies you in the channel only. " + USAGE
    return "\n".join(summary(_person(item)))


def add(item: Mapping[str, Any] | None, member: str, kind: str, address: str, method_id: str, now: float) -> tuple[Write, Delivery]:
    """The method stored unverified with a new pending code; an id held by an unverified method is added
    again (a new code, the old one void), one held by a verified method is refused."""
    before = fields_of(item)
    methods = [dict(m) for m in before.get("contact_methods", [])]
    held = next((m for m in methods if m.get("id") == method_id), None)
    if held is not None and held.get("verified") is True:
        raise PeopleRefused(f"Not added: you already have a verified method {method_id!r}; "
                            f"`/oncall contact remove {method_id}` first, or name another id.")
    methods = [m for m in methods if m.get("id") != method_id] + [
        {"id": method_id, "type": kind, "address": address, "verified": False}]
    code = f"{secrets.randbelow(10**CODE_DIGITS):0{CODE_DIGITS}d}"
    salt = secrets.token_hex(16)
    pending = {"via": VIA_APP, "salt": salt, "code_hash": _hash(salt, code),
               "expires_at": int(now) + CODE_SECONDS, "wrong_tries": 0}
    after = {**before, "contact_methods": methods,
             "verifications": {**before.get("verifications", {}), method_id: pending}}
    _check(item, member, after, "Not added")
    sent = {SMS: "texted a 6-digit code to it", VOICE: "called it with a 6-digit code", EMAIL: "e-mailed a 6-digit code to it"}[kind]
    answer = (f"Added {method_id} ({kind} {address}), not verified yet: I {sent}. "
              f"Type `/oncall contact verify {method_id} <code>` within 10 minutes.")
    return Write(member, before, after, answer), Delivery(kind, address, code, method_id)


def through_sandbox(write: Write, method_id: str, destination_id: str, registered_before: bool) -> Write:
    """The add when the account's End User Messaging sandbox refused the number: AWS sent its own code to
    the number (``destination_id``, the sandbox's verified destination number), which AWS checks."""
    pending = {**write.after["verifications"][method_id], "via": VIA_SANDBOX, "destination_id": destination_id}
    for field in ("salt", "code_hash"):
        pending.pop(field)
    after = {**write.after, "verifications": {**write.after["verifications"], method_id: pending}}
    method = next(m for m in after["contact_methods"] if m["id"] == method_id)
    address = method["address"]
    how = f"texted its own verification code to {address}" if method["type"] == SMS else f"called {address} with its own verification code"
    answer = (f"Added {method_id} ({method['type']} {method['address']}), not verified yet. This AWS account's "
              f"End User Messaging is in its sandbox, where only numbers verified with AWS get texts and calls, so "
              f"AWS {how}"
              + (" (the number was registered with AWS before: an earlier code is void)" if registered_before else "")
              + f". Type `/oncall contact verify {method_id} <code>` with AWS's code.")
    return replace(write, after=after, answer=answer)


def pending_of(item: Mapping[str, Any] | None, member: str, method_id: str, now: float) -> dict[str, Any]:
    """The pending verification ``/oncall contact verify`` checks a code against, or why there is none."""
    person = _person(item) if item is not None else None
    method = person.method(method_id) if person is not None else None
    if method is None:
        raise PeopleRefused(f"You have no contact method {method_id!r}. `/oncall rules` lists yours.")
    if method.verified:
        raise PeopleRefused(f"{method_id} is verified already.")
    pending = (item or {}).get("verifications", {}).get(method_id)
    if not isinstance(pending, Mapping):
        raise PeopleRefused(f"{method_id} has no code waiting: `/oncall contact add {method.type} {method.address} {method_id}` sends one.")
    if now >= int(pending.get("expires_at", 0)):
        raise PeopleRefused(f"The code for {method_id} has expired (codes last 10 minutes): "
                            f"`/oncall contact add {method.type} {method.address} {method_id}` sends a new one.")
    return dict(pending)


def code_matches(pending: Mapping[str, Any], code: str) -> bool:
    """Whether ``code`` is the app's code of ``pending`` (compared in constant time)."""
    return hmac.compare_digest(_hash(str(pending["salt"]), code.strip()), str(pending["code_hash"]))


def verified(item: Mapping[str, Any], member: str, method_id: str) -> Write:
    """The method verified and its pending verification gone; the answer names the rules that now use it."""
    before = fields_of(item)
    methods = [{**m, "verified": True} if m.get("id") == method_id else dict(m) for m in before.get("contact_methods", [])]
    verifications = {k: v for k, v in before.get("verifications", {}).items() if k != method_id}
    after = {**before, "contact_methods": methods, "verifications": verifications}
    person = _check(item, member, after, "Not verified")
    using = sorted(rule.after_minutes for rule in person.rules if rule.contact == method_id)
    if using:
        now_used = "Your rules now use it at minute " + ", ".join(str(minute) for minute in using) + " after a round notifies you."
    else:
        now_used = f"No rule uses it yet: `/oncall rule {method_id} <minutes>` adds one."
    return Write(member, before, after, f"{method_id} is verified. {now_used}")


def wrong_code(item: Mapping[str, Any], member: str, method_id: str) -> Write:
    """One more wrong try; the fifth voids the code."""
    before = fields_of(item)
    pending = dict(before["verifications"][method_id])
    tries = int(pending.get("wrong_tries", 0)) + 1
    verifications = dict(before["verifications"])
    if tries >= MAX_WRONG_TRIES:
        del verifications[method_id]
        method = next(m for m in before["contact_methods"] if m.get("id") == method_id)
        answer = (f"That code is wrong, and that was the {MAX_WRONG_TRIES}th wrong try: the code is void. "
                  f"`/oncall contact add {method['type']} {method['address']} {method_id}` sends a new one.")
    else:
        verifications[method_id] = {**pending, "wrong_tries": tries}
        left = MAX_WRONG_TRIES - tries
        answer = f"That code is wrong: {method_id} is not verified. {left} {'try' if left == 1 else 'tries'} left."
    return Write(member, before, {**before, "verifications": verifications}, answer)


def remove(item: Mapping[str, Any] | None, member: str, method_id: str) -> Write:
    person = _person(item) if item is not None else None
    if person is None or person.method(method_id) is None:
        raise PeopleRefused(f"You have no contact method {method_id!r}. `/oncall rules` lists yours.")
    before = fields_of(item)
    after = {**before,
             "contact_methods": [dict(m) for m in before.get("contact_methods", []) if m.get("id") != method_id],
             "rules": [dict(r) for r in before.get("rules", []) if r.get("contact") != method_id],
             "verifications": {k: v for k, v in before.get("verifications", {}).items() if k != method_id}}
    _check(item, member, after, "Not removed")
    dropped = len(before.get("rules", [])) - len(after["rules"])
    return Write(member, before, after, f"Removed {method_id}" + (f" and its {dropped} rule(s)." if dropped else "."))


def rule(item: Mapping[str, Any] | None, member: str, method_id: str, minutes: int | None) -> Write:
    """A rule added at ``minutes``, or (None) every rule of the method removed."""
    before = fields_of(item)
    current = [dict(r) for r in before.get("rules", [])]
    if minutes is None:
        kept = [r for r in current if r.get("contact") != method_id]
        if len(kept) == len(current):
            raise PeopleRefused(f"You have no rule using {method_id!r}. `/oncall rules` lists yours.")
        after = {**before, "rules": kept}
        _check(item, member, after, "Not changed")
        return Write(member, before, after, f"Removed your rules using {method_id}.")
    after = {**before, "rules": [*current, {"after_minutes": minutes, "contact": method_id}]}
    person = _check(item, member, after, "Not changed")
    method = person.method(method_id)
    if method is None:  # slack
        answer = "Added: slack at minute 0 (the channel post, which every round makes for everyone it notifies)."
    else:
        answer = f"Added: {method_id} ({method.type} {method.address}) {minutes} minute(s) after a round notifies you."
        if not method.verified:
            answer += f" {method_id} is not verified yet: it is not used until `/oncall contact verify {method_id} <code>`."
    return Write(member, before, after, answer)


def _person(item: Mapping[str, Any]) -> Person:
    try:
        return parse_person(item)
    except InvalidPerson as invalid:
        raise PeopleRefused(f"Your people item cannot be read ({invalid}); ask an administrator to fix it "
                            f"with `python -m tools.people put`.") from invalid


def _check(item: Mapping[str, Any] | None, member: str, after: Mapping[str, Any], refusal: str) -> Person:
    """``after`` checked as ``tools.people put`` checks a file: the person's fields, written."""
    written = {"member": member, **{k: v for k, v in (item or {}).items() if k == "name"},
               **{k: v for k, v in after.items() if k != "verifications"}}
    try:
        return parse_person(written, written=True)
    except InvalidPerson as invalid:
        raise PeopleRefused(f"{refusal}: {invalid}.") from invalid


def _hash(salt: str, code: str) -> str:
    return hmac.new(salt.encode(), code.encode(), hashlib.sha256).hexdigest()

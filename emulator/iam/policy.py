"""IAM policy documents evaluated as AWS evaluates them within one account.

Effect Allow/Deny, Action/NotAction, Resource/NotResource, Principal (resource-based policies) and
the condition operators the app and CDK write. An explicit Deny wins, then any Allow; no Allow is
an implicit deny (IAM User Guide, "Policy evaluation logic"). Wildcards: ``*`` is any run of
characters, ``?`` one, actions match case-insensitively, resources case-sensitively (IAM JSON
policy elements: Action, Resource).

Documents are compiled once per text, and decisions are kept per (documents, request): a role's
policies change only when someone puts a new document, whose text is then a new key.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

ALLOW, DENY = "Allow", "Deny"
# A request whose resource the emulator does not resolve (an operation it has no resolver for): a
# statement matches it on its action alone, so no grant that AWS would honour is refused.
ANY_RESOURCE = None


def _pattern(value: str, ignore_case: bool) -> re.Pattern:
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in value)
    return re.compile(body, re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL)


def _listed(value: Any) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


@dataclass(frozen=True)
class _Condition:
    operator: str
    key: str
    values: tuple[str, ...]

    def holds(self, context: Mapping[str, str]) -> bool:
        operator = self.operator
        if_exists = operator.endswith("IfExists")
        if if_exists:
            operator = operator[: -len("IfExists")]
        actual = context.get(self.key)
        if operator == "Null":
            return (actual is None) == (self.values[0].lower() == "true")
        negated = "Not" in operator
        if actual is None:
            # A missing key fails a condition, except a negated one (and any ...IfExists).
            return if_exists or negated
        base = operator.replace("Not", "")
        if base == "StringEquals":
            matched = actual in self.values
        elif base == "StringEqualsIgnoreCase":
            matched = actual.lower() in (v.lower() for v in self.values)
        elif base in ("StringLike", "ArnLike", "ArnEquals"):
            matched = any(_pattern(v, ignore_case=False).fullmatch(actual) for v in self.values)
        elif base == "Bool":
            matched = actual.lower() in self.values
        else:  # an operator the emulator does not evaluate: never satisfied (an Allow under it grants nothing)
            return False
        return matched != negated


@dataclass(frozen=True)
class _Statement:
    effect: str
    actions: tuple[re.Pattern, ...]
    not_action: bool
    resources: tuple[re.Pattern, ...] | None  # None: the statement names no resource (a trust policy)
    not_resource: bool
    principals: tuple[tuple[str, re.Pattern], ...] | None  # (kind, pattern); None: an identity policy
    conditions: tuple[_Condition, ...]

    def applies(self, action: str, resource: str | None, context: Mapping[str, str],
                principal: tuple[str, str] | None) -> bool:
        if any(p.fullmatch(action) for p in self.actions) == self.not_action:
            return False
        if resource is not ANY_RESOURCE and self.resources is not None:
            if any(p.fullmatch(resource) for p in self.resources) == self.not_resource:
                return False
        if self.principals is not None:
            if principal is None or not any(
                kind == principal[0] and p.fullmatch(principal[1]) or kind == "*" for kind, p in self.principals
            ):
                return False
        return all(c.holds(context) for c in self.conditions)


@dataclass(frozen=True)
class Policy:
    statements: tuple[_Statement, ...]


@functools.lru_cache(maxsize=4096)
def compile_policy(document: str) -> Policy:
    """A policy document (JSON text, as IAM stores it) compiled for evaluation."""
    parsed = json.loads(document) if document else {}
    statements = []
    for raw in _listed(parsed.get("Statement")):
        actions = raw.get("Action", raw.get("NotAction"))
        resources = raw.get("Resource", raw.get("NotResource"))
        principal = raw.get("Principal", raw.get("NotPrincipal"))
        statements.append(_Statement(
            effect=raw.get("Effect", ALLOW),
            actions=tuple(_pattern(a, ignore_case=True) for a in _listed(actions)),
            not_action="NotAction" in raw,
            resources=None if resources is None else tuple(_pattern(r, ignore_case=False) for r in _listed(resources)),
            not_resource="NotResource" in raw,
            principals=None if principal is None else _principals(principal),
            conditions=tuple(
                _Condition(operator, key.lower(), tuple(str(v).lower() if operator.startswith("Bool") else str(v)
                                                        for v in _listed(values)))
                for operator, keys in (raw.get("Condition") or {}).items()
                for key, values in keys.items()
            ),
        ))
    return Policy(tuple(statements))


_ACCOUNT = re.compile(r"^(?:arn:aws:iam::)?(\d{12})(?::root)?$")


def _principals(principal: Any) -> tuple[tuple[str, re.Pattern], ...]:
    if principal == "*":
        return (("*", re.compile(".*")),)
    return tuple(_principal(kind, value) for kind, values in principal.items() for value in _listed(values))


def _principal(kind: str, value: str) -> tuple[str, re.Pattern]:
    if kind == "AWS" and value == "*":
        return ("*", re.compile(".*"))
    account = _ACCOUNT.match(value) if kind == "AWS" else None
    if account:  # the account (its ID or root): every role and session of it
        return (kind, re.compile(rf"arn:aws:(?:iam|sts)::{account.group(1)}:.*"))
    return (kind, _pattern(value, ignore_case=kind == "Service"))


@functools.lru_cache(maxsize=65536)
def _decide(documents: tuple[str, ...], action: str, resource: str | None, context: tuple[tuple[str, str], ...],
            principal: tuple[str, str] | None) -> str | None:
    allowed = False
    context_map = dict(context)
    for document in documents:
        for statement in compile_policy(document).statements:
            if statement.applies(action, resource, context_map, principal):
                if statement.effect == DENY:
                    return DENY
                allowed = True
    return ALLOW if allowed else None


def decide(documents: Iterable[str], action: str, resource: str | None, context: Mapping[str, str] | None = None,
           principal: tuple[str, str] | None = None) -> str | None:
    """``Deny`` (an explicit deny), ``Allow``, or None (no statement allows: an implicit deny).

    ``principal`` is ``(kind, value)`` — ``("AWS", role or session ARN)`` or ``("Service",
    "events.amazonaws.com")`` — for resource-based and trust policies, whose statements name one.
    """
    # Condition keys are case-insensitive (IAM JSON policy elements: Condition).
    keys = tuple(sorted((key.lower(), value) for key, value in (context or {}).items()))
    return _decide(tuple(documents), action, resource, keys, principal)

"""Signed links that let the person an alert notified acknowledge or resolve it from the message.

A link carries a token: the claim (alert, user, action, issue time, expiry) in base64url JSON, a dot,
and the HMAC-SHA256 of the claim under a key the stack keeps in Secrets Manager. The token is the only thing
the endpoint trusts; it holds no task token and no secret, and the key never leaves the functions
that sign and check. Verification compares signatures in constant time before reading the claim.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

ACTIONS = ("acknowledge", "resolve")
# The query parameter an action link carries its token in.
TOKEN_PARAMETER = "t"
# A link outlives its notification by a day: long enough to act on a page read late, short enough
# that a forwarded or leaked message stops working.
LINK_LIFETIME_SECONDS = 24 * 3600
# Domain separation: a signature made with the key for anything else is never a valid token.
_SIGNED_PREFIX = b"alert-action.v1."
# Longest token accepted before any work is done (alert ids and users are bounded far below this).
MAX_TOKEN_LENGTH = 2048


class InvalidActionToken(Exception):
    """The token is malformed, tampered with or signed with another key."""


class ExpiredActionToken(InvalidActionToken):
    """The token is genuine but its expiry has passed."""


@dataclass(frozen=True)
class ActionClaim:
    alert_id: str
    user: str
    action: str
    expires_at: int
    # When the link was made (epoch seconds): a link made before the alert was raised again belongs
    # to an earlier occurrence and must not act on the new one. None: LINK_LIFETIME_SECONDS before expiry.
    issued_at: int | None = None

    @property
    def issued(self) -> int:
        return self.issued_at if self.issued_at is not None else self.expires_at - LINK_LIFETIME_SECONDS


def sign(key: bytes, claim: ActionClaim) -> str:
    if claim.action not in ACTIONS:
        raise ValueError(f"action must be one of {ACTIONS}, got {claim.action!r}")
    body = {"a": claim.alert_id, "u": claim.user, "x": claim.action, "e": claim.expires_at}
    if claim.issued_at is not None:
        body["i"] = claim.issued_at
    encoded = _b64encode(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode())
    return f"{encoded}.{_b64encode(_mac(key, encoded))}"


def verify(key: bytes, token: Any, *, now: float) -> ActionClaim:
    """The claim a genuine, unexpired token carries; InvalidActionToken (or ExpiredActionToken) otherwise."""
    well_formed = isinstance(token, str) and token.isascii() and 0 < len(token) <= MAX_TOKEN_LENGTH
    if not well_formed or token.count(".") != 1:
        raise InvalidActionToken("malformed token")
    encoded, signature = token.split(".")
    try:
        given = _b64decode(signature)
    except (binascii.Error, ValueError):
        raise InvalidActionToken("malformed signature") from None
    if not hmac.compare_digest(given, _mac(key, encoded)):
        raise InvalidActionToken("bad signature")
    try:
        body = json.loads(_b64decode(encoded))
        claim = ActionClaim(body["a"], body["u"], body["x"], body["e"], body.get("i"))
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise InvalidActionToken("malformed claim") from None
    well_typed = (
        isinstance(claim.alert_id, str)
        and isinstance(claim.user, str)
        and claim.action in ACTIONS
        and _is_integer(claim.expires_at)
        and (claim.issued_at is None or (_is_integer(claim.issued_at) and claim.issued_at <= claim.expires_at))
    )
    if not well_typed:
        raise InvalidActionToken("malformed claim")
    if claim.expires_at <= now:
        raise ExpiredActionToken("expired")
    return claim


def action_url(base_url: str, token: str) -> str:
    """The link to the endpoint (its function URL, which ends with '/') for one token."""
    return f"{base_url}?{urlencode({TOKEN_PARAMETER: token})}"


def links_for(
    key: bytes, base_url: str, *, alert_id: str, user: str, expires_at: int, issued_at: int | None = None
) -> dict[str, str]:
    """One user's links for an alert, by action: {"acknowledge": url, "resolve": url}."""
    return {
        action: action_url(base_url, sign(key, ActionClaim(alert_id, user, action, expires_at, issued_at)))
        for action in ACTIONS
    }


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _mac(key: bytes, encoded: str) -> bytes:
    return hmac.new(key, _SIGNED_PREFIX + encoded.encode("ascii"), hashlib.sha256).digest()


def _b64encode(raw: bytes) -> str:
    # Equivalent mutants: no encoding of ours ends with "X" (a claim ends with "}", a signature's last
    # character carries four bits), so stripping more changes nothing; codec names ignore case.
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")  # pragma: no mutate


def _b64decode(text: str) -> bytes:
    """Strict: the one canonical spelling only, so a token cannot be altered and still verify."""
    # Equivalent mutants: Python ignores padding beyond what is needed, and the message is never shown
    # (verify turns every ValueError into "malformed ...").
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))  # pragma: no mutate
    if _b64encode(raw) != text:
        raise ValueError("not canonical base64url")  # pragma: no mutate
    return raw

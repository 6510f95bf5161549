"""Signed links that let the person an alert notified acknowledge or resolve it from the message.

A link carries a token: the claim (alert, user, action, expiry, occurrence) in base64url JSON, a dot,
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
import time
from collections.abc import Callable, Sequence
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


class ForeignActionToken(InvalidActionToken):
    """The token is well formed but not signed with the key it was checked against."""


@dataclass(frozen=True)
class ActionClaim:
    alert_id: str
    user: str
    action: str
    expires_at: int
    # The occurrence the link was made for: the alert item's raised_at when its execution read it
    # (None: the alarm had not raised it). A link of an earlier occurrence must not act on a later
    # one. The item's own value, not the signer's clock: two functions' clocks need not agree.
    occurrence: str | None = None


def sign(key: bytes, claim: ActionClaim) -> str:
    if claim.action not in ACTIONS:
        raise ValueError(f"action must be one of {ACTIONS}, got {claim.action!r}")
    body = {"a": claim.alert_id, "u": claim.user, "x": claim.action, "e": claim.expires_at}
    if claim.occurrence is not None:
        body["o"] = claim.occurrence
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
        raise ForeignActionToken("bad signature")
    try:
        body = json.loads(_b64decode(encoded))
        claim = ActionClaim(body["a"], body["u"], body["x"], body["e"], body.get("o"))
    except (binascii.Error, ValueError, KeyError, TypeError):
        raise InvalidActionToken("malformed claim") from None
    well_typed = (
        isinstance(claim.alert_id, str)
        and isinstance(claim.user, str)
        and claim.action in ACTIONS
        and _is_integer(claim.expires_at)
        and (claim.occurrence is None or isinstance(claim.occurrence, str))
    )
    if not well_typed:
        raise InvalidActionToken("malformed claim")
    if claim.expires_at <= now:
        raise ExpiredActionToken("expired")
    return claim


def verify_with_any(keys: Sequence[bytes], token: Any, *, now: float) -> ActionClaim:
    """The claim of a token signed with any of ``keys``; ForeignActionToken if none signed it."""
    for key in keys:
        try:
            return verify(key, token, now=now)
        except ForeignActionToken:
            continue
    raise ForeignActionToken("bad signature")


class ActionLinkKeys:
    """The keys the endpoint accepts links under: the signing key's current version and the one before.

    A rotation (put-secret-value) makes the new value AWSCURRENT and the old one AWSPREVIOUS. Links
    already posted, and links signed by a function whose cached key is the old one (for up to its
    cache's age), verify under AWSPREVIOUS. A link signed with a key newer than the ones held here
    makes them be fetched again at once, so it is never refused while this cache ages; at most once
    per ``refetch_interval``, so a flood of forged tokens costs at most that many fetches.
    """

    def __init__(
        self,
        fetch: Callable[[], Sequence[bytes]],
        *,
        max_age: float,
        refetch_interval: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._fetch, self._max_age, self._refetch_interval, self._clock = fetch, max_age, refetch_interval, clock
        self._keys: Sequence[bytes] = ()
        self._fetched_at: float | None = None

    def verify(self, token: Any, *, now: float) -> ActionClaim:
        try:
            return verify_with_any(self.held(), token, now=now)
        except ForeignActionToken:
            if self._clock() - self._fetched_at < self._refetch_interval:
                raise
        return verify_with_any(self.held(refresh=True), token, now=now)

    def held(self, *, refresh: bool = False) -> Sequence[bytes]:
        """The keys held now, fetched first if asked to, if none are, or if they are older than ``max_age``."""
        if refresh or self._fetched_at is None or self._clock() - self._fetched_at >= self._max_age:
            self._keys, self._fetched_at = tuple(self._fetch()), self._clock()
        return self._keys


def action_url(base_url: str, token: str) -> str:
    """The link to the endpoint (its function URL, which ends with '/') for one token."""
    return f"{base_url}?{urlencode({TOKEN_PARAMETER: token})}"


def links_for(
    key: bytes, base_url: str, *, alert_id: str, user: str, expires_at: int, occurrence: str | None = None
) -> dict[str, str]:
    """One user's links for an alert, by action: {"acknowledge": url, "resolve": url}."""
    return {
        action: action_url(base_url, sign(key, ActionClaim(alert_id, user, action, expires_at, occurrence)))
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

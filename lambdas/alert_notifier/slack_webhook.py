"""Posts one alert notification to a Slack incoming webhook and sorts failures into retryable or not."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

REQUEST_TIMEOUT_SECONDS = 5.0
# A 429 asking for a short pause is honoured here; a longer one is left to the state machine's back-off
# so the function does not sit idle (and billed) for it.
MAX_INLINE_RETRY_AFTER_SECONDS = 5


class SlackTransientError(Exception):
    """Slack could not take the message now (429, 5xx, timeout, connection failure): retry later."""


class SlackRejectedError(Exception):
    """Slack refused the message for good (4xx such as a revoked webhook or archived channel)."""


# Attempts the machine gives one notification on SlackTransientError: 1 + Notify Next User's
# MaxAttempts for it (a test pins the two together).
SLACK_MAX_ATTEMPTS = 5


def gives_up(error: Exception, attempt: int) -> bool:
    """Whether the machine stops trying this notification after ``error``: a rejection at once, a
    transient failure on its last attempt. ``attempt`` comes from the state's RetryCount, which also
    counts retries of Lambda service errors: after one of those (rare) this reads one attempt early.
    """
    return isinstance(error, SlackRejectedError) or (
        isinstance(error, SlackTransientError) and attempt >= SLACK_MAX_ATTEMPTS
    )


@dataclass(frozen=True)
class Notification:
    alert_id: str
    message: str
    round: int
    user: str

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> "Notification":
        return cls(alert_id=event["alert_id"], message=event["message"], round=event["round"], user=event["user"])

    def text(self) -> str:
        return (
            f"{_escape(self.user)}: alert {_escape(self.alert_id)} is active "
            f"(notification round {self.round}). {_escape(self.message)}"
        )


def _escape(text: str) -> str:
    # Slack reads &, < and > as control characters in message text.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def post_message(
    webhook_url: str,
    text: str,
    *,
    timeout: float = REQUEST_TIMEOUT_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """POST ``{"text": text}`` and return the HTTP status; raise one of the two errors above otherwise."""
    if urlsplit(webhook_url).scheme not in ("https", "http"):
        raise SlackRejectedError("the webhook secret does not hold an http(s) URL")
    retried = False
    while True:
        try:
            return _post(webhook_url, text, timeout)
        except _RateLimited as limited:
            wait = limited.retry_after
            if retried or wait is None or wait > MAX_INLINE_RETRY_AFTER_SECONDS:
                raise SlackTransientError(f"Slack answered 429 (Retry-After: {wait})") from None
        retried = True
        sleep(wait)


class _RateLimited(Exception):
    def __init__(self, retry_after: int | None) -> None:
        super().__init__(retry_after)
        self.retry_after = retry_after


def _post(webhook_url: str, text: str, timeout: float) -> int:
    request = urllib.request.Request(
        webhook_url,
        data=json.dumps({"text": text}).encode(),
        headers={"Content-Type": "application/json; charset=utf-8"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - scheme checked above
            return response.status
    except urllib.error.HTTPError as error:
        detail = error.read(200).decode(errors="replace")
        error.close()
        if error.code == 429:
            raise _RateLimited(_seconds(error.headers.get("Retry-After"))) from None
        if error.code >= 500:
            raise SlackTransientError(f"Slack answered {error.code}: {detail}") from None
        raise SlackRejectedError(f"Slack answered {error.code}: {detail}") from None
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError, ConnectionError) as error:
        raise SlackTransientError(f"Slack did not answer: {error}") from None


def _seconds(retry_after: str | None) -> int | None:
    # Slack sends whole seconds; an HTTP-date (also legal) is left to the state machine's back-off.
    return int(retry_after) if retry_after and retry_after.strip().isdigit() else None

"""Posts one alert notification to a Slack incoming webhook and sorts failures into retryable or not.

A notification is a Block Kit message: the alert, its message, and two link buttons (Acknowledge,
Resolve) opening the user's signed action links, with a plain ``text`` fallback for notifications
and clients that do not render blocks. A Slack member ID is mentioned, so that person is notified.
"""

from __future__ import annotations

import http.client
import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from patterns_common.slack_post import json_request

REQUEST_TIMEOUT_SECONDS = 5.0
# A section block's text holds at most 3,000 characters
# (https://api.slack.com/reference/block-kit/blocks#section); an alert message may hold 4,000.
MAX_SECTION_TEXT = 3_000
# Slack member IDs (users U..., Enterprise Grid users W...): mentioned as <@ID>, which notifies them.
_MEMBER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")
# The buttons, in order: (label, action in the links, button style).
BUTTONS = (("Acknowledge", "acknowledge", "primary"), ("Resolve", "resolve", None))


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
    # {"acknowledge": url, "resolve": url}: the user's signed action links.
    links: Mapping[str, str]

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> "Notification":
        return cls(
            alert_id=event["alert_id"],
            message=event["message"],
            round=event["round"],
            user=event["user"],
            links=event["links"],
        )

    def addressee(self) -> str:
        """A member ID as a mention (Slack notifies that person); anything else, such as an e-mail, named."""
        return f"<@{self.user}>" if _MEMBER_ID.match(self.user) else _escape(self.user)

    def text(self) -> str:
        return (
            f"{self.addressee()}: alert {_escape(self.alert_id)} is active "
            f"(notification round {self.round}). {_escape(self.message)}"
        )

    def payload(self) -> dict[str, Any]:
        """The webhook body: blocks with the buttons, the text as the fallback, no link previews."""
        headline = f"{self.addressee()}: alert *{_escape(self.alert_id)}* is active (notification round {self.round})"
        section = f"{headline}\n{_escape(self.message)}"
        if len(section) > MAX_SECTION_TEXT:
            section = section[: MAX_SECTION_TEXT - 1] + "\u2026"
        buttons = []
        for label, action, style in BUTTONS:
            button = {
                "type": "button",
                "action_id": action,
                "text": {"type": "plain_text", "text": label},
                "url": self.links[action],
            }
            buttons.append({**button, "style": style} if style else button)
        return {
            "text": self.text(),
            "blocks": [
                {"type": "section", "text": {"type": "mrkdwn", "text": section}},
                {"type": "actions", "elements": buttons},
            ],
            # Slack would fetch the action links to preview them; GET changes nothing, but no fetch is better.
            "unfurl_links": False,
            "unfurl_media": False,
        }


def _escape(text: str) -> str:
    # Slack reads &, < and > as control characters in message text.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def post_message(webhook_url: str, payload: Mapping[str, Any], *, timeout: float = REQUEST_TIMEOUT_SECONDS) -> int:
    """POST the JSON ``payload`` and return the HTTP status; raise one of the two errors above otherwise.

    A 429 is not waited out here: a function asleep holds one of the account's concurrent executions
    (ten in a new account). It is transient; the machine's retry takes a new slot on the webhook's pace.
    """
    if urlsplit(webhook_url).scheme not in ("https", "http"):
        raise SlackRejectedError("the webhook secret does not hold an http(s) URL")
    try:
        with urllib.request.urlopen(json_request(webhook_url, payload), timeout=timeout) as response:  # noqa: S310 - scheme checked above
            return response.status
    except urllib.error.HTTPError as error:
        detail = error.read(200).decode(errors="replace")
        error.close()
        if error.code == 429:
            raise SlackTransientError(f"Slack answered 429 (Retry-After: {error.headers.get('Retry-After')})") from None
        if error.code >= 500:
            raise SlackTransientError(f"Slack answered {error.code}: {detail}") from None
        raise SlackRejectedError(f"Slack answered {error.code}: {detail}") from None
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError, ConnectionError) as error:
        raise SlackTransientError(f"Slack did not answer: {error}") from None

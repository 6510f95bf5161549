"""Posts a follow-up message to a Slack incoming webhook: once, within a short timeout, never raising.

A follow-up (who acknowledged, the alarm that resolved) is a courtesy after the change is saved: it
must not hold up the answer to a person's click (Slack wants one within 3 s), and a failure is
logged by the caller, not retried.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from urllib.parse import urlsplit

FOLLOWUP_TIMEOUT_SECONDS = 1.5


def post_followup(webhook_url: str, text: str, *, timeout: float = FOLLOWUP_TIMEOUT_SECONDS) -> str | None:
    """POST ``text`` (links not unfurled); None when Slack took it, else what went wrong."""
    if urlsplit(webhook_url).scheme not in ("https", "http"):
        return "the webhook secret does not hold an http(s) URL"
    request = urllib.request.Request(
        webhook_url,
        data=json.dumps({"text": text, "unfurl_links": False}).encode(),
        headers={"Content-Type": "application/json; charset=utf-8"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout):  # noqa: S310 - scheme checked above
            return None
    except urllib.error.HTTPError as error:
        error.close()
        return f"Slack answered {error.code}"
    except (OSError, ValueError) as error:  # URLError, timeouts, connection failures
        return f"Slack did not answer: {type(error).__name__}"

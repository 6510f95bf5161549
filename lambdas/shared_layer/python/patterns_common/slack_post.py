"""Posts to Slack after the fact: a follow-up message to the incoming webhook, or a new version of a
clicked message to the click's ``response_url``. Once each, within a short timeout, never raising.

A follow-up (who acknowledged, the alarm that resolved) is a courtesy after the change is saved: a
failure is logged by the caller, not retried. It takes its turn on the webhook's shared pace like
every post to the webhook (slack_pace), asleep until its slot: a follow-up is one post per click or
resolved alarm, and its function has nothing else to do. A ``response_url`` is not the webhook and
is not paced.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from patterns_common.slack_pace import reserve_slot_on

FOLLOWUP_TIMEOUT_SECONDS = 1.5


def post_followup(webhook_url: str, text: str, *, timeout: float = FOLLOWUP_TIMEOUT_SECONDS) -> str | None:
    """POST ``text`` (links not unfurled); None when Slack took it, else what went wrong."""
    return post_json(webhook_url, {"text": text, "unfurl_links": False}, timeout=timeout)


def post_followup_in_turn(pace_table: Any, webhook_url: str, text: str, *, latest: float) -> str | None:
    """Take a slot on the webhook's shared pace (``pace_table``, a boto3 DynamoDB Table), sleep until it
    and post ``text`` in it, as post_followup. Not posted when the slot comes after ``latest`` (epoch
    seconds: the caller's time left less the post's own timeout): what went wrong, as post_followup.
    The slot is spent either way (the pace cannot give one back): the posts after it go a slot later."""
    now = time.time()
    slot_at = reserve_slot_on(pace_table, webhook_url, now)
    if slot_at > latest:
        return f"Slack's pace gave it a slot {slot_at - now:.1f} s away, after the function's time"
    time.sleep(max(0.0, slot_at - time.time()))
    return post_followup(webhook_url, text)


def json_request(url: str, body: Mapping[str, Any]) -> urllib.request.Request:
    """The POST of ``body`` as Slack takes JSON (an incoming webhook, a click's ``response_url``)."""
    return urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json; charset=utf-8"},
        method="POST",
    )


def post_json(url: str, body: Mapping[str, Any], *, timeout: float = FOLLOWUP_TIMEOUT_SECONDS) -> str | None:
    """POST ``body`` as JSON; None when Slack took it, else what went wrong."""
    if urlsplit(url).scheme not in ("https", "http"):
        return "the URL is not an http(s) URL"
    try:
        with urllib.request.urlopen(json_request(url, body), timeout=timeout):  # noqa: S310 - scheme checked above
            return None
    except urllib.error.HTTPError as error:
        error.close()
        return f"Slack answered {error.code}"
    except (OSError, ValueError) as error:  # URLError, timeouts, connection failures
        return f"Slack did not answer: {type(error).__name__}"

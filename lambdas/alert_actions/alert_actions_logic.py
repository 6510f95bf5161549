"""The alert action endpoint's rules with no AWS client: what a request is, whom to trust, what to answer.

Two kinds of request reach the function URL:
- a person's browser: GET (or HEAD) a signed link, which only shows a page with one button, and
  POST that page's form, which acts. Link unfurlers and mail scanners fetch links; they change nothing.
- Slack, when a Slack app's interactivity is set up: a signed ``block_actions`` POST for the click on
  a link button, which acts at once for the Slack user who clicked.
The token in the link (alert_action_links) or Slack's v0 request signature is all that is trusted.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import html
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from patterns_common.alert_action_links import (
    TOKEN_PARAMETER,
    ActionClaim,
    ActionLinkKeys,
    ExpiredActionToken,
    InvalidActionToken,
)
from patterns_common.alert_status import SETS, Outcome

# Larger than any form of ours or any block_actions payload of a notification (its message blocks
# included); anything bigger is refused before it is parsed or hashed.
MAX_BODY_BYTES = 64 * 1024
# Slack: refuse a request whose timestamp is more than five minutes from now, so a captured request
# cannot be replayed later (https://api.slack.com/authentication/verifying-requests-from-slack).
SLACK_MAX_AGE_SECONDS = 5 * 60
LABELS = {"acknowledge": "Acknowledge", "resolve": "Resolve"}
FORM = "application/x-www-form-urlencoded"
HEADERS = {
    "Content-Type": "text/html; charset=utf-8",
    "Cache-Control": "no-store",
    # The page's only request is its own form; no script, no other origin, never framed.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    # The page's URL holds the token: never send it on.
    "Referrer-Policy": "no-referrer",
}


class Refused(Exception):
    """The request is answered with a page saying why, and changes nothing."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(title)
        self.status, self.title, self.detail = status, title, detail


@dataclass(frozen=True)
class Request:
    method: str
    headers: Mapping[str, str]  # lower-cased names, as function URLs deliver them
    body: bytes
    query: Mapping[str, str]

    @property
    def from_slack(self) -> bool:
        return "x-slack-signature" in self.headers or "x-slack-request-timestamp" in self.headers


def read_request(event: Mapping[str, Any]) -> Request:
    """A function URL event (payload format 2.0) as a Request; Refused if its body is too large or garbled."""
    http = event.get("requestContext", {}).get("http", {})
    text = event.get("body") or ""
    if len(text) > 4 * -(-MAX_BODY_BYTES // 3):  # the base64 of the largest body accepted: 4 characters per 3 bytes begun
        raise _too_large()
    try:
        body = base64.b64decode(text, validate=True) if event.get("isBase64Encoded") else text.encode()
    except (binascii.Error, ValueError):
        raise Refused(400, "Unreadable request", "The request body is not valid base64.") from None
    if len(body) > MAX_BODY_BYTES:
        raise _too_large()
    headers = {str(name).lower(): str(value) for name, value in (event.get("headers") or {}).items()}
    query = {str(k): str(v) for k, v in (event.get("queryStringParameters") or {}).items()}
    return Request(str(http.get("method", "")).upper(), headers, body, query)


def _too_large() -> Refused:
    return Refused(413, "Request too large", f"A request body may hold at most {MAX_BODY_BYTES:,} bytes.")


def form_fields(request: Request) -> dict[str, str]:
    """The POST's form fields, each given once; Refused unless the body is a non-empty form."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != FORM:
        raise Refused(415, "Unsupported request", f"A POST must be a form ({FORM}).")
    if not request.body:
        raise Refused(400, "Empty request", "The request has no body.")
    try:
        fields = parse_qs(request.body.decode("utf-8"), keep_blank_values=True, strict_parsing=True)
    except (UnicodeDecodeError, ValueError):
        raise Refused(400, "Unreadable request", "The request body is not a form.") from None
    if any(len(values) != 1 for values in fields.values()):
        raise Refused(400, "Unreadable request", "A form field is given more than once.")
    return {name: values[0] for name, values in fields.items()}


def claim_of(keys: ActionLinkKeys, token: Any, now: float) -> ActionClaim:
    try:
        return keys.verify(token, now=now)
    except ExpiredActionToken:
        raise Refused(
            410, "This link has expired", "Action links work for a day; the alert's latest notification has fresh ones."
        ) from None
    except InvalidActionToken:
        raise Refused(
            400,
            "This link is not valid",
            "It may have been cut short or altered. Use the button in the alert's Slack message.",
        ) from None


def check_form_matches(claim: ActionClaim, fields: Mapping[str, str]) -> None:
    """The page's form says which alert and action the person confirmed: they must be the token's."""
    if fields.get("alert_id") != claim.alert_id or fields.get("action") != claim.action:
        raise Refused(400, "This request does not match its link", "Open the link again and use its button.")


# -- Slack ----------------------------------------------------------------------------------------


def check_slack_signature(signing_secret: bytes, request: Request, now: float) -> None:
    """Slack's v0 request signature: HMAC-SHA256 over ``v0:<timestamp>:<raw body>``, compared in constant time."""
    stamp = request.headers.get("x-slack-request-timestamp", "")
    signature = request.headers.get("x-slack-signature", "")
    if not stamp.isascii() or not stamp.isdigit() or abs(now - int(stamp)) > SLACK_MAX_AGE_SECONDS:
        raise Refused(401, "Request refused", "The Slack request timestamp is missing or more than five minutes off.")
    expected = "v0=" + hmac.new(signing_secret, b"v0:" + stamp.encode() + b":" + request.body, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace")):
        raise Refused(401, "Request refused", "The Slack request signature does not match.")


@dataclass(frozen=True)
class SlackClick:
    token: str
    user_id: str
    # Where the clicked message can be replaced (for 30 minutes), and the message as it was shown.
    response_url: str | None = None
    message: Mapping[str, Any] | None = None


def slack_click(fields: Mapping[str, str]) -> SlackClick:
    """The token of the clicked button and who clicked, from a verified ``block_actions`` payload."""
    try:
        payload = json.loads(fields.get("payload", ""))
    except ValueError:
        payload = None
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        raise Refused(400, "Unsupported Slack request", "Only block_actions (button clicks) are handled here.")
    user = payload.get("user")
    user_id = user.get("id") if isinstance(user, dict) else None
    if not isinstance(user_id, str) or not user_id:
        raise Refused(400, "Unsupported Slack request", "The click names no Slack user.")
    actions = payload.get("actions")
    response_url, message = payload.get("response_url"), payload.get("message")
    for action in actions if isinstance(actions, list) else []:
        token = token_in_link(action.get("url")) if isinstance(action, dict) else None
        if token is not None:
            return SlackClick(
                token,
                user_id,
                response_url if isinstance(response_url, str) and response_url else None,
                message if isinstance(message, dict) else None,
            )
    raise Refused(400, "Unsupported Slack request", "The clicked button carries no action link.")


def acted_message(message: Mapping[str, Any], note: str) -> dict[str, Any]:
    """The clicked message as it now reads: its buttons replaced by who acted and when
    (``replace_original``, https://api.slack.com/interactivity/handling#message_responses)."""
    blocks = message.get("blocks")
    kept = [block for block in blocks if isinstance(block, dict) and block.get("type") != "actions"] if isinstance(
        blocks, list) else []
    return {
        "replace_original": True,
        "text": str(message.get("text", note)),
        "blocks": [*kept, {"type": "context", "elements": [{"type": "mrkdwn", "text": note}]}],
    }


def token_in_link(url: Any) -> str | None:
    if not isinstance(url, str):
        return None
    values = parse_qs(urlsplit(url).query).get(TOKEN_PARAMETER, [])
    return values[0] if len(values) == 1 else None


# -- pages ----------------------------------------------------------------------------------------


def page(status: int, title: str, *paragraphs: str, form: str = "") -> dict[str, Any]:
    """A function URL response: a small self-contained HTML page. ``paragraphs`` are already HTML."""
    text = "".join(f"<p>{paragraph}</p>" for paragraph in paragraphs)
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title>"
        # The style is presentation only a person sees: no one matches on it.
        "<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:2rem auto;padding:0 1rem;"  # pragma: no mutate
        "line-height:1.5}dt{font-weight:600}dd{margin:0 0 .5rem;white-space:pre-wrap}"  # pragma: no mutate
        "button{font-size:1.1rem;padding:.5rem 1.5rem}</style></head>"
        f"<body><h1>{html.escape(title)}</h1>{text}{form}</body></html>"
    )
    return {"statusCode": status, "headers": dict(HEADERS), "body": body}


def refused_page(refused: Refused) -> dict[str, Any]:
    return page(refused.status, refused.title, html.escape(refused.detail))


def confirm_page(claim: ActionClaim, token: str, message: str) -> dict[str, Any]:
    """GET: what the button will do, to whom, and the button (a POST of the token and what it confirms)."""
    label = LABELS[claim.action]
    form = (
        '<form method="post">'
        f'<input type="hidden" name="{TOKEN_PARAMETER}" value="{html.escape(token)}">'
        f'<input type="hidden" name="alert_id" value="{html.escape(claim.alert_id)}">'
        f'<input type="hidden" name="action" value="{html.escape(claim.action)}">'
        f'<button type="submit">{label}</button></form>'
    )
    return page(
        200,
        f"{label} alert {claim.alert_id}?",
        _facts(claim, message),
        "Opening this page changes nothing; the button below does.",
        form=form,
    )


def _facts(claim: ActionClaim, message: str) -> str:
    rows = [("Alert", claim.alert_id), ("Message", message), ("Link sent to", claim.user), ("Action", LABELS[claim.action])]
    return "<dl>" + "".join(f"<dt>{name}</dt><dd>{html.escape(value)}</dd>" for name, value in rows) + "</dl>"


def outcome_page(claim: ActionClaim, outcome: Outcome, *, acted_now: bool = False) -> dict[str, Any]:
    """The answer once the item says what happened (or why nothing can)."""
    alert = html.escape(claim.alert_id)
    if outcome.kind in ("acted", "already"):
        who = html.escape(outcome.by or "someone")
        when = html.escape(outcome.at or "an unknown time")
        title = f"Alert {claim.alert_id} {'is' if acted_now else 'was already'} {outcome.status}"
        done = f"{str(outcome.status).capitalize()} by {who} at {when}."
        after = "No further notification will be sent for it." if acted_now else "Nothing was changed."
        return page(200, title, done, after)
    if outcome.kind == "not_found":
        return page(404, "No such alert", f"There is no alert {alert} (it may have been deleted).")
    if outcome.kind == "earlier_occurrence":
        return page(
            409,
            f"Alert {claim.alert_id} was raised again",
            f"It was raised again at {html.escape(outcome.at or 'an unknown time')}, after this link was sent, "
            "so this link no longer acts on it. The alert's latest notification has links that do.",
        )
    return page(
        409,
        f"Alert {claim.alert_id} cannot be {SETS[claim.action]}",
        f"Its status is {html.escape(repr(outcome.status))}.",
    )


def slack_answer(outcome: Outcome) -> dict[str, Any]:
    """Slack only needs a 200 within 3 s; another status shows the clicker a warning on the button."""
    status = 200 if outcome.kind in ("acted", "already") else 404 if outcome.kind == "not_found" else 409
    return {"statusCode": status, "headers": {"Content-Type": "text/plain; charset=utf-8"}, "body": ""}

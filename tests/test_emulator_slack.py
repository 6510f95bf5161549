"""The Slack stand-in behaves like Slack where the app's code depends on it (issue 22, part 3).

Each test talks to the stand-in over real HTTP, and the "app" whose Interactivity request URL it
calls is a real HTTP server here that checks the signature with the documented algorithm, written
out in this file: https://api.slack.com/docs/verifying-requests-from-slack. Payload fields follow
https://api.slack.com/reference/interaction-payloads/block-actions and
https://api.slack.com/interactivity/handling (response_url); answers follow
https://api.slack.com/messaging/webhooks (errors) and https://api.slack.com/docs/rate-limits.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator
from urllib.parse import parse_qs

import pytest

from emulator.slack import SlackStandIn

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # the documented example's shape: an app's signing secret

MESSAGE = {
    "text": "<@U0123ABCD>: alert disk-full-web-1 is active",
    "unfurl_links": False,
    "blocks": [
        {"type": "section", "text": {"type": "mrkdwn", "text": "*Disk full* on web-1 for <@U0123ABCD>"}},
        {"type": "actions", "block_id": "alert-actions", "elements": [
            {"type": "button", "action_id": "acknowledge", "text": {"type": "plain_text", "text": "Acknowledge"},
             "url": "http://127.0.0.1:9/ack?token=abc", "value": "ack"},
            {"type": "button", "text": {"type": "plain_text", "text": "Resolve"}, "value": "resolve"},
        ]},
    ],
}


class FakeClock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.value = now

    def __call__(self) -> float:
        return self.value


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def slack(clock) -> Iterator[SlackStandIn]:
    with SlackStandIn(now=clock) as stand_in:
        yield stand_in


class App:
    """An app's Interactivity request URL: records each request and answers 200."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        app = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                app.requests.append({"headers": dict(self.headers.items()), "raw": raw.decode()})
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/slack/actions"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def app() -> Iterator[App]:
    running = App()
    yield running
    running.close()


def post(url: str, body: Any) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers.items()), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers.items()), error.read().decode()


def test_each_post_is_kept_whole(slack):
    # When
    status, _, answer = post(slack.url, MESSAGE)
    # Then: Slack answers 200 "ok", and the post's whole JSON body is kept
    assert (status, answer) == (200, "ok")
    [recorded] = slack.posts
    assert recorded.body == MESSAGE
    assert slack.shown(recorded.seq) == MESSAGE


def test_a_link_button_opens_its_url_and_sends_nothing_without_interactivity(slack, app):
    post(slack.url, MESSAGE)
    [recorded] = slack.posts
    clicked = slack.click(recorded.seq, block=1, element=0)
    assert clicked == {"url": "http://127.0.0.1:9/ack?token=abc", "interaction": None}
    assert app.requests == []


def test_a_click_sends_a_signed_block_actions_payload_to_the_request_url(slack, app, clock):
    # Given: an app with interactivity on, and a message mentioning a member
    slack.set_up_interactivity(app.url, SECRET)
    post(slack.url, MESSAGE)
    [recorded] = slack.posts
    clock.value += 42.5
    # When: the link button is clicked
    clicked = slack.click(recorded.seq, block=1, element=0)
    # Then: the link opens and the app got one POST, answered 200
    assert clicked["url"] == "http://127.0.0.1:9/ack?token=abc"
    assert clicked["interaction"]["status"] == 200
    [request] = app.requests
    headers = {name.lower(): value for name, value in request["headers"].items()}
    assert headers["content-type"] == "application/x-www-form-urlencoded"
    # Then: the documented signature: v0= hex HMAC-SHA256 of "v0:{timestamp}:{raw body}" with the secret
    timestamp = headers["x-slack-request-timestamp"]
    assert timestamp == str(int(clock.value))
    expected = "v0=" + hmac.new(SECRET.encode(), f"v0:{timestamp}:{request['raw']}".encode(), hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["x-slack-signature"], expected)
    # Then: a form body with one field, payload, holding the block_actions JSON
    form = parse_qs(request["raw"])
    assert list(form) == ["payload"]
    payload = json.loads(form["payload"][0])
    assert payload["type"] == "block_actions"
    assert set(payload["user"]) >= {"id", "username", "name", "team_id"}
    assert payload["user"]["id"] == "U0123ABCD"  # the member the message mentions
    assert {"id", "domain"} <= set(payload["team"]) and {"id", "name"} <= set(payload["channel"])
    assert payload["container"]["type"] == "message" and payload["container"]["message_ts"] == payload["message"]["ts"]
    assert payload["message"]["text"] == MESSAGE["text"]
    assert [b["type"] for b in payload["message"]["blocks"]] == ["section", "actions"]
    assert all(payload[key] for key in ("trigger_id", "api_app_id", "token", "response_url"))
    [action] = payload["actions"]
    assert action["type"] == "button" and action["action_id"] == "acknowledge" and action["block_id"] == "alert-actions"
    assert action["value"] == "ack" and action["url"] == "http://127.0.0.1:9/ack?token=abc"
    assert action["text"] == {"type": "plain_text", "text": "Acknowledge"}
    assert float(action["action_ts"]) == pytest.approx(clock.value)


def test_a_button_without_ids_gets_them_as_slack_assigns_them(slack, app):
    # Slack gives every block a block_id and every element an action_id when the app sets none.
    slack.set_up_interactivity(app.url, SECRET)
    post(slack.url, MESSAGE)
    clicked = slack.click(slack.posts[0].seq, block=1, element=1)
    assert clicked["url"] is None
    [action] = json.loads(parse_qs(app.requests[0]["raw"])["payload"][0])["actions"]
    assert action["action_id"] and action["block_id"] == "alert-actions" and action["value"] == "resolve"
    assert "url" not in action


def test_response_url_replaces_then_deletes_the_message_and_is_good_five_times(slack, app):
    # Given: a click's response_url
    slack.set_up_interactivity(app.url, SECRET)
    post(slack.url, MESSAGE)
    seq = slack.posts[0].seq
    slack.click(seq, block=1, element=1)
    response_url = json.loads(parse_qs(app.requests[0]["raw"])["payload"][0])["response_url"]
    # When: the app replaces the original message
    replacement = {"replace_original": True, "text": "Acknowledged by <@U0123ABCD>",
                   "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "Acknowledged by <@U0123ABCD>"}}]}
    assert post(response_url, replacement)[0] == 200
    # Then: the channel shows the new message in place of the old one, and no new post
    assert slack.shown(seq) == {"text": replacement["text"], "blocks": replacement["blocks"]}
    assert len(slack.posts) == 1
    # When: without replace_original, a new message is posted
    assert post(response_url, {"text": "a follow-up"})[0] == 200
    assert [p.body for p in slack.posts][1:] == [{"text": "a follow-up"}]
    # When: delete_original
    assert post(response_url, {"delete_original": True})[0] == 200
    assert slack.shown(seq) is None
    # Then: "up to 5 times within 30 minutes"
    assert post(response_url, {"text": "4"})[0] == 200
    assert post(response_url, {"text": "5"})[0] == 200
    assert post(response_url, {"text": "6"})[0] == 404


def test_response_url_expires_after_30_minutes(slack, app, clock):
    slack.set_up_interactivity(app.url, SECRET)
    post(slack.url, MESSAGE)
    slack.click(slack.posts[0].seq, block=1, element=1)
    response_url = json.loads(parse_qs(app.requests[0]["raw"])["payload"][0])["response_url"]
    clock.value += 30 * 60 + 1
    assert post(response_url, {"replace_original": True, "text": "late"})[0] == 404
    assert slack.shown(slack.posts[0].seq) == MESSAGE


def test_a_scripted_429_carries_retry_after(slack):
    slack.fail_next(1, status=429, retry_after=7)
    status, headers, _ = post(slack.url, {"text": "hi"})
    assert status == 429 and headers["Retry-After"] == "7"
    assert post(slack.url, {"text": "hi"})[0] == 200
    assert [p.status for p in slack.posts] == [429, 200] and len(slack.delivered) == 1


def test_a_revoked_webhook_answers_404_no_service(slack):
    slack.revoke()
    status, _, answer = post(slack.url, {"text": "hi"})
    assert (status, answer) == (404, "no_service")
    assert slack.delivered == []


def test_the_stand_in_keeps_slacks_webhook_pace_unless_lifted(slack, clock):
    # Slack: about one message a second per webhook, short bursts allowed, then 429 with Retry-After
    # (https://api.slack.com/docs/rate-limits). Given: a stand-in as made, nothing scripted
    # When: six posts in one instant
    answers = [post(slack.url, {"text": str(n)}) for n in range(6)]
    # Then: a short burst goes through, the rest are refused with when to come back, and not delivered
    statuses = [status for status, _, _ in answers]
    assert statuses[0] == 200 and 429 in statuses and statuses == sorted(statuses)
    assert all(headers["Retry-After"] == "1" for status, headers, _ in answers if status == 429)
    assert len(slack.delivered) == statuses.count(200) < 6
    # When: the pace is lifted (a test that measures something else)
    slack.lift_rate_limit()
    assert [post(slack.url, {"text": "more"})[0] for _ in range(10)] == [200] * 10
    # When: reset, the pace is back, from a full burst
    slack.reset()
    assert [post(slack.url, {"text": "again"})[0] for _ in range(6)] == statuses


def test_the_rate_limit_allows_a_burst_then_about_one_a_second(slack, clock):
    # Given: a burst of 3, then one message a second
    slack.limit_rate(per_second=1, burst=3)
    # When: five posts in the same instant
    answers = [post(slack.url, {"text": str(n)}) for n in range(5)]
    # Then: three delivered, then 429s that say when to retry
    assert [status for status, _, _ in answers] == [200, 200, 200, 429, 429]
    assert answers[3][1]["Retry-After"] == "1"
    # When: a second passes on the stand-in's clock
    clock.value += 1
    assert post(slack.url, {"text": "later"})[0] == 200
    assert post(slack.url, {"text": "too soon"})[0] == 429

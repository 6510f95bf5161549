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

from emulator.session import SLACK_APP_MANIFEST, slack_app_manifest
from emulator.slack import ManifestRefused, SlackStandIn
from tests.conftest import HANG_SECONDS

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


def manifest(url: str, *, interactivity: bool = True, commands: tuple[str, ...] = ("/oncall",),
             scopes: tuple[str, ...] = ("commands", "incoming-webhook")) -> dict:
    """A Slack app manifest (https://api.slack.com/reference/manifests): interactivity's Request URL and
    each slash command's URL are ``url``."""
    return {
        "display_information": {"name": "Alerts"},
        "features": {"slash_commands": [{"command": command, "url": url, "description": "d"} for command in commands]},
        "oauth_config": {"scopes": {"bot": list(scopes)}},
        "settings": {"interactivity": {"is_enabled": interactivity, "request_url": url}},
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
        self.answer = b""
        app = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                app.requests.append({"headers": dict(self.headers.items()), "raw": raw.decode()})
                self.send_response(200)
                self.send_header("Content-Length", str(len(app.answer)))
                self.end_headers()
                self.wfile.write(app.answer)

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
        with urllib.request.urlopen(request, timeout=HANG_SECONDS) as response:
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
    slack.install(manifest(app.url), SECRET)
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
    slack.install(manifest(app.url), SECRET)
    post(slack.url, MESSAGE)
    clicked = slack.click(slack.posts[0].seq, block=1, element=1)
    assert clicked["url"] is None
    [action] = json.loads(parse_qs(app.requests[0]["raw"])["payload"][0])["actions"]
    assert action["action_id"] and action["block_id"] == "alert-actions" and action["value"] == "resolve"
    assert "url" not in action


def test_response_url_replaces_then_deletes_the_message_and_is_good_five_times(slack, app):
    # Given: a click's response_url
    slack.install(manifest(app.url), SECRET)
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
    slack.install(manifest(app.url), SECRET)
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


# -- the Slack app as its manifest declares it --------------------------------------------------------
# Fields: https://api.slack.com/reference/manifests (features.slash_commands: command, url,
# description, usage_hint; oauth_config.scopes.bot; settings.interactivity: is_enabled, request_url).
# A slash command's request: https://api.slack.com/interactivity/slash-commands#app_command_handling.


def test_a_declared_slash_command_sends_its_url_the_signed_form_slack_sends(slack, app, clock):
    # Given: an app whose manifest declares /oncall; the app answers as a command is answered
    slack.install(manifest(app.url), SECRET)
    app.answer = b'{"response_type": "ephemeral", "text": "*primary*"}'
    clock.value += 7.25
    # When: a member types `/oncall cover primary`
    sent = slack.slash_command("/oncall", "cover primary", user="U0123ABCD")
    # Then: the app got one POST and its answer is what the person is shown
    assert sent == {"sent": True, "status": 200, "answer": '{"response_type": "ephemeral", "text": "*primary*"}'}
    [request] = app.requests
    headers = {name.lower(): value for name, value in request["headers"].items()}
    assert headers["content-type"] == "application/x-www-form-urlencoded"
    # Then: signed as every Slack request: v0= hex HMAC-SHA256 of "v0:{timestamp}:{raw body}", on the clock
    assert headers["x-slack-request-timestamp"] == str(1_800_000_007)
    expected = "v0=" + hmac.new(SECRET.encode(), f"v0:1800000007:{request['raw']}".encode(), hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["x-slack-signature"], expected)
    # Then: the form fields Slack sends, one value each
    form = {name: values for name, values in parse_qs(request["raw"], keep_blank_values=True).items()}
    assert all(len(values) == 1 for values in form.values())
    fields = {name: values[0] for name, values in form.items()}
    assert {"token", "team_id", "team_domain", "channel_id", "channel_name", "user_id", "user_name", "command", "text",
            "api_app_id", "response_url", "trigger_id"} <= set(fields)
    assert (fields["command"], fields["text"], fields["user_id"]) == ("/oncall", "cover primary", "U0123ABCD")
    assert fields["team_id"].startswith("T") and fields["channel_id"].startswith("C")
    # Then: recorded, with the answer
    [typed] = slack.commands
    assert (typed.command, typed.text, typed.user, typed.status, typed.fields) == ("/oncall", "cover primary", "U0123ABCD", 200, fields)


def test_a_command_the_manifest_lacks_reaches_no_app_and_the_person_is_told_as_slack_tells_them(slack, app):
    # Given: an app declaring only /oncall
    slack.install(manifest(app.url), SECRET)
    # When: a member types /foo (no app declares it)
    sent = slack.slash_command("/foo", "bar", user="U0123ABCD")
    # Then: Slack sends nothing and says "/foo is not a valid command"
    assert sent == {"sent": False, "status": None, "answer": "/foo is not a valid command"}
    assert app.requests == []
    [typed] = slack.commands
    assert (typed.command, typed.fields, typed.status, typed.answer) == ("/foo", None, None, "/foo is not a valid command")


def test_no_command_is_valid_before_an_app_declaring_it_is_installed(slack, app):
    assert slack.slash_command("/oncall")["answer"] == "/oncall is not a valid command"
    slack.install(manifest(app.url, commands=()), SECRET)
    assert slack.slash_command("/oncall")["sent"] is False
    assert slack.slash_commands == {} and app.requests == []


def test_with_interactivity_off_a_click_reaches_no_app_and_declared_commands_still_do(slack, app):
    # Given: a manifest with interactivity off
    slack.install(manifest(app.url, interactivity=False), SECRET)
    post(slack.url, MESSAGE)
    # When: the plain button is clicked
    clicked = slack.click(slack.posts[0].seq, block=1, element=1)
    # Then: nothing is sent; the command is, to its URL
    assert clicked == {"url": None, "interaction": None} and app.requests == [] and not slack.interactive
    assert slack.slash_command("/oncall")["status"] == 200 and len(app.requests) == 1


def test_a_commands_response_url_posts_a_new_message_five_times_within_30_minutes(slack, app, clock):
    slack.install(manifest(app.url), SECRET)
    slack.slash_command("/oncall", "", user="U0123ABCD")
    response_url = parse_qs(app.requests[0]["raw"])["response_url"][0]
    # When: the app answers later through response_url ("up to 5 times within 30 minutes")
    assert [post(response_url, {"text": str(n)})[0] for n in range(6)] == [200] * 5 + [404]
    assert [p.body for p in slack.posts] == [{"text": str(n)} for n in range(5)]
    # Then: and not after 30 minutes
    slack.slash_command("/oncall", "", user="U0123ABCD")
    later = parse_qs(app.requests[1]["raw"])["response_url"][0]
    clock.value += 30 * 60 + 1
    assert post(later, {"text": "late"})[0] == 404


@pytest.mark.parametrize(
    "changed, refusal",
    [
        (lambda m: m["oauth_config"]["scopes"].update(bot=["incoming-webhook"]), "oauth_config.scopes.bot: slash commands require the `commands` bot scope"),
        (lambda m: m["features"]["slash_commands"][0].update(url="<AlertActionsUrl>"), "features.slash_commands[0].url: '<AlertActionsUrl>' is not an http(s) URL"),
        (lambda m: m["settings"]["interactivity"].update(request_url="<AlertActionsUrl>"), "settings.interactivity.request_url: '<AlertActionsUrl>' is not an http(s) URL"),
        (lambda m: m["features"]["slash_commands"][0].update(command="oncall"), "features.slash_commands[0].command: 'oncall' is not a slash command"),
    ],
    ids=["no-commands-scope", "command-url-unfilled", "request-url-unfilled", "no-slash"],
)
def test_a_manifest_slack_would_refuse_is_refused_and_the_app_stays_as_it_was(slack, app, changed, refusal):
    # Slack refuses a manifest whose slash commands lack the `commands` bot scope (apps.manifest.validate:
    # `requires_commands_bot_scope`, "Slash Commands requires `commands` bot scope", as reported in
    # derive-to/derive#558). A URL that is not http(s) (the placeholder left unfilled) could reach no app:
    # the stand-in refuses it at once rather than fail at the first click or command.
    slack.install(manifest(app.url), SECRET)
    refused = manifest("http://127.0.0.1:9/other")
    changed(refused)
    with pytest.raises(ManifestRefused) as raised:
        slack.install(refused, SECRET)
    assert str(raised.value).startswith(refusal)
    assert slack.slash_commands == {"/oncall": app.url} and slack.request_url == app.url


def test_the_projects_manifest_declares_oncall_and_interactivity_at_the_request_url(slack, app):
    # Given: slack/app-manifest.json as the deploy page fills it in (its placeholder, the output AlertActionsUrl)
    raw = json.loads(SLACK_APP_MANIFEST.read_text())
    [oncall] = raw["features"]["slash_commands"]
    assert oncall["command"] == "/oncall" and oncall["url"] == "<AlertActionsUrl>"
    assert oncall["description"] and oncall["usage_hint"].startswith("[cover <schedule>")
    assert "commands" in raw["oauth_config"]["scopes"]["bot"]
    assert raw["settings"]["interactivity"] == {"is_enabled": True, "request_url": "<AlertActionsUrl>"}
    # When: the stand-in installs it, filled in
    slack.install(slack_app_manifest(app.url), SECRET)
    # Then: /oncall and clicks reach the endpoint; nothing else is a command
    assert slack.slash_commands == {"/oncall": app.url} and slack.request_url == app.url
    assert slack.slash_command("/oncall")["status"] == 200
    assert slack.slash_command("/on-call")["sent"] is False and len(app.requests) == 1

"""Alert action endpoint: the signed links, the pages, the conditional update, Slack's signed clicks.

Handler tests run the real handler on function URL events (payload format 2.0,
https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html) against moto's DynamoDB and
Secrets Manager, with the Slack stand-in receiving the follow-up posts. Each attack of issue 23
part 6 is a test here: it asserts the answer and that the item and the channel did not change.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import io
import json
import logging
import time
import urllib.request
from dataclasses import replace
from urllib.parse import urlencode

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from emulator.slack import SlackStandIn
from patterns_common import alert_action_links as links
from patterns_common.alert_status import (
    act_update,
    followup_text,
    mention,
    outcome_for_page,
    outcome_of_refusal,
    raised_again,
)
from tests.lambda_loader import load_lambda_module
from tests.test_alert_notification_runtime import FakeLambdaContext

WEBHOOK_SECRET = "alert-notifier/slack-webhook"
FOLLOW_UP_FUNCTION = "alert-followup"
SLACK_SIGNING_SECRET = "step-functions-patterns/slack-signing-secret"
SIGNING_SECRET_VALUE = "8f742231b10e8888abcd99yyyzzz85a5"  # the shape of a Slack app's signing secret
KEY = b"k" * 64
ALERT = "disk-full-web-1"
USER = "foo@example.com"
BASE_URL = "https://abc123.lambda-url.us-east-1.on.aws/"


def token(action: str = "acknowledge", *, alert_id: str = ALERT, user: str = USER, key: bytes = KEY,
          expires_in: int = 3600, occurrence: str | None = None) -> str:
    claim = links.ActionClaim(alert_id, user, action, int(time.time()) + expires_in, occurrence)
    return links.sign(key, claim)


def url_event(method: str = "GET", *, query: dict | None = None, body: str | bytes | None = None,
              headers: dict | None = None, base64_body: bool = False) -> dict:
    """A function URL request as Lambda delivers it (payload format 2.0)."""
    raw = body.encode() if isinstance(body, str) else body
    event = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": "/",
        "rawQueryString": urlencode(query or {}),
        "headers": {"host": "abc123.lambda-url.us-east-1.on.aws", **(headers or {})},
        "requestContext": {
            "domainName": "abc123.lambda-url.us-east-1.on.aws",
            "http": {"method": method, "path": "/", "protocol": "HTTP/1.1", "sourceIp": "203.0.113.9", "userAgent": "test"},
            "requestId": "req-1",
            "timeEpoch": int(time.time() * 1000),
        },
        "isBase64Encoded": base64_body,
    }
    if query:
        event["queryStringParameters"] = query
    if raw is not None:
        event["body"] = base64.b64encode(raw).decode() if base64_body else raw.decode()
    return event


def form_post(fields: dict, **kwargs) -> dict:
    return url_event("POST", body=urlencode(fields), headers={"content-type": "application/x-www-form-urlencoded"}, **kwargs)


def confirm(tok: str, **overrides) -> dict:
    """The POST the page's button sends: the token and the alert and action it confirms."""
    claim = json.loads(base64.urlsafe_b64decode(tok.split(".")[0] + "=="))
    return form_post({"t": tok, "alert_id": claim["a"], "action": claim["x"], **overrides})


def slack_request(payload: dict, *, secret: str = SIGNING_SECRET_VALUE, timestamp: int | None = None,
                  signature: str | None = None) -> dict:
    """A block_actions request signed as Slack signs it
    (https://api.slack.com/authentication/verifying-requests-from-slack)."""
    body = urlencode({"payload": json.dumps(payload)})
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    expected = "v0=" + hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return url_event(
        "POST",
        body=body,
        headers={
            "content-type": "application/x-www-form-urlencoded",
            "x-slack-request-timestamp": stamp,
            "x-slack-signature": signature or expected,
        },
    )


def block_actions(link: str, user_id: str = "U0123ABCD") -> dict:
    """The documented block_actions payload of a click on a link button
    (https://api.slack.com/reference/interaction-payloads/block-actions)."""
    return {
        "type": "block_actions",
        "user": {"id": user_id, "username": "jo", "name": "jo", "team_id": "T0001"},
        "team": {"id": "T0001", "domain": "example"},
        "api_app_id": "A0001",
        "token": "legacy-verification-token",
        "trigger_id": "1.2.3",
        "response_url": "https://hooks.slack.com/actions/T0001/1/abc",
        "actions": [
            {"type": "button", "action_id": "acknowledge", "block_id": "actions", "text": {"type": "plain_text", "text": "Acknowledge"},
             "url": link, "action_ts": "1700000000.000100"}
        ],
    }


class AsynchronousInvokes:
    """Lambda's asynchronous Invoke as the endpoint uses it, for the handler tier (moto cannot run a
    function's code): each invoke is queued, and run_queued() runs the follow-up handler on it after
    the endpoint has answered, as Lambda does. The emulator tests use the real asynchronous Invoke."""

    def __init__(self, followup_handler) -> None:
        self.followup_handler = followup_handler
        self.queued: list[dict] = []

    def invoke(self, *, FunctionName: str, InvocationType: str, Payload: str) -> dict:  # noqa: N803 - boto3's names
        assert (FunctionName, InvocationType) == (FOLLOW_UP_FUNCTION, "Event")
        self.queued.append(json.loads(Payload))
        return {"StatusCode": 202}

    def run_queued(self) -> None:
        while self.queued:
            self.followup_handler.lambda_handler(self.queued.pop(0), FakeLambdaContext())


@pytest.fixture(scope="module")
def module_aws():
    """One moto account, Slack stand-in and loaded handler for the module (a fresh mock per test costs
    more than the test); ``aws`` empties the table and the channel before each test."""
    with SlackStandIn() as slack, pytest.MonkeyPatch.context() as env, mock_aws():
        env.setenv("ALERT_TABLE_NAME", "alerts")
        env.setenv("SLACK_WEBHOOK_SECRET_NAME", WEBHOOK_SECRET)
        boto3.client("dynamodb").create_table(
            TableName="alerts",
            KeySchema=[{"AttributeName": "alert_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "alert_id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        secrets = boto3.client("secretsmanager")
        key_arn = secrets.create_secret(Name="AlertActionsSigningKey-abc", SecretString=KEY.decode())["ARN"]
        env.setenv("SIGNING_KEY_SECRET_ARN", key_arn)
        env.setenv("FOLLOW_UP_FUNCTION_NAME", FOLLOW_UP_FUNCTION)
        secrets.create_secret(Name=WEBHOOK_SECRET, SecretString=slack.url)
        secrets.create_secret(Name=SLACK_SIGNING_SECRET, SecretString=SIGNING_SECRET_VALUE)
        parameters.clear_caches()
        endpoint = load_lambda_module("alert_actions", "handler")
        endpoint.lambda_client = AsynchronousInvokes(load_lambda_module("alert_followup", "handler"))
        yield boto3.resource("dynamodb").Table("alerts"), slack, endpoint
    parameters.clear_caches()


@pytest.fixture
def aws(module_aws, monkeypatch):
    table, slack, endpoint = module_aws
    monkeypatch.delenv("SLACK_SIGNING_SECRET_NAME", raising=False)
    endpoint.lambda_client.queued.clear()
    for key in table.scan(ProjectionExpression="alert_id")["Items"]:
        table.delete_item(Key=key)
    slack.reset()
    return table


@pytest.fixture
def slack(module_aws, aws):
    return module_aws[1]


@pytest.fixture
def endpoint(module_aws, aws):
    return module_aws[2]


@pytest.fixture
def with_slack_app(monkeypatch, aws):
    monkeypatch.setenv("SLACK_SIGNING_SECRET_NAME", SLACK_SIGNING_SECRET)


@pytest.fixture
def log_lines():
    """What the handler logs, as text (Powertools' own handler writes to the stdout it found at import)."""
    from patterns_common.observability import logger

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    logger.addHandler(handler)
    yield stream
    logger.handlers.remove(handler)


def put_alert(table, **fields) -> dict:
    item = {"alert_id": ALERT, "status": "active", "message": "Disk above 90% on web-1", "user_accounts": [USER], **fields}
    item = {key: value for key, value in item.items() if value is not None}
    table.put_item(Item=item)
    return item


def call(endpoint, event) -> dict:
    """The endpoint's answer, once what it handed off has run too."""
    answer = endpoint.lambda_handler(event, FakeLambdaContext())
    endpoint.lambda_client.run_queued()
    return answer


def item(table) -> dict | None:
    return table.get_item(Key={"alert_id": ALERT}, ConsistentRead=True).get("Item")


# -- the links -------------------------------------------------------------------------------------


def test_a_signed_claim_verifies_to_itself_and_carries_the_occurrence_it_was_made_for():
    claim = links.ActionClaim(ALERT, USER, "resolve", 2_000_000_000, "2026-11-24T10:00:00Z")
    assert links.verify(KEY, links.sign(KEY, claim), now=1_999_999_999) == claim
    # An alert the alarm never raised has no occurrence to name
    unraised = replace(claim, occurrence=None)
    assert links.verify(KEY, links.sign(KEY, unraised), now=0).occurrence is None


def test_links_for_gives_one_url_per_action_with_the_token_as_its_only_parameter():
    urls = links.links_for(KEY, BASE_URL, alert_id=ALERT, user=USER, expires_at=2_000_000_000, occurrence="2026-11-24T10:00:00Z")
    assert set(urls) == {"acknowledge", "resolve"}
    for action, url in urls.items():
        prefix, _, value = url.partition("?t=")
        assert prefix == BASE_URL and "&" not in value
        assert links.verify(KEY, value, now=0).action == action


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),  # signature altered
        lambda t: ("e" if t[0] != "e" else "f") + t[1:],  # claim altered
        lambda t: t + "=",  # non-canonical base64
        lambda t: t.replace(".", ".."),
        lambda t: "",
        lambda t: "x" * (links.MAX_TOKEN_LENGTH + 1),
    ],
)
def test_an_altered_token_is_refused(mangle):
    with pytest.raises(links.InvalidActionToken):
        links.verify(KEY, mangle(token()), now=time.time())


def test_a_claim_moved_onto_another_claims_signature_is_refused():
    # Given: the claim of a link for another alert joined to this link's signature
    mine, theirs = token(alert_id=ALERT), token(alert_id="other-alert")
    forged = theirs.split(".")[0] + "." + mine.split(".")[1]
    with pytest.raises(links.InvalidActionToken):
        links.verify(KEY, forged, now=time.time())


def test_an_expired_token_and_one_signed_with_another_key_are_refused():
    with pytest.raises(links.ExpiredActionToken):
        links.verify(KEY, token(expires_in=-1), now=time.time())
    with pytest.raises(links.InvalidActionToken):
        links.verify(KEY, token(key=b"another key" * 6), now=time.time())


# -- the status rules (pure) -----------------------------------------------------------------------


def test_a_page_shows_the_button_only_while_the_action_can_be_taken():
    acted_at = "2026-11-24T10:00:00Z"
    assert outcome_for_page({"status": "active"}, "acknowledge", None) is None
    assert outcome_for_page({}, "acknowledge", None) is None  # no status means active
    assert outcome_for_page({"status": "acknowledged"}, "resolve", None) is None
    shown = outcome_for_page({"status": "acknowledged", "acknowledged_by": "U1", "acknowledged_at": acted_at}, "acknowledge", None)
    assert (shown.kind, shown.by, shown.at) == ("already", "U1", acted_at)
    assert outcome_for_page(None, "resolve", None).kind == "not_found"
    assert outcome_of_refusal({"status": "snoozed"}, "acknowledge", None).kind == "not_actionable"


def test_a_link_made_for_an_earlier_occurrence_is_refused_on_its_page_and_when_it_acts():
    earlier, raised = "2026-11-24T10:00:00Z", "2026-11-24T11:00:00Z"
    assert raised_again({"raised_at": raised}, earlier) == raised
    assert raised_again({"raised_at": raised}, None) == raised  # made before the alarm first raised it
    assert raised_again({"raised_at": earlier}, earlier) is None and raised_again({}, earlier) is None
    refused = outcome_of_refusal({"status": "active", "raised_at": raised}, "acknowledge", earlier)
    assert (refused.kind, refused.at) == ("earlier_occurrence", raised)
    condition = act_update("a", "acknowledge", by="U1", at=raised, occurrence=earlier)
    assert condition["ConditionExpression"].endswith("AND (attribute_not_exists(raised_at) OR raised_at = :occurrence)")
    assert condition["ExpressionAttributeValues"][":occurrence"] == earlier
    unraised = act_update("a", "acknowledge", by="U1", at=raised, occurrence=None)["ConditionExpression"]
    assert unraised.endswith("AND (attribute_not_exists(raised_at))")
    shown = outcome_for_page({"status": "active", "raised_at": raised}, "acknowledge", earlier)
    assert (shown.kind, shown.at) == ("earlier_occurrence", raised)
    assert outcome_for_page({"status": "active", "raised_at": earlier}, "acknowledge", earlier) is None


def test_the_follow_up_mentions_a_slack_member_and_names_anyone_else():
    # A member ID is written <@U...> for Slack to mention (https://api.slack.com/reference/surfaces/formatting)
    assert mention("U0123ABCD") == "<@U0123ABCD>" and mention("W0123ABCD") == "<@W0123ABCD>"
    assert mention("a<b>@example.com") == "a&lt;b&gt;@example.com"
    assert followup_text("db-1", "acknowledged", by="U0123ABCD", at="2026-11-24T10:00:00Z") == (
        "Alert db-1 was acknowledged by <@U0123ABCD> at 2026-11-24T10:00:00Z."
    )
    assert followup_text("db-1", "resolved", by="CloudWatch alarm db-cpu", at="T") == (
        "Alert db-1 was resolved by CloudWatch alarm db-cpu at T."
    )


# -- GET shows, changes nothing --------------------------------------------------------------------


def test_get_shows_the_alert_the_person_and_the_action_with_one_button_that_posts(endpoint, aws, slack):
    # Given
    put_alert(aws)
    tok = token("acknowledge")
    # When
    answer = call(endpoint, url_event(query={"t": tok}))
    # Then
    assert answer["statusCode"] == 200
    assert answer["headers"]["Content-Type"].startswith("text/html")
    page = answer["body"]
    for shown in (ALERT, "Disk above 90% on web-1", USER, "Acknowledge"):
        assert shown in page
    assert page.count("<form") == 1 and '<form method="post">' in page and page.count("<button") == 1
    assert "<script" not in page and "http" not in page.split("</head>")[1]  # nothing external
    assert item(aws)["status"] == "active" and slack.posts == []


@pytest.mark.parametrize("action", ["acknowledge", "resolve"])
@pytest.mark.parametrize(
    "fields",
    [
        {"status": "active"},
        {"status": None},
        {"status": "acknowledged", "acknowledged_by": "bar@example.com", "acknowledged_at": "2026-11-24T09:00:00Z"},
        {"status": "resolved", "resolved_by": "bar@example.com", "resolved_at": "2026-11-24T09:00:00Z"},
        {"status": "active", "raised_at": "2099-01-01T00:00:00Z"},
    ],
)
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_get_with_any_valid_token_changes_nothing(endpoint, aws, slack, action, fields, method):
    before = put_alert(aws, **fields)
    answer = call(endpoint, url_event(method, query={"t": token(action)}))
    assert answer["statusCode"] in (200, 409)
    assert item(aws) == before and slack.posts == []


def test_get_of_an_acted_alert_says_who_acted_and_when(endpoint, aws):
    put_alert(aws, status="acknowledged", acknowledged_by="U0123ABCD", acknowledged_at="2026-11-24T09:00:00Z")
    page = call(endpoint, url_event(query={"t": token("acknowledge")}))["body"]
    assert "Acknowledged by U0123ABCD at 2026-11-24T09:00:00Z" in page and "<form" not in page


def test_html_in_the_alert_and_its_message_is_escaped_on_the_page(endpoint, aws):
    # Given: an alert whose id and message hold markup
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    put_alert(aws, alert_id='a<b>"c', message=hostile)
    # When
    page = call(endpoint, url_event(query={"t": token(alert_id='a<b>"c')}))["body"]
    # Then
    assert "<script>" not in page and "<img" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert 'value="a&lt;b&gt;&quot;c"' in page  # the hidden field cannot break out of its attribute


def test_pages_are_never_cached_framed_or_sent_on_with_their_url(endpoint, aws):
    put_alert(aws)
    headers = call(endpoint, url_event(query={"t": token()}))["headers"]
    assert headers["Cache-Control"] == "no-store"
    assert headers["Referrer-Policy"] == "no-referrer"
    assert headers["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert "default-src 'none'" in headers["Content-Security-Policy"]


# -- POST acts, once -------------------------------------------------------------------------------


def test_post_acknowledges_an_active_alert_records_who_and_when_and_follows_up_once(endpoint, aws, slack):
    # Given
    put_alert(aws)
    tok = token("acknowledge")
    # When
    answer = call(endpoint, confirm(tok))
    # Then
    assert answer["statusCode"] == 200 and "is acknowledged" in answer["body"]
    saved = item(aws)
    assert saved["status"] == "acknowledged" and saved["acknowledged_by"] == USER
    acted_at = saved["acknowledged_at"]
    assert abs(time.mktime(time.strptime(acted_at, "%Y-%m-%dT%H:%M:%SZ")) - time.mktime(time.gmtime())) < 5
    [post] = slack.delivered
    assert post.body == {"text": f"Alert {ALERT} was acknowledged by {USER} at {acted_at}.", "unfurl_links": False}

    # When: the same button again (a replayed token)
    again = call(endpoint, confirm(tok))
    # Then: nothing changes, and the answer says who acted and when
    assert again["statusCode"] == 200
    assert "was already acknowledged" in again["body"] and f"Acknowledged by {USER} at {acted_at}" in again["body"]
    assert item(aws) == saved and len(slack.posts) == 1


def test_an_acknowledged_alert_can_be_resolved_keeping_who_acknowledged(endpoint, aws, slack):
    put_alert(aws, status="acknowledged", acknowledged_by="bar@example.com", acknowledged_at="2026-11-24T09:00:00Z")
    answer = call(endpoint, confirm(token("resolve")))
    saved = item(aws)
    assert answer["statusCode"] == 200 and saved["status"] == "resolved" and saved["resolved_by"] == USER
    assert saved["acknowledged_by"] == "bar@example.com"
    assert [post.body["text"] for post in slack.delivered] == [f"Alert {ALERT} was resolved by {USER} at {saved['resolved_at']}."]


def test_a_resolved_alert_cannot_be_acknowledged(endpoint, aws, slack):
    before = put_alert(aws, status="resolved", resolved_by="bar@example.com", resolved_at="2026-11-24T09:00:00Z")
    answer = call(endpoint, confirm(token("acknowledge")))
    assert "was already resolved" in answer["body"] and "Resolved by bar@example.com at 2026-11-24T09:00:00Z" in answer["body"]
    assert item(aws) == before and slack.posts == []


def test_a_link_sent_before_the_alert_was_raised_again_is_refused_with_a_page_that_says_so(endpoint, aws, slack):
    # Given: a link issued an hour ago, and the alarm raised the alert again ten minutes ago (a new
    # occurrence, as PagerDuty opens a new incident: issue 30)
    raised_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 600))
    before = put_alert(aws, raised_at=raised_at)
    earlier = token("acknowledge", occurrence=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600)))
    # When: opened, and its form posted anyway
    page = call(endpoint, url_event(query={"t": earlier}))
    posted = call(endpoint, confirm(earlier))
    # Then: both say the alert was raised again since, offer no button, and change nothing
    for answer in (page, posted):
        assert answer["statusCode"] == 409 and "was raised again" in answer["body"]
        assert f"raised again at {raised_at}, after this link was sent" in answer["body"] and "<form" not in answer["body"]
    assert item(aws) == before and slack.posts == []


def test_a_slack_click_on_a_message_sent_before_the_alert_was_raised_again_changes_nothing(endpoint, aws, slack, with_slack_app):
    # Given: the click acts with no page shown, so it may only act on the occurrence its message was about
    before = put_alert(aws, raised_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 600)))
    earlier = token("acknowledge", occurrence=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600)))
    # When
    answer = call(endpoint, slack_request(block_actions(links.action_url(BASE_URL, earlier))))
    # Then: Slack shows the clicker a warning; the page the click opened offers the button
    assert answer["statusCode"] == 409 and item(aws) == before and slack.posts == []


def test_a_follow_up_that_slack_refuses_does_not_undo_or_fail_the_action(endpoint, aws, slack):
    put_alert(aws)
    slack.fail_next(1, status=500)
    answer = call(endpoint, confirm(token()))
    assert answer["statusCode"] == 200 and item(aws)["status"] == "acknowledged"


# -- refused: clear page, 4xx, nothing changed -----------------------------------------------------


def tampered(tok: str) -> str:
    return tok[:-1] + ("A" if tok[-1] != "A" else "B")


@pytest.mark.parametrize(
    "make_event, status, says",
    [
        (lambda: url_event(query={"t": tampered(token())}), 400, "This link is not valid"),
        (lambda: confirm(tampered(token())), 400, "This link is not valid"),
        (lambda: url_event(query={"t": token(key=b"x" * 64)}), 400, "This link is not valid"),
        (lambda: url_event(), 400, "This link is not valid"),  # no token at all
        (lambda: url_event(query={"t": token(expires_in=-60)}), 410, "expired"),
        (lambda: confirm(token(expires_in=-60)), 410, "expired"),
        (lambda: confirm(token("acknowledge"), action="resolve"), 400, "does not match"),  # wrong action
        (lambda: confirm(token(), alert_id="another-alert"), 400, "does not match"),  # wrong alert
        (lambda: form_post({"t": token()}), 400, "does not match"),  # no confirmation fields
        (lambda: url_event(query={"t": token(alert_id="no-such-alert")}), 404, "No such alert"),
        (lambda: confirm(token(alert_id="no-such-alert")), 404, "No such alert"),
        (lambda: url_event("POST", headers={"content-type": "application/x-www-form-urlencoded"}), 400, "Empty request"),
        (lambda: form_post({"t": token(), "pad": "x" * 70_000}), 413, "too large"),
        (lambda: form_post({"t": token()}, base64_body=True) | {"body": "***"}, 400, "not valid base64"),
        (lambda: url_event("POST", body=json.dumps({"t": token()}), headers={"content-type": "application/json"}), 415, "form"),
        (lambda: form_post({"t": token()}) | {"body": "t=a&t=b"}, 400, "more than once"),
        (lambda: url_event("PUT", query={"t": token()}), 405, "Method not allowed"),
        (lambda: url_event("DELETE", query={"t": token()}), 405, "Method not allowed"),
    ],
    ids=[
        "tampered-get", "tampered-post", "other-key", "no-token", "expired-get", "expired-post", "wrong-action",
        "wrong-alert", "unconfirmed", "unknown-alert-get", "unknown-alert-post", "missing-body", "oversized-body",
        "bad-base64", "json-body", "repeated-field", "put", "delete",
    ],
)
def test_a_bad_request_gets_a_clear_page_with_a_4xx_and_changes_nothing(endpoint, aws, slack, make_event, status, says):
    # Given
    before = put_alert(aws)
    # When
    answer = call(endpoint, make_event())
    # Then
    assert answer["statusCode"] == status
    assert says.lower() in answer["body"].lower() and answer["body"].startswith("<!doctype html>")
    assert item(aws) == before and aws.get_item(Key={"alert_id": "no-such-alert"}).get("Item") is None
    assert slack.posts == []


def test_a_base64_encoded_form_is_read_as_its_bytes(endpoint, aws):
    # Function URLs base64-encode a body they do not treat as text (isBase64Encoded)
    put_alert(aws)
    tok = token()
    event = form_post({"t": tok, "alert_id": ALERT, "action": "acknowledge"}, base64_body=True)
    assert call(endpoint, event)["statusCode"] == 200 and item(aws)["status"] == "acknowledged"


def test_no_log_line_holds_the_token_the_key_or_the_slack_secret(endpoint, aws, log_lines, with_slack_app):
    # Given: every kind of request, good and bad
    put_alert(aws)
    tok = token()
    for event in (
        url_event(query={"t": tok}),
        confirm(tampered(tok)),
        slack_request(block_actions(BASE_URL + "?t=" + tok), signature="v0=" + "0" * 64),
        confirm(tok),
    ):
        call(endpoint, event)
    # Then
    text = log_lines.getvalue()
    assert '"message":"Acted"' in text.replace(" ", "")  # the log was captured
    for secret in (tok, tok.split(".")[1], KEY.decode(), SIGNING_SECRET_VALUE):
        assert secret not in text


def test_the_endpoint_records_no_token_or_account_in_its_trace_or_logs(endpoint, aws, recorded, with_slack_app):
    # Given: a page shown, an acknowledgement by link and a resolution by a Slack click. Powertools'
    # Tracer records a handler's response unless told not to
    # (https://docs.powertools.aws.dev/lambda/python/latest/core/tracer/): a page holds the token.
    put_alert(aws)
    ack, res = token(), token("resolve")
    # When
    for event in (url_event(query={"t": ack}), confirm(ack),
                  slack_request(block_actions(BASE_URL + "?t=" + res, user_id="U0999WXYZ"))):
        assert call(endpoint, event)["statusCode"] == 200
    # Then: five invocations traced (the endpoint's three, and the follow-up function's two, one per
    # action it was handed); no token, signature or account in the trace or the logs
    assert item(aws)["resolved_by"] == "U0999WXYZ"
    assert len(recorded.handler_subsegments()) == 5
    text = recorded.everything()
    assert text.count('"Acted"') == 2
    secrets = [ack, res, ack.split(".")[1], res.split(".")[1], USER, "U0999WXYZ"]
    assert [secret for secret in secrets if secret in text] == []


# -- signing-key rotation --------------------------------------------------------------------------
# A rotation is put-secret-value with a new random value: Secrets Manager makes it AWSCURRENT and moves
# AWSPREVIOUS to the value it replaced (Secrets Manager API Reference, PutSecretValue); moto does the same.


class Clock:
    """The endpoint's monotonic clock, moved by the test: cache ages are simulated, not waited for."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def rotating(endpoint, aws, monkeypatch):
    """A signing key of its own (the module's stays put), the real signer (Fetch Alert Config's handler)
    and the endpoint's key cache on a simulated clock; yields (secret ARN, sign, clock, GetSecretValue calls)."""
    secrets = boto3.client("secretsmanager")
    arn = secrets.create_secret(Name=f"rotating-{time.time_ns()}", SecretString="1" * 64)["ARN"]
    monkeypatch.setenv("SIGNING_KEY_SECRET_ARN", arn)
    monkeypatch.setenv("ACTION_LINK_KEY_SECRET_ARN", arn)
    clock = Clock()
    monkeypatch.setattr(endpoint, "signing_keys", links.ActionLinkKeys(
        endpoint.fetch_signing_keys, max_age=endpoint.SIGNING_KEY_MAX_AGE_SECONDS,
        refetch_interval=endpoint.KEY_REFETCH_INTERVAL_SECONDS, clock=clock,
    ))
    calls: list[str] = []
    endpoint.secrets.meta.events.register("before-call.secrets-manager.GetSecretValue", lambda **_: calls.append("get"))
    signer = load_lambda_module("alert_config", "handler")
    put_alert(aws, notification_count=1)

    def sign() -> str:
        """A fresh acknowledge link's token, as the signer makes it with the key it holds."""
        config = signer.lambda_handler({"input": {"alert_id": ALERT}, "execution_arn": f"arn:{time.time_ns()}",
                                        "actions_url": BASE_URL}, FakeLambdaContext())
        aws.update_item(Key={"alert_id": ALERT}, UpdateExpression="REMOVE escalation_execution_arn")
        return config["links"][USER]["acknowledge"].split("?t=", 1)[1]

    yield arn, sign, clock, calls
    endpoint.secrets.meta.events.unregister("before-call.secrets-manager.GetSecretValue")
    parameters.clear_caches()


def rotate(arn: str, value: str) -> None:
    boto3.client("secretsmanager").put_secret_value(SecretId=arn, SecretString=value)


def shows(endpoint, tok: str) -> int:
    return call(endpoint, url_event(query={"t": tok}))["statusCode"]


def test_after_a_rotation_no_valid_link_is_refused(endpoint, rotating):
    arn, sign, clock, _ = rotating
    # Given: a link posted before the rotation, opened once (the endpoint now holds the old key)
    posted = sign()
    assert shows(endpoint, posted) == 200
    # When: the key is rotated; one signer still holds the old key, another (cold) fetches the new one
    rotate(arn, "2" * 64)
    clock.now += 2  # the new key's link takes seconds to reach anyone: signed, posted to Slack, clicked
    by_stale_signer = sign()
    parameters.clear_caches()
    by_fresh_signer = sign()
    assert by_fresh_signer.split(".")[1] != posted.split(".")[1]
    # Then: within the endpoint's 300 s cache, every link works: the new key's at once, the old key's
    # (posted, or signed before the signer refreshed) under AWSPREVIOUS; and a fresh link acts
    assert [shows(endpoint, tok) for tok in (by_fresh_signer, posted, by_stale_signer)] == [200, 200, 200]
    assert call(endpoint, confirm(by_fresh_signer))["statusCode"] == 200
    assert item(endpoint.table)["status"] == "acknowledged"


def test_rotating_twice_revokes_the_links_of_a_leaked_key(endpoint, rotating):
    arn, sign, clock, _ = rotating
    # Given: a link signed with the key that leaked
    leaked = sign()
    assert shows(endpoint, leaked) == 200
    # When: it is rotated twice, so it is neither AWSCURRENT nor AWSPREVIOUS
    rotate(arn, "2" * 64)
    rotate(arn, "3" * 64)
    clock.now += endpoint.SIGNING_KEY_MAX_AGE_SECONDS
    # Then
    assert shows(endpoint, leaked) == 400


def test_forged_tokens_fetch_the_keys_at_most_once_a_second(endpoint, rotating):
    _, sign, clock, calls = rotating
    assert shows(endpoint, sign()) == 200
    fetched = len(calls)  # AWSCURRENT, and AWSPREVIOUS (none yet)
    forged = token(key=b"not the key" * 6)
    # When: a hundred forged links within one second
    statuses = [shows(endpoint, forged) for _ in range(100)]
    clock.now += endpoint.KEY_REFETCH_INTERVAL_SECONDS
    statuses.append(shows(endpoint, forged))
    # Then: all refused; the keys fetched again once, after the second passed
    assert set(statuses) == {400}
    assert fetched == 2 and len(calls) == 2 * fetched


# -- Slack interactivity ---------------------------------------------------------------------------


def test_a_signed_slack_click_acts_at_once_for_the_slack_user_and_the_page_then_says_so(endpoint, aws, slack, with_slack_app):
    # Given
    put_alert(aws)
    tok = token("acknowledge")
    link = links.action_url(BASE_URL, tok)
    # When: Slack's request for the click
    answer = call(endpoint, slack_request(block_actions(link, user_id="U0123ABCD")))
    # Then: answered 200 (Slack's requirement), acted for the clicker
    assert answer["statusCode"] == 200
    saved = item(aws)
    assert saved["status"] == "acknowledged" and saved["acknowledged_by"] == "U0123ABCD"
    assert [p.body["text"] for p in slack.delivered] == [
        f"Alert {ALERT} was acknowledged by <@U0123ABCD> at {saved['acknowledged_at']}."
    ]
    # And the page the click opened says who acted
    page = call(endpoint, url_event(query={"t": tok}))["body"]
    assert f"Acknowledged by U0123ABCD at {saved['acknowledged_at']}" in page


def test_a_slack_click_is_answered_before_anything_is_posted_and_then_its_message_is_updated(
    endpoint, aws, slack, with_slack_app
):
    # Slack wants the answer within 3 s, and later work done through response_url
    # (https://api.slack.com/interactivity/handling#acknowledgment_response). Given: a message in the channel
    put_alert(aws)
    tok = token("acknowledge")
    notification = {"text": f"alert {ALERT} is active", "blocks": [
        {"type": "section", "text": {"type": "mrkdwn", "text": f"alert *{ALERT}* is active"}},
        {"type": "actions", "elements": [{"type": "button", "text": {"type": "plain_text", "text": "Acknowledge"},
                                          "url": links.action_url(BASE_URL, tok)}]}]}
    urllib.request.urlopen(urllib.request.Request(slack.url, data=json.dumps(notification).encode()), timeout=5).close()
    payload = {**block_actions(links.action_url(BASE_URL, tok)), "message": notification}
    # When: the endpoint answers the click
    answer = endpoint.lambda_handler(slack_request(payload), FakeLambdaContext())
    # Then: 200 after its one write; nothing posted yet, the follow-up and the message update handed off
    assert answer["statusCode"] == 200 and item(aws)["status"] == "acknowledged"
    assert len(slack.posts) == 1 and len(endpoint.lambda_client.queued) == 1
    handed = endpoint.lambda_client.queued[0]
    assert handed["replacement"]["replace_original"] is True
    assert [b["type"] for b in handed["replacement"]["blocks"]] == ["section", "context"]  # buttons gone, who acted
    assert handed["replacement"]["blocks"][1]["elements"][0]["text"] == handed["text"]
    # When: Lambda runs the hand-off
    endpoint.lambda_client.run_queued()
    # Then: the follow-up is in the channel (the message update is shown by the emulator's flap test)
    assert [p.body["text"] for p in slack.delivered[1:]] == [handed["text"]]


@pytest.mark.parametrize(
    "make_request, status",
    [
        (lambda link: slack_request(block_actions(link), signature="v0=" + "0" * 64), 401),
        (lambda link: slack_request(block_actions(link), secret="not-the-signing-secret"), 401),
        # Slack: refuse a timestamp more than five minutes old (a replayed request)
        (lambda link: slack_request(block_actions(link), timestamp=int(time.time()) - 5 * 60 - 30), 401),
        (lambda link: slack_request(block_actions(link), timestamp=int(time.time()) + 5 * 60 + 30), 401),
        (lambda link: slack_request(block_actions(link)) | {"headers": {"content-type": "application/x-www-form-urlencoded", "x-slack-signature": "v0=00"}}, 401),
        (lambda link: slack_request(block_actions(tampered(link))), 400),
        (lambda link: slack_request({**block_actions(link), "type": "view_submission"}), 400),
        (lambda link: slack_request({**block_actions(link), "actions": []}), 400),
    ],
    ids=["bad-signature", "other-secret", "stale", "future", "no-timestamp", "tampered-link", "not-block-actions", "no-action"],
)
def test_a_slack_request_that_fails_a_check_changes_nothing(endpoint, aws, slack, with_slack_app, make_request, status):
    before = put_alert(aws)
    answer = call(endpoint, make_request(links.action_url(BASE_URL, token())))
    assert answer["statusCode"] == status
    assert item(aws) == before and slack.posts == []


def test_without_a_signing_secret_slack_requests_are_refused_and_links_still_work(endpoint, aws, slack):
    # Given: no Slack app configured (SLACK_SIGNING_SECRET_NAME unset)
    before = put_alert(aws)
    tok = token()
    # When
    refused = call(endpoint, slack_request(block_actions(links.action_url(BASE_URL, tok))))
    # Then
    assert refused["statusCode"] == 403 and item(aws) == before
    assert call(endpoint, confirm(tok))["statusCode"] == 200 and item(aws)["status"] == "acknowledged"


def test_a_slack_click_on_an_acknowledged_alert_is_answered_200_and_changes_nothing(endpoint, aws, slack, with_slack_app):
    before = put_alert(aws, status="acknowledged", acknowledged_by="U9", acknowledged_at="2026-11-24T09:00:00Z")
    answer = call(endpoint, slack_request(block_actions(links.action_url(BASE_URL, token()))))
    assert answer["statusCode"] == 200 and item(aws) == before and slack.posts == []

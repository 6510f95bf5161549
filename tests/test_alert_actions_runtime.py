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
import re
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
from patterns_common import slack_post
from patterns_common.alert_status import (
    Outcome,
    act_update,
    followup_text,
    mention,
    outcome_for_page,
    outcome_of_refusal,
    raised_again,
    slack_escape,
    status_of,
    timestamp,
)
from patterns_common.slack_pace import reserve_slot_on
from patterns_common.slack_post import post_followup_in_turn
from tests.conftest import HANG_SECONDS
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


def signed_form(fields: dict, *, secret: str = SIGNING_SECRET_VALUE) -> dict:
    """A form POST signed as Slack signs its requests, such as a slash command's."""
    body, stamp = urlencode(fields), str(int(time.time()))
    signature = "v0=" + hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return url_event("POST", body=body, headers={"content-type": "application/x-www-form-urlencoded",
                                                 "x-slack-request-timestamp": stamp, "x-slack-signature": signature})


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


PACE_TABLE = "pace"


def create_pace_table(env: pytest.MonkeyPatch) -> None:
    """The notifier's short-lived table, on which every follow-up takes its turn on Slack's pace."""
    env.setenv("PACE_TABLE_NAME", PACE_TABLE)
    boto3.client("dynamodb").create_table(
        TableName=PACE_TABLE,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def idle_pace() -> None:
    """The webhook idle again, as the stand-in's bucket is after reset(): the pace item of earlier posts goes."""
    table = boto3.resource("dynamodb").Table(PACE_TABLE)
    for key in table.scan(ProjectionExpression="id")["Items"]:
        table.delete_item(Key=key)


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
        create_pace_table(env)
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
    idle_pace()
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


def _forged(body, key: bytes = KEY) -> str:
    """A token for any claim body, signed as the token format says: base64url JSON, a dot, and the
    base64url HMAC-SHA256 of the prefixed claim under the key."""
    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    encoded = b64(json.dumps(body).encode())
    return f"{encoded}.{b64(hmac.new(key, b'alert-action.v1.' + encoded.encode(), hashlib.sha256).digest())}"


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
OCCURRENCE = "2026-11-24T10:00:00Z"
GOOD = {"a": ALERT, "u": USER, "x": "resolve", "e": 2_000_000_000, "o": OCCURRENCE}


def test_a_forged_token_of_a_good_claim_verifies_so_the_format_is_the_documented_one():
    assert links.verify(KEY, _forged(GOOD), now=0) == links.ActionClaim(ALERT, USER, "resolve", 2_000_000_000, OCCURRENCE)


@pytest.mark.parametrize(
    "token_, reason",
    [
        (None, "malformed token"),
        (7, "malformed token"),
        ("", "malformed token"),
        (_forged(GOOD).replace("a", "\u00e1", 1), "malformed token"),
        (_forged(GOOD) + ".x", "malformed token"),
        (_forged(GOOD).split(".")[0] + ".*", "malformed signature"),
        # The same signature bytes spelled another way (the last character's two unused bits set)
        (_forged(GOOD)[:-1] + _B64[_B64.index(_forged(GOOD)[-1]) ^ 1], "malformed signature"),
        (_forged(GOOD, key=b"another key" * 6), "bad signature"),  # ForeignActionToken: another key may hold it
        (_forged({**GOOD, "x": "delete"}), "malformed claim"),
        (_forged({k: v for k, v in GOOD.items() if k != "a"}), "malformed claim"),
        (_forged([1, 2]), "malformed claim"),
        (_forged({**GOOD, "a": 7}), "malformed claim"),
        (_forged({**GOOD, "u": None}), "malformed claim"),
        (_forged({**GOOD, "e": True}), "malformed claim"),
        (_forged({**GOOD, "e": "2000000000"}), "malformed claim"),
        # The occurrence is the item's raised_at, a string (or absent)
        (_forged({**GOOD, "o": 1_999_990_000}), "malformed claim"),
        (_forged({**GOOD, "o": False}), "malformed claim"),
        (_forged({**GOOD, "o": [OCCURRENCE]}), "malformed claim"),
    ],
)
def test_each_check_of_a_token_refuses_what_it_is_for(token_, reason):
    with pytest.raises(links.InvalidActionToken) as refused:
        links.verify(KEY, token_, now=0)
    # Only a bad signature may be retried under another key (verify_with_any, ActionLinkKeys)
    expected = links.ForeignActionToken if reason == "bad signature" else links.InvalidActionToken
    assert type(refused.value) is expected and str(refused.value) == reason


def test_a_claim_without_an_occurrence_verifies_as_made_before_the_alarm_raised_the_alert():
    assert links.verify(KEY, _forged({k: v for k, v in GOOD.items() if k != "o"}), now=0).occurrence is None


@pytest.mark.parametrize("now, expired", [(1_999_999_999, False), (1_999_999_999.999, False), (2_000_000_000, True)])
def test_a_token_expires_at_its_expiry_second(now, expired):
    if not expired:
        assert links.verify(KEY, _forged(GOOD), now=now).expires_at == 2_000_000_000
        return
    with pytest.raises(links.ExpiredActionToken, match="^expired$"):
        links.verify(KEY, _forged(GOOD), now=now)


def test_a_token_of_the_longest_accepted_length_verifies_and_one_longer_does_not():
    # Given: alert ids that make tokens of exactly 2,048 characters and of more
    def token_of(length):
        return links.sign(KEY, links.ActionClaim("a" * length, USER, "acknowledge", 2_000_000_000, OCCURRENCE))

    longest = next(token_of(n) for n in range(1400, 1600) if len(token_of(n)) == links.MAX_TOKEN_LENGTH)
    longer = next(token_of(n) for n in range(1400, 1600) if len(token_of(n)) > links.MAX_TOKEN_LENGTH)
    # Then
    assert links.MAX_TOKEN_LENGTH == 2048
    assert links.verify(KEY, longest, now=0).action == "acknowledge"
    with pytest.raises(links.InvalidActionToken, match="^malformed token$"):
        links.verify(KEY, longer, now=0)


def test_a_token_of_the_longest_accepted_length_verifies_with_a_claim_in_three_byte_characters():
    # The config accepts alert ids of up to 256 characters and accounts of up to 254, in any script
    # (alert_config_logic). A claim is JSON without the optional whitespace between its members
    # (RFC 8259 section 2), its text in UTF-8 (3 bytes a CJK character): this one is 75 + 768 + 660 =
    # 1,503 bytes, 2,004 base64url characters, and with the dot and the signature's 43 exactly 2,048.
    alert_id, user = "\u5b57" * 256, "\u5b57" * 203 + "b" * 51
    tok = links.sign(KEY, links.ActionClaim(alert_id, user, "acknowledge", 2_000_000_000, OCCURRENCE))
    assert len(tok) == links.MAX_TOKEN_LENGTH
    assert links.verify(KEY, tok, now=0) == links.ActionClaim(alert_id, user, "acknowledge", 2_000_000_000, OCCURRENCE)


@pytest.mark.parametrize("tok", [".", _forged(GOOD).split(".")[0] + "."])
def test_a_token_with_an_empty_signature_is_refused_as_not_signed_with_the_key_even_with_an_empty_claim(tok):
    # Only the empty token fails the length check; "." has one dot, so its (empty) signature is
    # checked before its claim is read, as any other token's, and is not the key's
    with pytest.raises(links.ForeignActionToken, match="^bad signature$"):
        links.verify(KEY, tok, now=0)


@pytest.mark.parametrize("occurrence", [OCCURRENCE, None])
def test_links_carry_the_occurrence_they_were_made_for(occurrence):
    # A link of an earlier occurrence must say so, or it could act on the new one
    urls = links.links_for(KEY, BASE_URL, alert_id=ALERT, user=USER, expires_at=2_000_000_000, occurrence=occurrence)
    for action, url in urls.items():
        claim = links.verify(KEY, url.split("?t=", 1)[1], now=0)
        assert claim == links.ActionClaim(ALERT, USER, action, 2_000_000_000, occurrence)
    assert links.action_url(BASE_URL, "a.b") == f"{BASE_URL}?t=a.b"


@pytest.mark.parametrize("letter", ["a", "\u00e9"])
def test_links_for_the_longest_alert_id_and_account_the_config_accepts_verify(letter):
    # Alert ids up to 256 characters, accounts up to 254 (alert_config_logic), in any Latin script
    alert_id, user = letter * 256, letter * 254
    urls = links.links_for(KEY, BASE_URL, alert_id=alert_id, user=user, expires_at=2_000_000_000, occurrence=OCCURRENCE)
    for action, url in urls.items():
        claim = links.verify(KEY, url.split("?t=", 1)[1], now=0)
        assert claim == links.ActionClaim(alert_id, user, action, 2_000_000_000, OCCURRENCE)


def test_only_the_two_actions_can_be_signed():
    with pytest.raises(ValueError, match=r"^action must be one of \('acknowledge', 'resolve'\), got 'delete'$"):
        links.sign(KEY, links.ActionClaim(ALERT, USER, "delete", 2_000_000_000))


# -- the status rules (pure) -----------------------------------------------------------------------


def test_a_page_shows_the_button_only_while_the_action_can_be_taken():
    acted_at = "2026-11-24T10:00:00Z"
    assert outcome_for_page({"status": "active"}, "acknowledge", None) is None
    assert outcome_for_page({}, "acknowledge", None) is None  # no status means active
    assert outcome_for_page({"status": "acknowledged"}, "resolve", None) is None
    shown = outcome_for_page({"status": "acknowledged", "acknowledged_by": "U1", "acknowledged_at": acted_at}, "acknowledge", None)
    assert (shown.kind, shown.by, shown.at) == ("already", "U1", acted_at)
    assert outcome_for_page(None, "resolve", None).kind == "not_found"
    assert outcome_of_refusal({"status": "snoozed"}, None).kind == "not_actionable"


def test_a_link_made_for_an_earlier_occurrence_is_refused_on_its_page_and_when_it_acts():
    earlier, raised = "2026-11-24T10:00:00Z", "2026-11-24T11:00:00Z"
    assert raised_again({"raised_at": raised}, earlier) == raised
    assert raised_again({"raised_at": raised}, None) == raised  # made before the alarm first raised it
    assert raised_again({"raised_at": earlier}, earlier) is None and raised_again({}, earlier) is None
    assert raised_again(None, earlier) is None  # no item (deleted): nothing was raised again
    refused = outcome_of_refusal({"status": "active", "raised_at": raised}, earlier)
    assert (refused.kind, refused.at) == ("earlier_occurrence", raised)
    condition = act_update("a", "acknowledge", by="U1", at=raised, occurrence=earlier)
    assert condition["ConditionExpression"].endswith("AND (attribute_not_exists(raised_at) OR raised_at = :occurrence)")
    assert condition["ExpressionAttributeValues"][":occurrence"] == earlier
    unraised = act_update("a", "acknowledge", by="U1", at=raised, occurrence=None)["ConditionExpression"]
    assert unraised.endswith("AND (attribute_not_exists(raised_at))")
    shown = outcome_for_page({"status": "active", "raised_at": raised}, "acknowledge", earlier)
    assert (shown.kind, shown.at) == ("earlier_occurrence", raised)
    assert outcome_for_page({"status": "active", "raised_at": earlier}, "acknowledge", earlier) is None


def test_the_page_of_a_link_made_for_the_current_occurrence_gives_the_status_s_refusal():
    # A link acts on the occurrence it was made for (docs/alert-lifecycle.md, Occurrences): on its own
    # occurrence, an acted alert's page says who acted, not that it was raised again
    item_ = {"status": "acknowledged", "raised_at": OCCURRENCE, "acknowledged_by": "U9", "acknowledged_at": RAISED_AGAIN}
    assert outcome_for_page(item_, "acknowledge", OCCURRENCE) == Outcome("already", "acknowledged", "U9", RAISED_AGAIN)
    assert outcome_for_page({"status": "snoozed", "raised_at": OCCURRENCE}, "resolve", OCCURRENCE) == Outcome(
        "not_actionable", "snoozed")


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


# -- the conditional writes, evaluated by DynamoDB (moto) -----------------------------------------

RAISED_AGAIN = "2026-11-24T10:00:01Z"


@pytest.mark.parametrize(
    "fields, action, occurrence, acts",
    [
        # A link acts on the occurrence it was made for: the item's raised_at when it was sent
        ({"raised_at": OCCURRENCE}, "acknowledge", OCCURRENCE, True),
        ({"raised_at": RAISED_AGAIN}, "acknowledge", OCCURRENCE, False),  # raised again since
        # Occurrences are named, not compared as times: any other raised_at is another occurrence
        ({"raised_at": "2026-11-24T09:59:59Z"}, "acknowledge", OCCURRENCE, False),
        ({}, "acknowledge", OCCURRENCE, True),  # no occurrence recorded on the item
        ({}, "acknowledge", None, True),  # never raised by an alarm
        ({"raised_at": RAISED_AGAIN}, "acknowledge", None, False),  # sent before the alarm first raised it
        ({"status": None}, "acknowledge", None, True),  # no status is active
        ({"status": "acknowledged"}, "acknowledge", None, False),
        ({"status": "resolved"}, "acknowledge", None, False),
        ({"status": "acknowledged", "raised_at": OCCURRENCE}, "resolve", OCCURRENCE, True),
        ({"status": "resolved", "raised_at": OCCURRENCE}, "resolve", OCCURRENCE, False),
        ({"status": "snoozed"}, "resolve", None, False),
    ],
)
def test_a_person_s_action_is_written_only_where_the_lifecycle_allows_it(aws, fields, action, occurrence, acts):
    # docs/alert-lifecycle.md: Acknowledge acts on active (or none), Resolve on active or acknowledged;
    # a link (opened or clicked in Slack) only on the occurrence its message was about.
    before = put_alert(aws, **fields)
    update = act_update(ALERT, action, by="U0123ABCD", at="2026-11-24T10:30:00Z", occurrence=occurrence)
    try:
        aws.update_item(**update)
    except aws.meta.client.exceptions.ConditionalCheckFailedException:
        assert not acts
        assert item(aws) == before
        return
    assert acts
    field = {"acknowledge": "acknowledged", "resolve": "resolved"}[action]
    assert item(aws) == {**before, "status": field, f"{field}_by": "U0123ABCD", f"{field}_at": "2026-11-24T10:30:00Z"}


@pytest.mark.parametrize("occurrence", [None, OCCURRENCE])
def test_an_action_on_a_deleted_alert_writes_nothing(aws, occurrence):
    with pytest.raises(aws.meta.client.exceptions.ConditionalCheckFailedException):
        aws.update_item(**act_update("no-such-alert", "resolve", by="U1", at=OCCURRENCE, occurrence=occurrence))
    assert aws.get_item(Key={"alert_id": "no-such-alert"}).get("Item") is None


@pytest.mark.parametrize(
    "item_, occurrence, outcome",
    [
        (None, None, Outcome("not_found")),
        ({"status": "acknowledged", "acknowledged_by": "U9", "acknowledged_at": OCCURRENCE}, None,
         Outcome("already", "acknowledged", "U9", OCCURRENCE)),
        ({"status": "resolved", "resolved_by": "CloudWatch alarm db", "resolved_at": OCCURRENCE}, None,
         Outcome("already", "resolved", "CloudWatch alarm db", OCCURRENCE)),
        ({"status": "resolved", "resolved_by": 7, "resolved_at": 5}, None, Outcome("already", "resolved")),
        ({"status": "snoozed"}, None, Outcome("not_actionable", "snoozed")),
        ({"raised_at": RAISED_AGAIN}, OCCURRENCE, Outcome("earlier_occurrence", "active", at=RAISED_AGAIN)),
        # The link's own occurrence: the refusal is the status's
        ({"status": "resolved", "raised_at": OCCURRENCE}, OCCURRENCE, Outcome("already", "resolved")),
        # Raised again since: the refusal is the occurrence's, whatever the status (the 409 page)
        ({"status": "resolved", "raised_at": RAISED_AGAIN}, None,
         Outcome("earlier_occurrence", "resolved", at=RAISED_AGAIN)),
    ],
)
def test_a_refusal_is_explained_from_the_item_as_it_was(item_, occurrence, outcome):
    assert outcome_of_refusal(item_, occurrence) == outcome


def test_the_items_time_format_is_iso_8601_utc_to_the_second(monkeypatch):
    # UTC whatever the machine's time zone (a developer's laptop, not only Lambda's UTC)
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        assert timestamp(0) == "1970-01-01T00:00:00Z"
    finally:
        monkeypatch.undo()
        time.tzset()
    assert timestamp(1_764_000_005.999) == "2025-11-24T16:00:05Z"
    assert status_of({}) == "active" and status_of({"status": "resolved"}) == "resolved"


def test_slack_control_characters_are_escaped_in_the_follow_up():
    # Slack: &, < and > are control characters in message text (https://api.slack.com/reference/surfaces/formatting)
    assert slack_escape("a & <b> c") == "a &amp; &lt;b&gt; c"
    assert followup_text("a<1>", "resolved", by="x&y@example.com", at="T") == (
        "Alert a&lt;1&gt; was resolved by x&amp;y@example.com at T."
    )
    assert followup_text("a", "resolved", by="CloudWatch alarm <db>", at="T") == "Alert a was resolved by CloudWatch alarm &lt;db&gt; at T."
    assert mention("U12") == "<@U12>" and mention("U1") == "U1" and mention("u0123abcd") == "u0123abcd"
    assert mention("XU0123") == "XU0123" and mention("U0123ABCD ") == "U0123ABCD "


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


def test_a_follow_up_that_slack_refuses_does_not_undo_the_action_and_its_retry_posts_it(endpoint, aws, slack):
    put_alert(aws)
    slack.fail_next(1, status=500)
    # When: the click is answered, and the follow-up it handed off meets Slack's 500
    answer = endpoint.lambda_handler(confirm(token()), FakeLambdaContext())
    [handed_off] = endpoint.lambda_client.queued
    followup = endpoint.lambda_client.followup_handler
    with pytest.raises(followup.FollowUpNotPosted, match="500"):
        endpoint.lambda_client.run_queued()
    # Then: the action stands
    assert answer["statusCode"] == 200 and item(aws)["status"] == "acknowledged"
    # And: Lambda's retry of the same event posts the follow-up
    followup.lambda_handler(handed_off, FakeLambdaContext())
    assert [p.body["text"] for p in slack.delivered if "acknowledged" in p.body.get("text", "")]


# -- the follow-up takes its turn on the webhook's shared pace (slack_pace) ---------------------------
# Every post to the webhook takes a slot, or the pace's worst case leaves no room below Slack's pace
# (about one a second, short bursts: https://api.slack.com/docs/rate-limits; issue 38's 429).


@pytest.fixture
def stepped_time(aws, monkeypatch):
    """The follow-up's clock, moved only by its own sleep: the slept seconds are recorded."""
    clock = {"now": 1000.0, "slept": []}

    def sleep(seconds: float) -> None:
        clock["slept"].append(seconds)
        clock["now"] += seconds

    monkeypatch.setattr(slack_post.time, "time", lambda: clock["now"])
    monkeypatch.setattr(slack_post.time, "sleep", sleep)
    return clock


def test_a_follow_up_on_an_idle_webhook_posts_at_once(aws, slack, stepped_time):
    # When
    problem = post_followup_in_turn(boto3.resource("dynamodb").Table(PACE_TABLE), slack.url, "acknowledged", latest=1008.0)
    # Then: the slot is now (GCRA on an idle webhook): it slept no time
    assert problem is None and stepped_time["slept"] == [0.0] and [p.body["text"] for p in slack.posts] == ["acknowledged"]


def test_a_follow_up_behind_a_burst_sleeps_until_its_slot_then_posts(aws, slack, stepped_time):
    pace = boto3.resource("dynamodb").Table(PACE_TABLE)
    # Given: three notifications took the burst at 1000 (tat 1003.75)
    for _ in range(3):
        reserve_slot_on(pace, slack.url, 1000.0)
    # When: a follow-up at 1000
    problem = post_followup_in_turn(pace, slack.url, "acknowledged", latest=1008.0)
    # Then: its slot is 1001.25 (tat 1005 less the burst's 3 x 1.25): it slept 1.25 s, then posted
    assert problem is None and stepped_time["slept"] == [1.25] and len(slack.posts) == 1
    # and the pace counts it: the next slot is 1002.5
    assert reserve_slot_on(pace, slack.url, 1000.0) == 1002.5


def test_a_follow_up_whose_slot_comes_after_the_functions_time_is_not_posted(aws, slack, stepped_time):
    pace = boto3.resource("dynamodb").Table(PACE_TABLE)
    # Given: a storm queued ten posts at 1000 (tat 1000 + 10 x 1.25 = 1012.5)
    for _ in range(10):
        reserve_slot_on(pace, slack.url, 1000.0)
    # When: a follow-up at 1000 that must be done by 1008
    problem = post_followup_in_turn(pace, slack.url, "acknowledged", latest=1008.0)
    # Then: its slot, 1013.75 - 3 x 1.25 = 1010, comes too late: not posted, saying so, and no sleep
    assert problem == "Slack's pace gave it a slot 10.0 s away, after the function's time"
    assert stepped_time["slept"] == [] and slack.posts == []



def test_a_text_the_channel_was_not_told_fails_the_follow_up_so_that_lambda_retries_it(aws, slack, stepped_time):
    # Given: a storm queued 20 posts at 1000: the next slot, 1000 + 21 x 1.25 - 3 x 1.25 = 1022.5, is after
    # what a follow-up invoked at 1000 with 20 s left may wait for
    pace = boto3.resource("dynamodb").Table(PACE_TABLE)
    for _ in range(20):
        reserve_slot_on(pace, slack.url, 1000.0)
    followup = load_lambda_module("alert_followup", "handler")
    # When: it is handed a person not reached (Contact's note), Then: the invocation fails, so Lambda
    # invokes it again 1 and 2 minutes later and then keeps it on the failure queue
    # (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html), instead of dropping it
    with pytest.raises(followup.FollowUpNotPosted, match="after the function's time"):
        followup.lambda_handler({"text": "<@U0ANA00001>'s text (mobile) about alert disk-full was not sent"},
                                FakeLambdaContext())
    assert slack.posts == []

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


class Fetches:
    """A key fetch that counts its calls."""

    def __init__(self, *keys: bytes) -> None:
        self.keys, self.count = list(keys), 0

    def __call__(self) -> list[bytes]:
        self.count += 1
        return self.keys


# time.monotonic, the keys' default clock, has an undefined reference point
# (https://docs.python.org/3/library/time.html#time.monotonic): only differences of two readings count.
A_MONOTONIC_READING = 86_400.0


def test_the_keys_are_fetched_again_once_they_are_max_age_old_whatever_the_clock_reads():
    clock = Clock()
    clock.now = A_MONOTONIC_READING
    fetch = Fetches(KEY)
    keys = links.ActionLinkKeys(fetch, max_age=300, refetch_interval=1, clock=clock)
    assert keys.held() == (KEY,) and fetch.count == 1
    clock.now += 299.5
    assert keys.held() == (KEY,) and fetch.count == 1
    clock.now += 0.5
    assert keys.held() == (KEY,) and fetch.count == 2


def test_forged_tokens_fetch_the_keys_again_at_most_once_per_interval_whatever_the_clock_reads():
    clock = Clock()
    clock.now = A_MONOTONIC_READING
    fetch = Fetches(KEY)
    keys = links.ActionLinkKeys(fetch, max_age=300, refetch_interval=1, clock=clock)
    keys.held()
    forged = token(key=b"not the key" * 6)
    # When: forged tokens within the interval of the fetch
    for _ in range(5):
        with pytest.raises(links.ForeignActionToken):
            keys.verify(forged, now=time.time())
    # Then: no fetch; once the interval has passed, one
    assert fetch.count == 1
    clock.now += 1
    with pytest.raises(links.ForeignActionToken):
        keys.verify(forged, now=time.time())
    assert fetch.count == 2


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
    urllib.request.urlopen(urllib.request.Request(slack.url, data=json.dumps(notification).encode()), timeout=HANG_SECONDS).close()
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


def test_while_the_slack_signing_secret_is_missing_every_signed_link_works_and_slack_is_refused_saying_so(aws, slack, monkeypatch):
    # Given: the app is told a signing secret's name Secrets Manager does not hold (not stored yet, or
    # renamed), and an execution environment starts so (the handler loaded afresh, as a cold start loads it)
    name = f"renamed/slack-signing-{time.time_ns()}"
    monkeypatch.setenv("SLACK_SIGNING_SECRET_NAME", name)
    parameters.clear_caches()
    endpoint = load_lambda_module("alert_actions", "handler")
    endpoint.lambda_client = AsynchronousInvokes(load_lambda_module("alert_followup", "handler"))
    before = put_alert(aws)
    tok = token()
    # When/Then: the link opens (GET) and changes nothing
    assert shows(endpoint, tok) == 200 and item(aws) == before
    # When/Then: a Slack click and /oncall are refused with 503, saying why, and change nothing
    click = slack_request(block_actions(links.action_url(BASE_URL, tok)))
    oncall = signed_form({"command": "/oncall", "text": "", "user_id": "U0123ABCD"})
    for request in (click, oncall):
        assert shown(call(endpoint, request)) == _refused(
            503, "Slack requests cannot be checked now", "The Slack app&#x27;s signing secret cannot be read; try again later.")
    assert item(aws) == before and slack.posts == []
    # When/Then: the link's button (POST) acts
    assert call(endpoint, confirm(tok))["statusCode"] == 200 and item(aws)["status"] == "acknowledged"
    # When: the secret is stored under that name; Then the same environment's next Slack request reads it:
    # checked and answered (already acknowledged: 200, nothing changed)
    secrets = boto3.client("secretsmanager")
    secrets.create_secret(Name=name, SecretString=SIGNING_SECRET_VALUE)
    try:
        acknowledged = item(aws)
        assert call(endpoint, slack_request(block_actions(links.action_url(BASE_URL, tok))))["statusCode"] == 200
        assert item(aws) == acknowledged
    finally:
        secrets.delete_secret(SecretId=name, ForceDeleteWithoutRecovery=True)


def test_a_slack_click_on_an_acknowledged_alert_is_answered_200_and_changes_nothing(endpoint, aws, slack, with_slack_app):
    before = put_alert(aws, status="acknowledged", acknowledged_by="U9", acknowledged_at="2026-11-24T09:00:00Z")
    answer = call(endpoint, slack_request(block_actions(links.action_url(BASE_URL, token()))))
    assert answer["statusCode"] == 200 and item(aws) == before and slack.posts == []


# -- what Slack really sends -----------------------------------------------------------------------


@pytest.fixture
def actions_logic():
    return load_lambda_module("alert_actions", "alert_actions_logic")


def notification_click(message: str, *, action: str = "acknowledge", user_id: str = "U0123ABCD", tok: str | None = None) -> dict:
    """The block_actions payload Slack sends for a click on a button of one of our notifications
    (https://docs.slack.dev/reference/interaction-payloads/block_actions-payload): beside the clicked
    action it carries the user, team, channel, container, and the whole message the button is in, as
    Slack stores it (each block with its block_id, texts with Slack's defaults filled in)."""
    urls = {a: links.action_url(BASE_URL, tok or token(a)) for a in links.ACTIONS}
    notifier = load_lambda_module("alert_notifier", "slack_webhook")
    posted = notifier.Notification(ALERT, message, 3, "U0123ABCD", urls).payload()
    section, buttons = posted["blocks"]
    blocks = [
        {**section, "block_id": "Mx7Qb", "text": {**section["text"], "verbatim": False}},
        {
            **buttons,
            "block_id": "Vd2Jk",
            "elements": [{**b, "text": {**b["text"], "emoji": True}} for b in buttons["elements"]],
        },
    ]
    clicked = next(b for b in blocks[1]["elements"] if b["action_id"] == action)
    return {
        "type": "block_actions",
        "user": {"id": user_id, "username": "jo.oncall", "name": "jo.oncall", "team_id": "T0001ABCD"},
        "api_app_id": "A0001ABCD",
        "token": "Shh_its_a_seekrit",
        "container": {"type": "message", "message_ts": "1700000000.000200", "channel_id": "C0001ABCD", "is_ephemeral": False},
        "trigger_id": "1234567890123.1234567890123.0123456789abcdef0123456789abcdef",
        "team": {"id": "T0001ABCD", "domain": "example"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": "C0001ABCD", "name": "alerts"},
        "message": {
            "user": "U0BOT0001",
            "type": "message",
            "ts": "1700000000.000200",
            "bot_id": "B0001ABCD",
            "app_id": "A0001ABCD",
            "text": posted["text"],
            "team": "T0001ABCD",
            "blocks": blocks,
        },
        "state": {"values": {}},
        "response_url": "https://hooks.slack.com/actions/T0001ABCD/1234567890123/0a1b2c3d4e5f6a7b8c9d0e1f",
        "actions": [{**clicked, "block_id": "Vd2Jk", "action_ts": "1700000001.000300"}],
    }


def test_a_click_on_a_notification_with_the_longest_message_is_read_whole_and_acts(endpoint, aws, slack, with_slack_app):
    # Given: the longest message an alert may carry (4,000 characters), with text that form encoding
    # inflates; Slack sends it twice (fallback text and section block) inside the click's payload
    message = ("Disk above 90% on web-1 & web-2 <check /var/log> — été " * 80)[:4000]
    put_alert(aws, message=message)
    request = slack_request(notification_click(message))
    # Then: several KB, as Slack sends it, and within the endpoint's documented 64 KiB
    assert 12 * 1024 < len(request["body"]) < 64 * 1024
    # When
    answer = call(endpoint, request)
    # Then
    assert answer["statusCode"] == 200
    assert item(aws)["status"] == "acknowledged" and item(aws)["acknowledged_by"] == "U0123ABCD"


@pytest.mark.parametrize("base64_body", [False, True])
def test_a_body_of_exactly_64_kib_is_read_and_one_byte_more_is_refused(actions_logic, base64_body):
    # "Body over 64 KiB ... 413" (docs/alert-lifecycle.md)
    def event(size):
        return url_event("POST", body="t=" + "x" * (size - 2), base64_body=base64_body,
                         headers={"content-type": "application/x-www-form-urlencoded"})

    assert len(actions_logic.read_request(event(64 * 1024)).body) == 64 * 1024
    with pytest.raises(actions_logic.Refused) as refused:
        actions_logic.read_request(event(64 * 1024 + 1))
    assert (refused.value.status, refused.value.title) == (413, "Request too large")
    # Base64 writes 4 characters for every 3 bytes begun (RFC 4648, section 4): 64 KiB is 87,384 of them.
    # One character more is refused on its length, before it is decoded (413, not 400 for bad base64)
    with pytest.raises(actions_logic.Refused) as refused:
        actions_logic.read_request({**event(8), "body": "!" * 87_385})
    assert refused.value.status == 413


def test_a_request_is_read_with_lower_case_header_names_and_an_upper_case_method(actions_logic):
    event = url_event("GET", query={"t": "abc"}, headers={"X-Slack-Signature": "v0=1"})
    event["requestContext"]["http"]["method"] = "get"
    request = actions_logic.read_request(event)
    assert request.method == "GET" and request.query == {"t": "abc"} and request.body == b""
    assert request.headers["x-slack-signature"] == "v0=1" and request.from_slack
    assert not actions_logic.read_request(url_event("GET")).from_slack
    assert actions_logic.read_request({**url_event("GET"), "headers": {"X-Slack-Request-Timestamp": "1"}}).from_slack
    assert actions_logic.read_request({}).method == ""


@pytest.mark.parametrize(
    "content_type, body, fields",
    [
        ("application/x-www-form-urlencoded", b"t=abc&alert_id=a&action=resolve", {"t": "abc", "alert_id": "a", "action": "resolve"}),
        ("Application/X-WWW-Form-Urlencoded; charset=UTF-8", b"t=abc", {"t": "abc"}),
        ("application/x-www-form-urlencoded ; charset=utf-8", b"t=abc", {"t": "abc"}),  # RFC 9110: spaces around ;
        ("application/x-www-form-urlencoded", b"t=&action=", {"t": "", "action": ""}),
    ],
)
def test_a_form_is_read_field_by_field(actions_logic, content_type, body, fields):
    request = actions_logic.Request("POST", {"content-type": content_type}, body, {})
    assert actions_logic.form_fields(request) == fields


@pytest.mark.parametrize(
    "stamp_offset, accepted",
    [(0, True), (300, True), (-300, True), (301, False), (-301, False)],
)
def test_a_slack_timestamp_up_to_five_minutes_off_is_accepted(actions_logic, stamp_offset, accepted):
    # Slack: refuse a request more than five minutes from the local time
    # (https://api.slack.com/authentication/verifying-requests-from-slack)
    now = 1_700_000_000
    request = slack_request(block_actions("x"), timestamp=now + stamp_offset)
    read = actions_logic.read_request(request)
    if accepted:
        actions_logic.check_slack_signature(SIGNING_SECRET_VALUE.encode(), read, now)
        return
    with pytest.raises(actions_logic.Refused) as refused:
        actions_logic.check_slack_signature(SIGNING_SECRET_VALUE.encode(), read, now)
    assert refused.value.status == 401


def test_a_slack_request_without_a_signature_header_is_refused(actions_logic):
    request = actions_logic.Request("POST", {"x-slack-request-timestamp": "1700000000"}, b"payload=%7B%7D", {})
    with pytest.raises(actions_logic.Refused) as refused:
        actions_logic.check_slack_signature(b"secret", request, 1_700_000_000)
    assert (refused.value.status, refused.value.detail) == (401, "The Slack request signature does not match.")


@pytest.mark.parametrize("stamp", ["", "12a", "-5", "1700000000.5", "１７"])
def test_a_slack_timestamp_that_is_not_whole_seconds_is_refused(actions_logic, stamp):
    request = actions_logic.Request("POST", {"x-slack-request-timestamp": stamp, "x-slack-signature": "v0=0"}, b"", {})
    with pytest.raises(actions_logic.Refused) as refused:
        actions_logic.check_slack_signature(b"secret", request, 17)
    assert refused.value.status == 401


@pytest.mark.parametrize(
    "payload, detail",
    [
        ({"type": "view_submission"}, "Only block_actions (button clicks) are handled here."),
        ({"type": "block_actions", "user": "U1", "actions": []}, "The click names no Slack user."),
        ({"type": "block_actions", "user": {"id": ""}, "actions": []}, "The click names no Slack user."),
        ({"type": "block_actions", "user": {"id": "U1"}, "actions": "x"}, "The clicked button carries no action link."),
        ({"type": "block_actions", "user": {"id": "U1"}, "actions": None}, "The clicked button carries no action link."),
        ({"type": "block_actions", "user": {"id": "U1"}, "actions": ["x", {"url": 5}]}, "The clicked button carries no action link."),
    ],
)
def test_a_slack_payload_without_a_click_on_a_link_is_refused_saying_why(actions_logic, payload, detail):
    with pytest.raises(actions_logic.Refused) as refused:
        actions_logic.slack_click({"payload": json.dumps(payload)})
    assert (refused.value.status, refused.value.title, refused.value.detail) == (400, "Unsupported Slack request", detail)


def test_a_refusal_reads_as_its_title_in_a_log_or_a_traceback(actions_logic):
    assert str(actions_logic.Refused(410, "This link has expired", "details")) == "This link has expired"


def test_a_slack_form_without_a_payload_is_not_a_click(actions_logic):
    with pytest.raises(actions_logic.Refused) as refused:
        actions_logic.slack_click({})
    assert (refused.value.status, refused.value.detail) == (400, "Only block_actions (button clicks) are handled here.")


def test_a_signature_header_python_cannot_encode_is_refused_not_a_crash(actions_logic):
    request = slack_request(block_actions("x"), timestamp=1_700_000_000)
    read = actions_logic.read_request(request)
    forged = replace(read, headers={**read.headers, "x-slack-signature": "v0=\ud800"})
    with pytest.raises(actions_logic.Refused) as refused:
        actions_logic.check_slack_signature(SIGNING_SECRET_VALUE.encode(), forged, 1_700_000_000)
    assert (refused.value.status, refused.value.detail) == (401, "The Slack request signature does not match.")


def test_the_token_is_taken_from_the_first_action_with_a_link(actions_logic):
    payload = {"type": "block_actions", "user": {"id": "U1"}, "actions": [{"value": "no url"}, {"url": f"{BASE_URL}?t=abc"}]}
    assert actions_logic.slack_click({"payload": json.dumps(payload)}) == actions_logic.SlackClick("abc", "U1")
    assert actions_logic.token_in_link(f"{BASE_URL}?t=a&t=b") is None
    assert actions_logic.token_in_link(f"{BASE_URL}?x=a") is None


@pytest.mark.parametrize("response_url, message", [("", "alert db-1 is active"), (5, ["blocks"]), (None, None)])
def test_a_click_s_response_url_and_message_are_taken_only_in_slack_s_shapes(actions_logic, response_url, message):
    # Slack sends response_url as a URL string and message as an object
    # (https://api.slack.com/reference/interaction-payloads/block-actions): anything else is no place to
    # post the updated message to, and no message to update
    payload = {"type": "block_actions", "user": {"id": "U1"}, "actions": [{"url": f"{BASE_URL}?t=abc"}],
               "response_url": response_url, "message": message}
    assert actions_logic.slack_click({"payload": json.dumps(payload)}) == actions_logic.SlackClick("abc", "U1", None, None)
    shaped = {**payload, "response_url": "https://hooks.slack.com/actions/T1/1/x", "message": {"text": "t"}}
    assert actions_logic.slack_click({"payload": json.dumps(shaped)}) == actions_logic.SlackClick(
        "abc", "U1", "https://hooks.slack.com/actions/T1/1/x", {"text": "t"})


NOTE = "Alert db-1 was acknowledged by <@U0123ABCD> at 2026-11-24T10:00:00Z."
# A context block's text element is mrkdwn or plain_text; only mrkdwn shows <@U...> as a mention
# (https://api.slack.com/reference/block-kit/blocks#context, https://api.slack.com/reference/surfaces/formatting)
WHO_ACTED = {"type": "context", "elements": [{"type": "mrkdwn", "text": NOTE}]}


def test_the_clicked_message_keeps_its_text_and_blocks_and_its_buttons_become_who_acted(actions_logic):
    section = {"type": "section", "text": {"type": "mrkdwn", "text": "alert *db-1* is active"}}
    buttons = {"type": "actions", "elements": [{"type": "button", "text": {"type": "plain_text", "text": "Acknowledge"}}]}
    message = {"text": "alert db-1 is active", "blocks": [section, buttons, "not a block"]}
    assert actions_logic.acted_message(message, NOTE) == {
        "replace_original": True,
        "text": "alert db-1 is active",
        "blocks": [section, WHO_ACTED],
    }


@pytest.mark.parametrize("message", [{}, {"blocks": None}, {"blocks": "x"}])
def test_a_clicked_message_without_text_or_blocks_becomes_who_acted(actions_logic, message):
    assert actions_logic.acted_message(message, NOTE) == {"replace_original": True, "text": NOTE, "blocks": [WHO_ACTED]}


@pytest.mark.parametrize(
    "kind, status",
    [("acted", 200), ("already", 200), ("not_found", 404), ("not_actionable", 409), ("earlier_occurrence", 409)],
)
def test_slack_is_answered_200_for_a_click_that_took_effect_and_warned_otherwise(actions_logic, kind, status):
    assert actions_logic.slack_answer(Outcome(kind)) == {
        "statusCode": status,
        "headers": {"Content-Type": "text/plain; charset=utf-8"},
        "body": "",
    }


# -- every page a person can be shown --------------------------------------------------------------


def shown(answer: dict) -> tuple[int, str, list[str]]:
    """A page as a person reads it: its status, its heading (also its title), its paragraphs."""
    body = answer["body"]
    title = re.search(r"<title>(.*?)</title>", body).group(1)
    heading = re.search(r"<h1>(.*?)</h1>", body).group(1)
    assert title == heading
    assert body.startswith(
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title><style>"
    )
    assert body.endswith("</body></html>") and f"</style></head><body><h1>{title}</h1>" in body
    # Nothing but paragraphs, and the one form of a confirmation page, between the heading and the end
    rest = body.split(f"<h1>{title}</h1>", 1)[1].removesuffix("</body></html>")
    assert re.fullmatch(r'(<p>(?:(?!</p>).)*</p>)+(<form method="post">.*</form>)?', rest)
    paragraphs = [p for p in re.findall(r"<p>(.*?)</p>", body) if not p.startswith("<dl>")]  # the facts: below
    return answer["statusCode"], heading, paragraphs


T = "2026-11-24T09:00:00Z"


@pytest.mark.parametrize(
    "fields, action, page",
    [
        ({}, "acknowledge", (200, f"Acknowledge alert {ALERT}?", ["Opening this page changes nothing; the button below does."])),
        ({"status": "acknowledged"}, "resolve", (200, f"Resolve alert {ALERT}?", ["Opening this page changes nothing; the button below does."])),
        (
            {"status": "acknowledged", "acknowledged_by": "U9", "acknowledged_at": T},
            "acknowledge",
            (200, f"Alert {ALERT} was already acknowledged", [f"Acknowledged by U9 at {T}.", "Nothing was changed."]),
        ),
        (
            {"status": "resolved", "resolved_by": "CloudWatch alarm db-cpu", "resolved_at": T},
            "acknowledge",
            (200, f"Alert {ALERT} was already resolved", [f"Resolved by CloudWatch alarm db-cpu at {T}.", "Nothing was changed."]),
        ),
        (
            {"status": "resolved"},
            "resolve",
            (200, f"Alert {ALERT} was already resolved", ["Resolved by someone at an unknown time.", "Nothing was changed."]),
        ),
        ({"status": "snoozed"}, "acknowledge", (409, f"Alert {ALERT} cannot be acknowledged", ["Its status is &#x27;snoozed&#x27;."])),
        ({"status": "snoozed"}, "resolve", (409, f"Alert {ALERT} cannot be resolved", ["Its status is &#x27;snoozed&#x27;."])),
    ],
)
def test_every_page_a_link_can_open(endpoint, aws, fields, action, page):
    put_alert(aws, **fields)
    assert shown(call(endpoint, url_event(query={"t": token(action)}))) == page


def test_the_page_of_a_link_sent_before_the_alert_was_raised_again_says_when_and_which_links_act(endpoint, aws):
    # docs/alert-lifecycle.md (Occurrences): a 409 page saying the alert was raised again and that its
    # latest notification has links that act; no button
    put_alert(aws, raised_at="2099-01-01T00:00:00Z")
    assert shown(call(endpoint, url_event(query={"t": token(occurrence=OCCURRENCE)}))) == (
        409,
        f"Alert {ALERT} was raised again",
        [
            "It was raised again at 2099-01-01T00:00:00Z, after this link was sent, so this link no longer acts on it. "
            "The alert's latest notification has links that do."
        ],
    )


def test_the_confirmation_page_lists_the_alert_the_person_and_the_action_and_posts_them(endpoint, aws):
    put_alert(aws, message="Disk & more")
    tok = token("resolve")
    body = call(endpoint, url_event(query={"t": tok}))["body"]
    assert (
        f"<dl><dt>Alert</dt><dd>{ALERT}</dd><dt>Message</dt><dd>Disk &amp; more</dd>"
        f"<dt>Link sent to</dt><dd>{USER}</dd><dt>Action</dt><dd>Resolve</dd></dl>"
    ) in body
    assert body.endswith(
        f'<form method="post"><input type="hidden" name="t" value="{tok}">'
        f'<input type="hidden" name="alert_id" value="{ALERT}">'
        '<input type="hidden" name="action" value="resolve">'
        '<button type="submit">Resolve</button></form></body></html>'
    )


def test_an_alert_without_a_message_shows_the_machines_default(endpoint, aws):
    put_alert(aws, message=None)
    assert f"<dt>Message</dt><dd>Alert {ALERT} is active</dd>" in call(endpoint, url_event(query={"t": token()}))["body"]


@pytest.mark.parametrize(
    "fields, action, page",
    [
        ({}, "acknowledge", (200, f"Alert {ALERT} is acknowledged", ["Acknowledged by {USER} at {NOW}.", "No further notification will be sent for it."])),
        ({"status": "acknowledged"}, "resolve", (200, f"Alert {ALERT} is resolved", ["Resolved by {USER} at {NOW}.", "No further notification will be sent for it."])),
        ({"status": "snoozed"}, "resolve", (409, f"Alert {ALERT} cannot be resolved", ["Its status is &#x27;snoozed&#x27;."])),
        ({"alert_id": "another-alert"}, "resolve", (404, "No such alert", [f"There is no alert {ALERT} (it may have been deleted)."])),
    ],
)
def test_every_page_the_button_can_answer(endpoint, aws, fields, action, page):
    before = put_alert(aws, **fields)
    answer = call(endpoint, confirm(token(action)))
    field = {"acknowledge": "acknowledged", "resolve": "resolved"}[action]
    now = (item(aws) or {}).get(f"{field}_at", "")
    status, title, paragraphs = page
    assert shown(answer) == (status, title, [p.format(USER=USER, NOW=now) for p in paragraphs])
    if status != 200:
        assert item(aws) == (before if fields.get("alert_id") is None else None)


def _refused(status, title, detail):
    return status, title, [detail]


@pytest.mark.parametrize(
    "make_event, page",
    [
        (lambda: url_event(query={"t": tampered(token())}), _refused(400, "This link is not valid", "It may have been cut short or altered. Use the button in the alert&#x27;s Slack message.")),
        (lambda: url_event(query={"t": token(expires_in=-60)}), _refused(410, "This link has expired", "Action links work for a day; the alert&#x27;s latest notification has fresh ones.")),
        (lambda: confirm(token(), action="resolve"), _refused(400, "This request does not match its link", "Open the link again and use its button.")),
        (lambda: form_post({"t": token(), "pad": "x" * 70_000}), _refused(413, "Request too large", "A request body may hold at most 65,536 bytes.")),
        (lambda: url_event("POST", body="t=x", headers={"content-type": "text/plain"}), _refused(415, "Unsupported request", "A POST must be a form (application/x-www-form-urlencoded).")),
        (lambda: url_event("POST", body="t=x"), _refused(415, "Unsupported request", "A POST must be a form (application/x-www-form-urlencoded).")),
        (lambda: url_event("POST", headers={"content-type": "application/x-www-form-urlencoded"}), _refused(400, "Empty request", "The request has no body.")),
        (lambda: form_post({}, base64_body=True) | {"body": "***"}, _refused(400, "Unreadable request", "The request body is not valid base64.")),
        (lambda: form_post({}) | {"body": "t"}, _refused(400, "Unreadable request", "The request body is not a form.")),
        (lambda: form_post({}, base64_body=True) | {"body": base64.b64encode(b"t=\xff").decode()}, _refused(400, "Unreadable request", "The request body is not a form.")),
        (lambda: form_post({}) | {"body": "t=a&t=b"}, _refused(400, "Unreadable request", "A form field is given more than once.")),
        (lambda: url_event("PUT", query={"t": token()}), _refused(405, "Method not allowed", "Open the link (GET) and use its button (POST).")),
        (lambda: slack_request(block_actions("x")), _refused(403, "Slack requests are not accepted", "No Slack app signing secret is configured.")),
    ],
    ids=["invalid", "expired", "mismatch", "too-large", "not-a-form-type", "no-content-type", "empty", "bad-base64", "not-a-form", "not-utf8",
         "repeated", "method", "no-slack-app"],
)
def test_every_refusal_page(endpoint, aws, slack, make_event, page):
    before = put_alert(aws)
    assert shown(call(endpoint, make_event())) == page
    assert item(aws) == before and slack.posts == []


@pytest.mark.parametrize(
    "make_request, page",
    [
        (lambda: slack_request(block_actions("x"), signature="v0=" + "0" * 64), _refused(401, "Request refused", "The Slack request signature does not match.")),
        (lambda: slack_request(block_actions("x"), timestamp=1), _refused(401, "Request refused", "The Slack request timestamp is missing or more than five minutes off.")),
        (lambda: slack_request({"type": "message_action"}), _refused(400, "Unsupported Slack request", "Only block_actions (button clicks) are handled here.")),
        (lambda: slack_request(block_actions(links.action_url(BASE_URL, tampered(token())))), _refused(400, "This link is not valid", "It may have been cut short or altered. Use the button in the alert&#x27;s Slack message.")),
    ],
    ids=["signature", "timestamp", "not-a-click", "bad-link"],
)
def test_every_refusal_of_a_slack_request(endpoint, aws, slack, with_slack_app, make_request, page):
    before = put_alert(aws)
    assert shown(call(endpoint, make_request())) == page
    assert item(aws) == before and slack.posts == []

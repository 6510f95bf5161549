"""/oncall, the Slack slash command on the alert action endpoint: signed by Slack or refused, lists and covers.

The request is what Slack sends for a slash command: a signed application/x-www-form-urlencoded POST
with command, text, user_id and response_url (https://api.slack.com/interactivity/slash-commands),
signed with the v0 scheme (https://api.slack.com/authentication/verifying-requests-from-slack);
the answer is HTTP 200 with a JSON message, "ephemeral" shown only to the person who typed it.
Who is on call is worked out by hand from the schedule below.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import datetime, timezone
from urllib.parse import urlencode

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from tests.lambda_loader import load_lambda_module
from tests.test_alert_actions_runtime import SIGNING_SECRET_VALUE, url_event
from tests.test_alert_notification_runtime import FakeLambdaContext

SLACK_SIGNING_SECRET = "step-functions-patterns/slack-signing-secret"
A, B, C, D = "U0AAAAAA1", "U0BBBBBB2", "U0CCCCCC3", "U0DDDDDD4"
# Daily at 09:00 Berlin from Mon 2026-11-02: A, B, A, B, ...
PRIMARY = {"schedule_id": "primary", "time_zone": "Europe/Berlin",
           "layers": [{"members": [A, B], "start": "2026-11-02T09:00", "shift": "P1D"}]}
WED_10H = datetime(2026, 11, 4, 9, 0, tzinfo=timezone.utc).timestamp()  # Wed 10:00 CET: shift 2, A


@pytest.fixture(scope="module")
def module_endpoint():
    """One moto account and loaded handler for the module; ``endpoint`` puts the schedule back before each test."""
    with pytest.MonkeyPatch.context() as env, mock_aws():
        env.setenv("ALERT_TABLE_NAME", "alerts")
        env.setenv("ON_CALL_TABLE_NAME", "on-call")
        env.setenv("SLACK_SIGNING_SECRET_NAME", SLACK_SIGNING_SECRET)
        dynamodb = boto3.resource("dynamodb")
        for name, key in (("alerts", "alert_id"), ("on-call", "schedule_id")):
            dynamodb.create_table(TableName=name, KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
                                  AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
                                  BillingMode="PAY_PER_REQUEST")
        secrets = boto3.client("secretsmanager")
        env.setenv("SIGNING_KEY_SECRET_ARN", secrets.create_secret(Name="key", SecretString="k" * 64)["ARN"])
        secrets.create_secret(Name=SLACK_SIGNING_SECRET, SecretString=SIGNING_SECRET_VALUE)
        parameters.clear_caches()
        handler = load_lambda_module("alert_actions", "handler")
        load_lambda_module("alert_actions", "oncall_slash").on_call_table.cache_clear()
        env.setattr(handler.time, "time", lambda: WED_10H)
        yield handler
    parameters.clear_caches()


@pytest.fixture
def endpoint(module_endpoint):
    boto3.resource("dynamodb").Table("on-call").put_item(Item=PRIMARY)
    return module_endpoint


def slash(text: str, *, user_id: str = C, timestamp: float = WED_10H) -> dict:
    body = urlencode({
        "token": "legacy-verification-token", "team_id": "T0001", "team_domain": "example",
        "channel_id": "C0001", "channel_name": "on-call", "user_id": user_id, "user_name": "jo",
        "command": "/oncall", "text": text, "api_app_id": "A0001",
        "response_url": "https://hooks.slack.com/commands/T0001/1/abc", "trigger_id": "1.2.3",
    })
    stamp = str(int(timestamp))
    signature = "v0=" + hmac.new(SIGNING_SECRET_VALUE.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return url_event("POST", body=body, headers={"content-type": "application/x-www-form-urlencoded",
                                                 "x-slack-request-timestamp": stamp, "x-slack-signature": signature})


def answer_text(response: dict) -> str:
    assert response["statusCode"] == 200
    assert response["headers"]["Content-Type"] == "application/json"
    body = json.loads(response["body"])
    assert body["response_type"] == "ephemeral"
    return body["text"]


def overrides() -> list:
    return boto3.resource("dynamodb").Table("on-call").get_item(Key={"schedule_id": "primary"})["Item"].get("overrides", [])


def test_a_signed_oncall_lists_the_current_and_next_person_in_the_schedules_zone(endpoint):
    text = answer_text(endpoint.lambda_handler(slash(""), FakeLambdaContext()))
    assert text == (
        "*primary* (Europe/Berlin)\n"
        "• now: <@U0AAAAAA1> until Thu 2026-11-05 09:00 CET\n"
        "• next: <@U0BBBBBB2> from Thu 2026-11-05 09:00 CET until Fri 2026-11-06 09:00 CET"
    )


def test_a_stale_signature_is_refused_and_changes_nothing(endpoint):
    # Signed correctly, but six minutes ago: Slack's guide refuses more than five minutes
    response = endpoint.lambda_handler(slash("cover primary", timestamp=WED_10H - 360), FakeLambdaContext())
    assert response["statusCode"] == 401
    assert overrides() == []


def test_a_person_covers_the_current_shift_and_is_on_call_until_its_end(endpoint):
    # When C covers the current shift at Wed 10:00 CET
    text = answer_text(endpoint.lambda_handler(slash("cover primary"), FakeLambdaContext()))
    # Then: C holds it from now to A's handoff, Thu 09:00
    assert text == "<@U0CCCCCC3> covers *primary* from 2026-11-04T10:00 to 2026-11-05T09:00 (Europe/Berlin)."
    assert overrides() == [{"member": C, "start": "2026-11-04T10:00", "end": "2026-11-05T09:00"}]
    assert "• now: <@U0CCCCCC3> until Thu 2026-11-05 09:00 CET" in answer_text(endpoint.lambda_handler(slash(""), FakeLambdaContext()))


def test_an_overlapping_cover_is_refused_naming_the_schedule_and_the_override(endpoint):
    endpoint.lambda_handler(slash("cover primary"), FakeLambdaContext())
    text = answer_text(endpoint.lambda_handler(
        slash("cover primary 2026-11-05T08:00 2026-11-05T12:00", user_id=D), FakeLambdaContext()))
    assert text == "Not covered: schedule 'primary', overrides[1]: overlaps overrides[0]: two overrides cannot cover the same time."
    assert len(overrides()) == 1


def test_an_unknown_request_answers_with_the_usage(endpoint):
    text = answer_text(endpoint.lambda_handler(slash("swap primary"), FakeLambdaContext()))
    assert text.startswith("`/oncall` lists who is on call now and next;")

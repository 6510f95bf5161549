"""The Slack app as Slack runs it (issue 38): the stand-in plays the app slack/app-manifest.json declares,
over the app deployed in the emulator, and the console's Slack page types a slash command as a member.

Slack sends a declared command's URL a signed form (https://api.slack.com/interactivity/slash-commands,
signature: https://api.slack.com/authentication/verifying-requests-from-slack); a command no app
declares reaches no app, and Slack tells the person "/foo is not a valid command". The manifest's
fields: https://api.slack.com/reference/manifests.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import pytest
from selenium.webdriver.common.by import By

from emulator.session import SLACK_SIGNING_SECRET_NAME
from tests.browser import click, until

STACK = "AlertNotificationStack"
MEMBER = "U0ONCALL1"


@pytest.fixture
def schedule(deployment):
    """A schedule whose one member is always on call: a daily rotation of one, begun in 2020 (UTC)."""
    table = deployment.output(STACK, "OnCallTableName")
    dynamodb = deployment.client("dynamodb")
    schedule_id = f"slack-app-{time.time_ns()}"
    dynamodb.put_item(TableName=table, Item={
        "schedule_id": {"S": schedule_id}, "time_zone": {"S": "UTC"},
        "layers": {"L": [{"M": {"members": {"L": [{"S": MEMBER}]}, "start": {"S": "2020-01-01T00:00"}, "shift": {"S": "P1D"}}}]},
    })
    yield schedule_id
    dynamodb.delete_item(TableName=table, Key={"schedule_id": {"S": schedule_id}})


def endpoint_invocations(deployment) -> int:
    return deployment.aws.runtime.count(deployment.stack_resource(STACK, "AWS::Lambda::Function", "ActionsEndpoint"))


def test_the_stand_in_plays_the_deployed_apps_manifest(deployment):
    # The deployer's set-up (docs/deploying.md): the manifest's Request URLs are the output AlertActionsUrl
    url = deployment.output(STACK, "AlertActionsUrl")
    assert deployment.slack.slash_commands == {"/oncall": url}
    assert deployment.slack.request_url == url


def test_a_declared_oncall_sent_through_the_stand_in_reaches_the_endpoint_and_is_answered(deployment, schedule):
    # Given
    invoked = endpoint_invocations(deployment)
    # When: a member types /oncall in Slack
    sent = deployment.slack.slash_command("/oncall", "", user="U0ASKING1")
    # Then: the endpoint ran once, checked Slack's signature (a bad one or a stale stamp is answered 401)
    # and answered the person alone with the schedule: its one member on call now and next
    assert endpoint_invocations(deployment) == invoked + 1
    assert (sent["sent"], sent["status"]) == (True, 200), sent
    answer = json.loads(sent["answer"])
    assert answer["response_type"] == "ephemeral"
    assert f"*{schedule}* (UTC)\n• now: <@{MEMBER}> until " in answer["text"]


def test_a_command_the_manifest_lacks_is_refused_as_slack_refuses_it_and_reaches_no_endpoint(deployment):
    invoked = endpoint_invocations(deployment)
    sent = deployment.slack.slash_command("/oncal", "", user="U0ASKING1")
    assert sent == {"sent": False, "status": None, "answer": "/oncal is not a valid command"}
    assert endpoint_invocations(deployment) == invoked


def test_the_console_types_a_slash_command_as_a_chosen_member(deployment, schedule, console, browser):
    slack = deployment.slack
    secret = deployment.client("secretsmanager").get_secret_value(SecretId=SLACK_SIGNING_SECRET_NAME)["SecretString"]
    typed_before, invoked = len(slack.commands), endpoint_invocations(deployment)
    # Given: the Slack page, whose box offers the declared command
    browser.get(console.url + "#/slack")
    until(browser, lambda: browser.find_element(By.ID, "slash-command").get_attribute("value") == "/oncall", "the box")
    # When: /oncall is typed as member U0CHOSEN1
    user = browser.find_element(By.ID, "slash-user")
    user.clear()
    user.send_keys("U0CHOSEN1")
    clock_before = deployment.aws.clock.now()
    click(browser, lambda: browser.find_element(By.ID, "slash-send"), "Send")
    until(browser, lambda: browser.find_element(By.ID, "slash-answer").get_attribute("data-status") == "200", "the answer")
    clock_after = deployment.aws.clock.now()
    # Then: the page shows the app's answer as Slack shows it: only to the member, the schedule in it
    shown = browser.find_element(By.ID, "slash-answer").text
    assert "Only visible to you" in shown and f"{schedule} (UTC)" in shown and f"now: @{MEMBER} until" in shown
    # Then: the stand-in sent the form Slack sends, as that member, signed with the app's secret and
    # stamped with the simulated clock
    [typed] = slack.commands[typed_before:]
    assert endpoint_invocations(deployment) == invoked + 1
    fields = typed.fields
    assert (fields["user_id"], fields["command"], fields["text"]) == ("U0CHOSEN1", "/oncall", "")
    assert fields["team_id"] and fields["response_url"].startswith(slack.base_url)
    stamp = typed.headers["X-Slack-Request-Timestamp"]
    assert int(clock_before) <= int(stamp) <= int(clock_after)
    assert typed.headers["X-Slack-Signature"] == "v0=" + hmac.new(
        secret.encode(), f"v0:{stamp}:{typed.request_body}".encode(), hashlib.sha256).hexdigest()
    browser.save_screenshot("/tmp/slack-console-slash-command.png")
    # When: a command the manifest lacks is typed
    command = browser.find_element(By.ID, "slash-command")
    command.clear()
    command.send_keys("/pager")
    click(browser, lambda: browser.find_element(By.ID, "slash-send"), "Send")
    until(browser, lambda: browser.find_element(By.ID, "slash-answer").get_attribute("data-sent") == "false", "the refusal")
    # Then: Slack's words, and nothing reached the app
    assert "/pager is not a valid command" in browser.find_element(By.ID, "slash-answer").text
    assert endpoint_invocations(deployment) == invoked + 1
    browser.save_screenshot("/tmp/slack-console-slash-refused.png")

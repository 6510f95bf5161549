"""The local console in a real headless Chromium (issue 16): a person starts the sample alert, steps
it round by round on a paused clock, acknowledges it from outside and watches the graph end on the
acknowledged branch.

State names come from the deployed definition, never from this file, so the test holds for any
rewrite of the machine (JSONPath or JSONata) that keeps its documented behaviour.
"""

from __future__ import annotations

import json
import time
from typing import Any, Iterator

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from emulator import samples
from emulator.clock import INSTANT
from emulator.console import Console
from tests.browser import chromium

TIMEOUT = 30


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from chromium()


@pytest.fixture(scope="module")
def console(deployment) -> Iterator[Console]:
    with Console(deployment) as running:
        yield running
    deployment.aws.clock.set_speed(INSTANT)
    deployment.aws.clock.resume()


def _states(scope: dict) -> Iterator[tuple[str, dict]]:
    """Every state of a definition, those inside Map and Parallel states included."""
    for name, state in scope.get("States", {}).items():
        yield name, state
        for inner in [state.get("ItemProcessor") or state.get("Iterator") or {}, *state.get("Branches", [])]:
            yield from _states(inner)


def _acknowledged_branch(definition: dict) -> str:
    """The state a Choice goes to when the alert's status is "acknowledged" (docs/alert-notification.md: it stops)."""
    return next(rule["Next"] for _, state in _states(definition) if state["Type"] == "Choice"
                for rule in state["Choices"]
                if rule.get("StringEquals") == "acknowledged" or "= 'acknowledged'" in rule.get("Condition", ""))


def _node(browser: Any, state: str) -> Any:
    """The graph's node of ``state``; raises NoSuchElementException (which waits retry) until drawn."""
    return browser.find_element(By.CSS_SELECTOR, f'g.state[data-state="{state}"]')


def _until(browser: Any, condition: Any, what: str) -> None:
    WebDriverWait(browser, TIMEOUT, poll_frequency=0.1).until(lambda _: condition(), message=what)


def test_the_machines_page_draws_every_state_of_each_deployed_definition(deployment, console, browser):
    # Given
    sfn = deployment.client("stepfunctions")
    definition = json.loads(sfn.describe_state_machine(stateMachineArn=deployment.machine_arn("map-retry"))["definition"])
    # When
    browser.get(console.url)
    _until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, 'section[data-machine="map-retry"] g.state'), "graph drawn")
    # Then: one node per state, nested Map states included, and the first sample in the editor
    drawn = browser.find_elements(By.CSS_SELECTOR, 'section[data-machine="map-retry"] g.state')
    assert sorted(n.get_attribute("data-state") for n in drawn) == sorted(name for name, _ in _states(definition))
    editor = browser.find_element(By.CSS_SELECTOR, 'section[data-machine="map-retry"] textarea.input')
    assert json.loads(editor.get_attribute("value")) == samples.for_machine("map-retry")[0].input


def test_a_person_steps_the_sample_alert_round_by_round_and_acknowledges_it(deployment, console, browser):
    # Given: the sample alert and what its item says (users per round, seconds between rounds)
    sfn = deployment.client("stepfunctions")
    definition = json.loads(sfn.describe_state_machine(stateMachineArn=deployment.machine_arn("alert"))["definition"])
    [wait_state] = [name for name, state in _states(definition) if state["Type"] == "Wait"]
    acknowledged = _acknowledged_branch(definition)
    sample = samples.sample("alert", "disk-full-web-1")
    item = samples.read_alert_item(samples.alert_item_for(sample.input))
    users, interval = len(item["user_accounts"]["L"]), int(item["interval_seconds"]["N"])
    posts_before = len(deployment.slack.posts)
    # Given: the console open, the clock paused from it
    browser.get(console.url)
    _until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, 'section[data-machine="alert"] button.start'), "machines page")
    browser.find_element(By.ID, "clock-pause").click()
    _until(browser, lambda: browser.find_element(By.ID, "clock-mode").text == "paused", "clock shown paused")
    # When: the sample is started from the console
    section = browser.find_element(By.CSS_SELECTOR, 'section[data-machine="alert"]')
    Select(section.find_element(By.CSS_SELECTOR, "select.sample")).select_by_value(sample.name)
    section.find_element(By.CSS_SELECTOR, "button.start").click()
    _until(browser, lambda: "#/execution/" in browser.current_url, "execution page")
    # Then: the first round is posted and the execution waits at its Wait, in progress (blue)
    _until(browser, lambda: _node(browser, wait_state).get_attribute("data-status") == "in_progress", "at the Wait")
    clock_shown = browser.find_element(By.ID, "clock-time").text
    time.sleep(1.5)  # real time passes; simulated time does not
    assert _node(browser, wait_state).get_attribute("data-status") == "in_progress"
    assert browser.find_element(By.ID, "clock-time").text == clock_shown
    assert len(deployment.slack.posts) - posts_before == users
    # When: the clock is advanced by the interval from the console
    seconds = browser.find_element(By.ID, "clock-seconds")
    seconds.clear()
    seconds.send_keys(str(interval))
    browser.find_element(By.ID, "clock-advance").click()
    # Then: the second round is posted and it waits again (the Wait entered twice)
    _until(browser, lambda: _node(browser, wait_state).find_element(By.CSS_SELECTOR, "text.count").text == "×2", "second round")
    assert _node(browser, wait_state).get_attribute("data-status") == "in_progress"
    assert len(deployment.slack.posts) - posts_before == 2 * users
    assert len(browser.find_elements(By.CSS_SELECTOR, "#slack li")) == len(deployment.slack.posts)
    # When: acknowledged from outside (docs/alert-notification.md's update-item), then the clock resumed
    table = deployment.output("AlertNotificationStack", "AlertTableName")
    deployment.client("dynamodb").update_item(
        TableName=table, Key={"alert_id": item["alert_id"]}, UpdateExpression="SET #s = :s",
        ExpressionAttributeNames={"#s": "status"}, ExpressionAttributeValues={":s": {"S": "acknowledged"}})
    browser.find_element(By.ID, "clock-resume").click()
    # Then: the execution succeeds on the acknowledged branch (green), with no third round
    _until(browser, lambda: browser.find_element(By.ID, "execution-status").get_attribute("data-status") == "SUCCEEDED", "ended")
    _until(browser, lambda: _node(browser, acknowledged).get_attribute("data-status") == "succeeded", "graph updated")
    assert _node(browser, wait_state).get_attribute("data-status") == "succeeded"
    execution = browser.current_url.split("#/execution/", 1)[1]
    output = json.loads(sfn.describe_execution(executionArn=_unquote(execution))["output"])
    assert output["stopped_reason"] == "acknowledged" and output["rounds_completed"] == 2
    assert len(deployment.slack.posts) - posts_before == 2 * users
    # Then: the event history has the console's columns, from ExecutionStarted to ExecutionSucceeded
    rows = browser.find_elements(By.CSS_SELECTOR, "#history tbody tr")
    first, last = (row.find_elements(By.TAG_NAME, "td") for row in (rows[0], rows[-1]))
    assert [first[0].text, first[1].text, first[4].text] == ["1", "ExecutionStarted", "0"]
    assert last[1].text == "ExecutionSucceeded" and int(last[4].text) == pytest.approx(2 * interval * 1000, abs=2000)


def _unquote(text: str) -> str:
    from urllib.parse import unquote

    return unquote(text)

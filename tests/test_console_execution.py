"""The local console in a real headless Chromium (issue 16): a person starts the sample alert, steps
it round by round on a paused clock, acknowledges it from the Slack panel's Acknowledge button and
watches the graph end on the acknowledged branch.

State names come from the deployed definition, never from this file, so the test holds for any
rewrite of the machine (JSONPath or JSONata) that keeps its documented behaviour.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import time
import urllib.parse
import urllib.request
import zipfile
from typing import Any, Callable, Iterator

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from emulator import samples
from emulator.session import SLACK_SIGNING_SECRET_NAME
from tests.browser import TIMEOUT, advance_clock, click, shown_execution, step_clock_until, until
from tests.emulator_helpers import wait_for


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


def _in_new_tab(browser: Any, link: Callable[[], Any], shown: Callable[[], Any], what: str) -> None:
    """Click the link ``link()`` finds, which opens a new tab; wait there until ``shown()``, then close it
    and come back."""
    home, tabs = browser.current_window_handle, set(browser.window_handles)
    click(browser, link, "the link clicked")
    until(browser, lambda: len(browser.window_handles) == len(tabs) + 1, "a new tab")
    [opened] = set(browser.window_handles) - tabs
    browser.switch_to.window(opened)
    until(browser, shown, what)
    browser.close()
    browser.switch_to.window(home)


def test_the_machines_page_draws_every_state_of_each_deployed_definition(deployment, console, browser):
    # Given
    sfn = deployment.client("stepfunctions")
    definition = json.loads(sfn.describe_state_machine(stateMachineArn=deployment.machine_arn("map-retry"))["definition"])
    # When
    browser.get(console.url)
    until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, 'section[data-machine="map-retry"] g.state'), "graph drawn")
    # Then: one node per state, nested Map states included, and the first sample in the editor
    drawn = browser.find_elements(By.CSS_SELECTOR, 'section[data-machine="map-retry"] g.state')
    assert sorted(n.get_attribute("data-state") for n in drawn) == sorted(name for name, _ in _states(definition))
    editor = browser.find_element(By.CSS_SELECTOR, 'section[data-machine="map-retry"] textarea.input')
    assert json.loads(editor.get_attribute("value")) == samples.for_machine("map-retry")[0].input


# Rectangles overlapping by more than this many pixels each way hide one another's text.
_OVERLAP_PX = 2
_READ_GRAPH = """
const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > arguments[1]
  && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > arguments[1];
const section = arguments[0], svg = section.querySelector("svg.graph"), box = svg.parentElement.getBoundingClientRect();
const labels = [...svg.querySelectorAll("text.edge-label")].map((t) => t.getBoundingClientRect());
const nodes = [...svg.querySelectorAll("g.node:not(.join) rect")].map((r) => r.getBoundingClientRect());
const rect = svg.getBoundingClientRect();
return {
  scale: rect.width / svg.viewBox.baseVal.width,
  inside: rect.left >= box.left - 1 && rect.right <= box.right + 1 && rect.right <= window.innerWidth,
  labels: labels.length,
  labelsOverlapping: labels.flatMap((a, i) => labels.slice(i + 1).filter((b) => overlap(a, b))).length,
  labelsOnNodes: labels.flatMap((a) => nodes.filter((b) => overlap(a, b))).length,
};
"""


def test_every_machine_graph_is_readable_in_a_1400_px_window(deployment, console, browser):
    # Given: the console in the 1,400 px wide window tests/browser.py opens
    browser.get(console.url)
    machines = deployment.machine_names().values()
    until(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, "section.machine svg.graph")) >= len(machines),
           "graphs drawn")
    assert browser.execute_script("return window.innerWidth") <= 1400
    # Then: nothing runs off the side of the page
    assert browser.execute_script("return document.documentElement.scrollWidth <= window.innerWidth")
    for name in machines:
        section = browser.find_element(By.CSS_SELECTOR, f'section[data-machine="{name}"]')
        # When: its graph is measured as drawn
        graph = browser.execute_script(_READ_GRAPH, section, _OVERLAP_PX)
        # Then: all of it in its box at a size text can be read, no label over another or over a state
        assert graph["inside"], (name, graph)
        assert graph["scale"] >= 0.7, (name, graph)
        assert graph["labelsOverlapping"] == 0 and graph["labelsOnNodes"] == 0, (name, graph)
    # The alert machine's Choice has labelled branches to check (more than the four it needs to stagger)
    alert = browser.execute_script(_READ_GRAPH, browser.find_element(By.CSS_SELECTOR, 'section[data-machine="alert"]'), 0)
    assert alert["labels"] >= 4


# Each label's and state's text lines, and which edge labels an edge passes through or sit on a state
# (a segment clipped against the label's box, 1 px inside it: touching is not crossing).
_READ_LABELS = """
const svg = arguments[0].querySelector("svg.graph"), ctm = svg.getScreenCTM();
const box = (r) => ({ left: r.left + 1, right: r.right - 1, top: r.top + 1, bottom: r.bottom - 1 });
const crosses = (a, b, r) => {
  let t0 = 0, t1 = 1; const dx = b.x - a.x, dy = b.y - a.y;
  for (const [p, q] of [[-dx, a.x - r.left], [dx, r.right - a.x], [-dy, a.y - r.top], [dy, r.bottom - a.y]]) {
    if (p === 0) { if (q < 0) return false; continue; }
    const t = q / p;
    if (p < 0) { if (t > t1) return false; t0 = Math.max(t0, t); } else { if (t < t0) return false; t1 = Math.min(t1, t); }
  }
  return true;
};
const edges = [...svg.querySelectorAll("path.edge")].map((path) => {
  const numbers = path.getAttribute("d").match(/-?[0-9.]+(?:e-?[0-9]+)?/g).map(Number);
  const points = [];
  for (let i = 0; i < numbers.length; i += 2) points.push(new DOMPoint(numbers[i], numbers[i + 1]).matrixTransform(ctm));
  return points;
});
const labels = [...svg.querySelectorAll("text.edge-label")].map((t) => ({
  text: t.querySelector("title").textContent, lines: [...t.querySelectorAll("tspan")].map((s) => s.textContent),
  box: box(t.getBoundingClientRect()) }));
const nodes = [...svg.querySelectorAll("g.node")].map((n) => ({ name: n.dataset.state || n.textContent, box: n.getBoundingClientRect() }));
const overlap = (a, b) => Math.min(a.right, b.right) > Math.max(a.left, b.left) && Math.min(a.bottom, b.bottom) > Math.max(a.top, b.top);
return {
  labels: labels.map((l) => ({ text: l.text, lines: l.lines })),
  states: [...svg.querySelectorAll("g.state")].map((n) => ({
    name: n.dataset.state, lines: [...n.querySelectorAll("text:not(.count) tspan")].map((s) => s.textContent) })),
  labelsOnEdges: labels.flatMap((l) => edges.filter((ps) => ps.some((p, i) => i && crosses(ps[i - 1], p, l.box))).map(() => l.text)),
  labelsOnNodes: labels.flatMap((l) => nodes.filter((n) => overlap(l.box, n.box)).map((n) => [l.text, n.name])),
};
"""


def _whole_words(lines: list[str], text: str) -> bool:
    """Whether ``lines`` are ``text`` (or its first words, then "…") broken between words only."""
    words = text.split()
    shown = [word for line in lines for word in line.split()]
    if shown[-1:] == ["…"]:
        shown = shown[:-1]
    return all(line == line.strip() and line for line in lines) and shown == words[:len(shown)] \
        and (len(shown) == len(words) or lines[-1].endswith(" …"))


def test_graph_labels_break_between_words_only_and_keep_clear_of_edges_and_states(deployment, console, browser):
    # Given: every deployed machine's graph drawn in the console
    sfn = deployment.client("stepfunctions")
    browser.get(console.url)
    machines = deployment.machine_names()
    assert "alert" in machines.values()  # the machine whose labels broke mid-word and sat on edges
    until(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, "section.machine svg.graph")) >= len(machines),
          "graphs drawn")
    for arn, name in machines.items():
        definition = json.loads(sfn.describe_state_machine(stateMachineArn=arn)["definition"])
        # When: its labels are read as drawn
        drawn = browser.execute_script(_READ_LABELS, browser.find_element(By.CSS_SELECTOR, f'section[data-machine="{name}"]'))
        # Then: each state's box shows the state's name, its lines cut only between its words
        assert sorted(s["name"] for s in drawn["states"]) == sorted(n for n, _ in _states(definition)), name
        for state in drawn["states"]:
            assert " ".join(state["lines"]) == state["name"], (name, state)
        # Then: each edge label's lines are whole words of its text, and each Catch's error names are
        # shown whole, each a word, however long (AlertAlreadyRunning was "AlertAlreadyRunnin" / "g")
        for label in drawn["labels"]:
            assert _whole_words(label["lines"], label["text"]), (name, label)
        caught = [", ".join(c["ErrorEquals"]) for _, state in _states(definition) for c in state.get("Catch", [])]
        shown = [" ".join(label["lines"]) for label in drawn["labels"]]
        for errors in caught:
            assert errors in shown, (name, errors, shown)
        # Then: no edge runs through a label, and no label sits on a state
        assert drawn["labelsOnEdges"] == [] and drawn["labelsOnNodes"] == [], (name, drawn["labelsOnEdges"], drawn["labelsOnNodes"])


def test_a_person_steps_the_sample_alert_round_by_round_and_acknowledges_it_from_slack(deployment, console, browser):
    # Given: the sample alert and what its item says (users per round, seconds between rounds)
    sfn = deployment.client("stepfunctions")
    definition = json.loads(sfn.describe_state_machine(stateMachineArn=deployment.machine_arn("alert"))["definition"])
    # The Wait between rounds: the machine's own (a notification's wait for the channel is inside the Map)
    [wait_state] = [name for name, state in definition["States"].items() if state["Type"] == "Wait"]
    acknowledged = _acknowledged_branch(definition)
    sample = samples.sample("alert", "disk-full-web-1")
    item = samples.read_alert_item(samples.alert_item_for(sample.input))
    users, interval = len(item["user_accounts"]["L"]), int(item["interval_seconds"]["N"])
    posts_before = len(deployment.slack.posts)
    # Given: the console open, the clock paused from it
    browser.get(console.url)
    until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, 'section[data-machine="alert"] button.start'), "machines page")
    browser.find_element(By.ID, "clock-pause").click()
    until(browser, lambda: browser.find_element(By.ID, "clock-mode").text == "paused", "clock shown paused")
    # When: the sample is started from the console
    section = browser.find_element(By.CSS_SELECTOR, 'section[data-machine="alert"]')
    Select(section.find_element(By.CSS_SELECTOR, "select.sample")).select_by_value(sample.name)
    section.find_element(By.CSS_SELECTOR, "button.start").click()
    until(browser, lambda: "#/execution/" in browser.current_url, "execution page")
    # Then: the first round is posted and the execution waits at its Wait, in progress (blue). Slack's
    # pace posts a round of more users than its burst a slot apart, in simulated time: stepped by hand.
    stepped = step_clock_until(browser, lambda: _node(browser, wait_state).get_attribute("data-status") == "in_progress",
                               "at the Wait")
    clock_shown = browser.find_element(By.ID, "clock-time").text
    time.sleep(1.5)  # real time passes; simulated time does not
    assert _node(browser, wait_state).get_attribute("data-status") == "in_progress"
    assert browser.find_element(By.ID, "clock-time").text == clock_shown
    assert len(deployment.slack.posts) - posts_before == users
    # When: the clock is advanced by the interval from the console
    advance_clock(browser, interval)
    # Then: the second round is posted and it waits again (the Wait entered twice)
    stepped += step_clock_until(
        browser, lambda: _node(browser, wait_state).find_element(By.CSS_SELECTOR, "text.count").text == "×2", "second round")
    assert _node(browser, wait_state).get_attribute("data-status") == "in_progress"
    assert len(deployment.slack.posts) - posts_before == 2 * users
    assert len(browser.find_elements(By.CSS_SELECTOR, "#slack li")) == len(deployment.slack.posts)
    # When: Acknowledge is clicked on the round's last message in the execution page's Slack panel (as
    # in Slack: the link opens, and the Slack app's interactivity sends the app the signed click),
    # then the clock resumed
    clicks_before = len(deployment.slack.interactions)
    last = f'#slack li[data-seq="{deployment.slack.posts[-1].seq}"]'
    _in_new_tab(browser, lambda: browser.find_element(By.CSS_SELECTOR, last).find_element(By.LINK_TEXT, "Acknowledge"),
                lambda: "acknowledge" in browser.find_element(By.TAG_NAME, "body").text.lower(), "the link's page")
    until(browser, lambda: len(deployment.slack.interactions) == clicks_before + 1, "the click sent to the app")
    clicker = deployment.slack.interactions[-1].payload["user"]["id"]
    browser.find_element(By.ID, "clock-resume").click()
    # Then: the execution succeeds on the acknowledged branch (green), with no third round
    until(browser, lambda: browser.find_element(By.ID, "execution-status").get_attribute("data-status") == "SUCCEEDED", "ended")
    until(browser, lambda: _node(browser, acknowledged).get_attribute("data-status") == "succeeded", "graph updated")
    assert _node(browser, wait_state).get_attribute("data-status") == "succeeded"
    output = json.loads(sfn.describe_execution(executionArn=shown_execution(browser))["output"])
    assert output["stopped_reason"] == "acknowledged" and output["rounds_completed"] == 2
    assert output["acknowledged_by"] == clicker
    # Then: no third round; the one post after the click is the follow-up saying who acted
    assert len(deployment.slack.posts) - posts_before == 2 * users + 1
    # Then: the event history has the console's columns, from ExecutionStarted to ExecutionSucceeded
    rows = browser.find_elements(By.CSS_SELECTOR, "#history tbody tr")
    first, last = (row.find_elements(By.TAG_NAME, "td") for row in (rows[0], rows[-1]))
    assert [first[0].text, first[1].text, first[4].text] == ["1", "ExecutionStarted", "0"]
    # (elapsed: the two Waits, and the seconds the clock was stepped for the rounds' paced posts)
    assert last[1].text == "ExecutionSucceeded"
    assert int(last[4].text) == pytest.approx((2 * interval + stepped) * 1000, abs=2000)


# -- The Slack panel (issue 22, part 3) -----------------------------------------------------------
# What Slack shows and sends: https://api.slack.com/reference/surfaces/formatting (mrkdwn),
# https://api.slack.com/interactivity/handling (a click on a button, response_url),
# https://api.slack.com/docs/verifying-requests-from-slack (the signature).

def _slack_message(actions_url: str) -> dict:
    return {
        "text": "<@U0123ABCD>: alert console-slack-test is active",
        "unfurl_links": False,
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn",
                                         "text": "*Disk full* on web-1 for <@U0123ABCD>, see <https://example.com/runbook|the runbook>"}},
            {"type": "actions", "block_id": "alert-actions", "elements": [
                {"type": "button", "action_id": "acknowledge", "text": {"type": "plain_text", "text": "Acknowledge"},
                 "url": f"{actions_url}?token=console-test", "style": "primary"},
                {"type": "button", "action_id": "resolve", "text": {"type": "plain_text", "text": "Resolve"}, "value": "resolve"},
            ]},
        ],
    }


def _post_json(url: str, body: dict) -> int:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status


def test_the_slack_panel_shows_a_message_as_slack_does_and_its_buttons_act(deployment, console, browser):
    # Given: the deployer's set-up: interactivity's request URL is the app's action endpoint
    actions_url = deployment.output("AlertNotificationStack", "AlertActionsUrl")
    slack = deployment.slack
    assert slack.request_url == actions_url
    secret = deployment.client("secretsmanager").get_secret_value(SecretId=SLACK_SIGNING_SECRET_NAME)["SecretString"]
    # Given: a message with mrkdwn, a mention, a link, a link button and a plain button
    assert _post_json(slack.url, _slack_message(actions_url)) == 200
    seq = slack.posts[-1].seq
    interactions_before = len(slack.interactions)
    # When: the Slack page is open
    browser.get(console.url + "#/slack")
    item = f'#slack li[data-seq="{seq}"]'
    until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, f"{item} .slack-button"), "message drawn")
    # Then: drawn as Slack shows it: bold, the mention, the link, two buttons
    message = browser.find_element(By.CSS_SELECTOR, item)
    assert message.find_element(By.TAG_NAME, "strong").text == "Disk full"
    assert message.find_element(By.CSS_SELECTOR, ".mention").text == "@U0123ABCD"
    link = message.find_element(By.LINK_TEXT, "the runbook")
    assert link.get_attribute("href") == "https://example.com/runbook"
    assert [b.text for b in message.find_elements(By.CSS_SELECTOR, ".slack-button")] == ["Acknowledge", "Resolve"]
    # When: the link button is clicked
    # Then: its url opens in a new tab: the app's endpoint answers the browser
    _in_new_tab(browser, lambda: browser.find_element(By.CSS_SELECTOR, item).find_element(By.LINK_TEXT, "Acknowledge"),
                lambda: browser.current_url.startswith(actions_url), "the link's page")
    # Then: and the app got Slack's signed block_actions request for it
    until(browser, lambda: len(slack.interactions) == interactions_before + 1, "block_actions sent")
    sent = slack.interactions[-1]
    timestamp = sent.headers["X-Slack-Request-Timestamp"]
    expected = "v0=" + hmac.new(secret.encode(), f"v0:{timestamp}:{sent.request_body}".encode(), hashlib.sha256).hexdigest()
    assert sent.headers["X-Slack-Signature"] == expected
    assert sent.payload["type"] == "block_actions" and sent.payload["actions"][0]["action_id"] == "acknowledge"
    assert sent.status is not None  # the request URL answered
    # When: the plain (interactive) button is clicked
    # (the panel is drawn again when the first click's outcome arrives: the button is found afresh)
    click(browser, lambda: browser.find_element(By.CSS_SELECTOR, f'{item} button.slack-button[data-action="resolve"]'),
          "Resolve clicked")
    # Then: the request is sent, and the panel says what the app answered
    until(browser, lambda: len(slack.interactions) == interactions_before + 2, "second block_actions sent")
    resolve = slack.interactions[-1]
    assert resolve.payload["actions"][0]["value"] == "resolve" and resolve.payload["user"]["id"] == "U0123ABCD"
    until(browser, lambda: f"HTTP {resolve.status}" in browser.find_element(By.CSS_SELECTOR, f"{item} .slack-outcome").text,
           "outcome shown")
    # When: the app replaces the message through the click's response_url
    replaced = {"replace_original": True, "text": "Resolved by <@U0123ABCD>",
                "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "Resolved by <@U0123ABCD>"}}]}
    assert _post_json(resolve.payload["response_url"], replaced) == 200
    # Then: the panel shows the new message in place of the old one, without its buttons
    until(browser, lambda: "Resolved by @U0123ABCD" in browser.find_element(By.CSS_SELECTOR, item).text, "message replaced")
    assert browser.find_elements(By.CSS_SELECTOR, f"{item} .slack-button") == []


def test_the_console_api_returns_each_posts_whole_body(deployment, console):
    message = _slack_message("http://127.0.0.1:9/")
    assert _post_json(deployment.slack.url, message) == 200
    with urllib.request.urlopen(console.url + "api/slack", timeout=30) as response:
        newest = json.loads(response.read())[0]
    assert newest["body"] == message and newest["text"] == message["text"] and newest["status"] == 200


def _rules_on_every_alarm_change(deployment) -> int:
    """The rules alert stacks put on every alarm change: the app's (and the example app's, deployed beside it)."""
    patterns = [rule.get("EventPattern", "") for rule in deployment.client("events").list_rules()["Rules"]]
    count = sum(1 for pattern in patterns if '"aws.cloudwatch"' in pattern and "alarmName" not in pattern)
    assert count >= 1, "the alert stack has no rule on alarm state changes"
    return count


def _started_by(deployment, event: dict) -> list[str]:
    """The executions ``event`` started, as the emulator's EventBridge recorded them."""
    return [arn for arn, by in deployment.aws.router.started_by.items() if by["event"]["id"] == event["id"]]


def test_the_execution_page_shows_the_alarm_event_that_started_it(deployment, console, browser):
    # Given: a rule on CloudWatch alarm state changes whose target is the alert machine
    # (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch-and-eventbridge.html)
    sample = samples.sample("alert", "disk-full-web-1")
    deployment.seed("alert", sample.input)
    # EventBridge starts the machine as the target's role, which must allow it
    iam = deployment.client("iam")
    role = iam.create_role(RoleName="console-test", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }))["Role"]["Arn"]
    iam.put_role_policy(RoleName="console-test", PolicyName="start", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "states:StartExecution", "Resource": deployment.machine_arn("alert")}],
    }))
    events = deployment.client("events")
    events.put_rule(Name="console-test-alarm-starts-alert", EventPattern=json.dumps({
        "source": ["aws.cloudwatch"], "detail-type": ["CloudWatch Alarm State Change"],
        "detail": {"alarmName": ["console-test-alarm"]}}))
    events.put_targets(Rule="console-test-alarm-starts-alert", Targets=[{
        "Id": "alert", "Arn": deployment.machine_arn("alert"), "Input": json.dumps(sample.input), "RoleArn": role}])
    event = {
        "version": "0", "id": "c4a2d1e0-0000-4000-8000-000000000001", "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch", "account": "123456789012", "time": "2026-11-24T12:00:00Z", "region": "us-east-1",
        "resources": ["arn:aws:cloudwatch:us-east-1:123456789012:alarm:console-test-alarm"],
        "detail": {"alarmName": "console-test-alarm", "state": {"value": "ALARM", "reason": "Threshold Crossed"},
                   "previousState": {"value": "OK"}, "configuration": {"metrics": []}},
    }
    try:
        # When: the alarm's state-change event reaches the default bus
        # this rule, and each alert stack's rule on every alarm change (no alert names this alarm: it ignores it)
        assert deployment.aws.router.put(event) == 1 + _rules_on_every_alarm_change(deployment)
        [started] = _started_by(deployment, event)
        browser.get(console.url + "#/execution/" + started)
        until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, "#started-by dd"), "started-by shown")
        # Then: the page names the event, the alarm, its state change and the rule
        shown = browser.find_element(By.ID, "started-by").text
        for expected in ("aws.cloudwatch · CloudWatch Alarm State Change", "console-test-alarm", "OK → ALARM",
                         "console-test-alarm-starts-alert"):
            assert expected in shown
    finally:
        events.remove_targets(Rule="console-test-alarm-starts-alert", Ids=["alert"])
        events.delete_rule(Name="console-test-alarm-starts-alert")


_STARTER = '''
import json, os
import boto3

def handler(event, context):
    # What an app's alarm handler does: start an escalation for the alarm it was told about.
    return boto3.client("stepfunctions").start_execution(
        stateMachineArn=os.environ["MACHINE_ARN"], input=os.environ["INPUT"])["executionArn"]
'''


def test_an_execution_a_lambda_target_started_names_the_event_that_invoked_it(deployment, console):
    # Given: a rule whose Lambda target starts the alert machine (as the app's alarm handler does)
    sample = samples.sample("alert", "disk-full-web-1")
    deployment.seed("alert", sample.input)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("index.py", _STARTER)
    role = deployment.client("iam").create_role(RoleName="console-test-starter", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    }))["Role"]["Arn"]
    deployment.client("iam").put_role_policy(RoleName="console-test-starter", PolicyName="start", PolicyDocument=json.dumps({
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "states:StartExecution", "Resource": deployment.machine_arn("alert")}],
    }))
    function = deployment.client("lambda").create_function(
        FunctionName="console-test-starter", Runtime="python3.13", Role=role, Handler="index.handler",
        Code={"ZipFile": archive.getvalue()}, Timeout=30,
        Environment={"Variables": {"MACHINE_ARN": deployment.machine_arn("alert"), "INPUT": json.dumps(sample.input)}},
    )["FunctionArn"]
    events = deployment.client("events")
    rule = events.put_rule(Name="console-test-alarm-invokes-starter", EventPattern=json.dumps({
        "source": ["aws.cloudwatch"], "detail": {"alarmName": ["console-test-lambda-alarm"]}}))["RuleArn"]
    deployment.client("lambda").add_permission(FunctionName=function, StatementId="rule", Action="lambda:InvokeFunction",
                                               Principal="events.amazonaws.com", SourceArn=rule)
    events.put_targets(Rule="console-test-alarm-invokes-starter", Targets=[{"Id": "starter", "Arn": function}])
    event = {
        "version": "0", "id": "c4a2d1e0-0000-4000-8000-000000000002", "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch", "account": "123456789012", "time": "2026-11-24T12:00:00Z", "region": "us-east-1",
        "resources": ["arn:aws:cloudwatch:us-east-1:123456789012:alarm:console-test-lambda-alarm"],
        "detail": {"alarmName": "console-test-lambda-alarm", "state": {"value": "ALARM"}, "previousState": {"value": "OK"}},
    }
    try:
        # When: the event is delivered, and the function starts an execution
        # this rule, and each alert stack's rule on every alarm change (no alert names this alarm: it ignores it)
        assert deployment.aws.router.put(event) == 1 + _rules_on_every_alarm_change(deployment)
        wait_for(lambda: _started_by(deployment, event), "the function's StartExecution", TIMEOUT)
        # Then: the console's execution names the event and the Lambda target it went through
        [arn] = _started_by(deployment, event)
        with urllib.request.urlopen(console.url + "api/execution?arn=" + urllib.parse.quote(arn), timeout=30) as response:
            shown = json.loads(response.read())["started_by"]
        assert shown["event"] == event and shown["target"] == function
        assert shown["rule"] == "console-test-alarm-invokes-starter"
    finally:
        events.remove_targets(Rule="console-test-alarm-invokes-starter", Ids=["starter"])
        events.delete_rule(Name="console-test-alarm-invokes-starter")
        deployment.client("lambda").delete_function(FunctionName="console-test-starter")


def test_the_execution_page_shows_the_log_lines_of_the_functions_it_called(deployment, console, browser):
    # Given: the map-retry sample run to its end; one item fails once, so there are two passes, and the
    # Record Pass Results function logs a line per pass with Powertools' Logger
    payload = samples.sample("map-retry", "one-item-fails-once").input
    deployment.seed("map-retry", payload)
    result = deployment.run("map-retry", payload)
    assert result.status == "SUCCEEDED"
    history = deployment.client("stepfunctions").get_execution_history(executionArn=result.execution_arn, maxResults=1000)["events"]
    lambda_tasks = sum(1 for e in history if e["type"] == "TaskScheduled" and e["taskScheduledEventDetails"]["resourceType"] == "lambda")
    passes = sum(1 for e in history if e["type"] == "TaskStateEntered" and e["stateEnteredEventDetails"]["name"] == "Record Pass Results")
    assert passes == 2
    lambda_client = deployment.client("lambda")
    # When: a person opens the execution's page
    browser.get(console.url + "#/execution/" + result.execution_arn)
    blocks = lambda: browser.find_elements(By.CSS_SELECTOR, "#function-logs details.invocation-log")
    until(browser, lambda: len(blocks()) == lambda_tasks, f"{lambda_tasks} invocations' logs")
    # Then: each invocation the execution's tasks made shows its own lines from CloudWatch Logs, framed by
    # the runtime's START, END and REPORT lines (https://docs.aws.amazon.com/lambda/latest/dg/python-logging.html)
    recorded = []
    for block in blocks():
        request_id = block.find_element(By.TAG_NAME, "summary").text.split(" · ")[1]
        lines = [line.split("  ", 1)[1] for line in block.find_element(By.TAG_NAME, "pre").get_attribute("textContent").splitlines()]
        assert lines[0] == f"START RequestId: {request_id} Version: $LATEST"
        assert lines[-2] == f"END RequestId: {request_id}"
        assert lines[-1].startswith(f"REPORT RequestId: {request_id}\tDuration: ")
        # The group is the one the function's LoggingConfig names: each of the app's functions has its own
        # (stacks/common/python_function.py), not /aws/lambda/<name>.
        function = block.find_element(By.TAG_NAME, "summary").text.split(" · ")[0]
        group, stream = block.find_element(By.TAG_NAME, "p").text.split(" › ")
        assert group == lambda_client.get_function_configuration(FunctionName=function)["LoggingConfig"]["LogGroup"]
        assert not group.startswith("/aws/lambda/") and "/[$LATEST]" in stream
        # and the Record Pass Results function's JSON line, once per pass, in the invocation's own block
        mine = [json.loads(line) for line in lines if line.startswith("{") and '"Recorded pass"' in line]
        assert all(record["function_request_id"] == request_id for record in mine)
        recorded += mine
    assert [record["message"] for record in recorded] == ["Recorded pass"] * passes
    browser.execute_script("arguments[0].scrollIntoView()", browser.find_element(By.ID, "function-logs"))
    browser.save_screenshot("/tmp/console-function-logs.png")

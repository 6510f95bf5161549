"""The console's alarms page in a real headless Chromium (issue 22): a person fails an execution from the
console, advances the simulated clock by the alarm's period and sees the failed-executions alarm go
to ALARM and the status topic receive the alarm's notification.

CloudWatch evaluates an alarm at the end of each period (alarm-evaluation.html); an alarm action
publishes the documented notification (Notify_Users_Alarm_Changes.html):
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-evaluation.html
https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/Notify_Users_Alarm_Changes.html
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from selenium.webdriver.common.by import By

from tests.browser import advance_clock, shown_execution, until

# The page redraws every second: read what it shows in one script, never through stale elements.
_READ_ALARM = """
const row = document.querySelector(`#alarms tr[data-alarm="${arguments[0]}"]`);
return row && {state: row.dataset.state, updated: Number(row.dataset.updated), reason: row.querySelector("td.reason").textContent};
"""
_READ_MESSAGES = """
return [...document.querySelectorAll(`#topics section[data-topic="${arguments[0]}"] ol.messages li`)].map((item) => (
  {summary: item.querySelector("summary").textContent, text: item.querySelector("pre").textContent}));
"""


def _alarm_shown(browser: Any, alarm: str) -> dict:
    return browser.execute_script(_READ_ALARM, alarm) or {}


def test_a_failed_execution_puts_its_alarm_in_alarm_and_the_status_topic_shows_the_notification(
    deployment, console, browser
):
    # Given: the map retry machine's failed-executions alarm, OK
    cloudwatch = deployment.client("cloudwatch")
    machine = deployment.machine_arn("map-retry")
    [alarm] = [
        a for a in cloudwatch.describe_alarms(AlarmTypes=["MetricAlarm"])["MetricAlarms"]
        if a["MetricName"] == "ExecutionsFailed" and a["Dimensions"] == [{"Name": "StateMachineArn", "Value": machine}]
    ]
    name = alarm["AlarmName"]
    # Simulated time moves only when the test advances it: executions other tests left waiting would
    # otherwise carry it past a period boundary at any moment.
    deployment.aws.clock.pause()
    cloudwatch.set_alarm_state(AlarmName=name, StateValue="OK", StateReason="Reset by the browser test")
    topic = deployment.output("MonitoringStack", "StatusTopicArn")
    # When: an execution that fails is started from the console
    browser.get(console.url)
    until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, 'section[data-machine="map-retry"] button.start'), "machines")
    section = browser.find_element(By.CSS_SELECTOR, 'section[data-machine="map-retry"]')
    editor = section.find_element(By.CSS_SELECTOR, "textarea.input")
    editor.clear()
    editor.send_keys('{"items": "A-123"}')
    section.find_element(By.CSS_SELECTOR, "button.start").click()
    until(browser, lambda: browser.find_element(By.ID, "execution-status").get_attribute("data-status") == "FAILED", "failed")
    failed_at = deployment.client("stepfunctions").describe_execution(executionArn=shown_execution(browser))["stopDate"].timestamp()
    # Then: the alarms page shows the alarm still OK
    browser.get(console.url + "#/alarms")
    until(browser, lambda: _alarm_shown(browser, name).get("state") == "OK", "alarm listed OK")
    # When: the clock is advanced by the alarm's period from the console
    advance_clock(browser, alarm["Period"])
    # Then: the alarm is in ALARM, changed at a period boundary within one period of the failure
    until(browser, lambda: _alarm_shown(browser, name).get("state") == "ALARM", "alarm in ALARM")
    shown_alarm = _alarm_shown(browser, name)
    changed_at = shown_alarm["updated"]
    assert failed_at < changed_at <= failed_at + alarm["Period"]
    assert changed_at % alarm["Period"] == 0
    assert shown_alarm["reason"].startswith("Threshold Crossed: 1 out of the last 1")
    # Then: the status topic's panel shows the alarm's notification
    def notifications() -> list[dict]:
        found = []
        for item in browser.execute_script(_READ_MESSAGES, topic):
            try:
                message = json.loads(item["text"])
            except ValueError:
                continue
            if message.get("AlarmName") == name and message.get("NewStateValue") == "ALARM":
                found.append({"message": message, "summary": item["summary"]})
        return found

    changed = datetime.fromtimestamp(changed_at, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000+0000")
    until(browser, lambda: any(n["message"]["StateChangeTime"] == changed for n in notifications()), "notification shown")
    [shown] = [n for n in notifications() if n["message"]["StateChangeTime"] == changed]
    assert shown["summary"].startswith('ALARM: "MonitoringStack-')
    assert shown["message"]["OldStateValue"] == "OK"
    assert shown["message"]["Trigger"]["Dimensions"] == [{"value": machine, "name": "StateMachineArn"}]

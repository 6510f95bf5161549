"""A new account: 30 alerts raised at once where Lambda runs at most 10 functions at a time.

A new AWS account may start at a Lambda concurrency quota of 10; beyond it a synchronous invoke is
throttled with TooManyRequestsException (HTTP 429), which Step Functions sees as
Lambda.TooManyRequestsException, and a function URL answers 429
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html,
https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html). The session's deployment runs at
that quota for the test (``LocalAws.account_concurrency_quota``; the app reserves no concurrency, so
it deploys alike at any quota), so it costs no deployment of its own. Slack's webhook pace is the
stand-in's default: about one message a second, short bursts, 429 beyond
(https://api.slack.com/docs/rate-limits).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from emulator.follow import follow
from tests import test_alert_actions_execution as alarm_tests
from tests.emulator_helpers import wait_for
from tests.test_alert_actions_execution import alarm_changes_handled, execution_arns, put_alarm, set_alarm_state

ALERTS = 30
NEW_ACCOUNT_CONCURRENCY = 10
# The alarm tests' fixtures: the alert items a test writes (deleted after it), the Slack stand-in reset around it.
alerts, slack = alarm_tests.alerts, alarm_tests.slack


@pytest.mark.load
def test_30_alerts_at_a_new_accounts_concurrency_each_post_once_with_no_429_and_a_click_is_answered(
    deployment, alerts, slack
):
    # Given: 30 alerts, each named by its own alarm and paging its own person
    run = uuid.uuid4().hex[:6]
    alarms = {put_alarm(deployment, f"small-{run}-{n:02d}"): alerts.put(
        alert_id=f"small-{run}-{n:02d}", alarm_name=f"small-{run}-{n:02d}", user_accounts=[f"U0SMALL{n:03d}"],
        status="resolved") for n in range(ALERTS)}
    alert_ids = set(alarms.values())

    def notified() -> list:
        return [p for p in slack.delivered if run in json.dumps(p.body) and not p.body.get("text", "").startswith("Alert ")]

    clock = deployment.aws.clock
    started = time.monotonic()
    with deployment.aws.account_concurrency_quota(NEW_ACCOUNT_CONCURRENCY):
        # When: all 30 alarms enter ALARM in the same simulated second
        clock.pause()
        try:
            with ThreadPoolExecutor(10) as pool:
                list(pool.map(lambda alarm: set_alarm_state(deployment, alarm, "ALARM"), alarms))
        finally:
            clock.resume()
        # When: during the burst (its first posts out, the others waiting for their turn on the pace,
        # held there by the paused clock), the person mentioned in the first post clicks Acknowledge
        wait_for(lambda: len(notified()) >= 3, "the burst's first posts", timeout=180)
        clock.pause()
        try:
            still_running = len(execution_arns(deployment, alert_ids, status="RUNNING"))
            first = notified()[0]
            clicked = slack.click(first.seq, block=1, element=0)
        finally:
            clock.resume()
        wait_for(lambda: alarm_changes_handled(deployment, set(alarms), "ALARM") == ALERTS, "30 alarm changes", timeout=180)
        wait_for(lambda: not execution_arns(deployment, alert_ids, status="RUNNING"), "the escalations to end", timeout=300)
    print(f"\n30 alerts at concurrency 10: {time.monotonic() - started:.1f} s of wall time")
    # Then: the click came while escalations were still waiting, and was answered, not throttled
    assert still_running > 0
    assert clicked["interaction"]["status"] == 200, clicked["interaction"]
    clicker = re.search(r"<@(U0SMALL\d{3})>", first.body["text"]).group(1)
    clicked_alert = next(a for a in alert_ids if a in first.body["text"])
    assert alerts.get(clicked_alert)["acknowledged_by"] == clicker
    # Then: one escalation per alert, each succeeded with its one notification
    started_executions = execution_arns(deployment, alert_ids)
    assert sorted(len(arns) for arns in started_executions.values()) == [1] * ALERTS
    ended = [follow(deployment.aws, arns[0]) for arns in started_executions.values()]
    assert Counter(r.status for r in ended) == {"SUCCEEDED": ALERTS}, Counter((r.error, (r.cause or "")[:80]) for r in ended)
    assert all(r.output["notifications_sent"] == 1 and r.output["notifications_failed"] == [] for r in ended)
    # Then: each person posted exactly once
    assert Counter(user for p in notified() for user in set(re.findall(r"U0SMALL\d{3}", json.dumps(p.body)))) == {
        f"U0SMALL{n:03d}": 1 for n in range(ALERTS)}
    # Then: Slack refused no post (issue 38): every post to the webhook took a slot on the shared pace
    # and went in it (slack_pace), the click's follow-up included
    refused = [p for p in slack.posts if p.status == 429]
    assert refused == [], f"Slack refused {len(refused)} post(s) with 429: " + "; ".join(
        f"#{p.seq} at {p.ts}: {str(p.body)[:50]}" for p in refused)

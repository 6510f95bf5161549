"""Alarms as CloudWatch moves them, through Slack as it paces (issue 30): an alarm storm, and a click.

``alarm_storm``: 200 alarms enter ALARM in one (simulated) second, each raising its own alert of one
user and one round, through the one webhook, with the Slack stand-in keeping Slack's pace (its
default). Reported: posts delivered and refused, the time to the storm's first post and to drain,
each alert's time to its first notification, and the transitions an alert cost.

``click_answer``: the work the action endpoint does before it answers a signed Slack click: the AWS
API calls the emulator receives meanwhile, and the milliseconds to the answer, cold and warm.
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from boto3.dynamodb.types import TypeSerializer

from emulator.awslambda.runtime import IDLE_INSTANCE_SECONDS
from emulator.follow import follow
from emulator.session import Deployment
from patterns_common.alert_executions import alert_key, alert_key_of

STACK = "AlertNotificationStack"
STORM_ALARMS = 200
CLICKS_WARM = 5


def _put_alarm(deployment: Deployment, name: str) -> None:
    # A day's period: no evaluation of the (missing) data moves the state meanwhile.
    deployment.client("cloudwatch").put_metric_alarm(
        AlarmName=name, Namespace="Bench/Storm", MetricName=name, Statistic="Sum", Period=86400, EvaluationPeriods=1,
        Threshold=1.0, ComparisonOperator="GreaterThanOrEqualToThreshold",
    )


def _put_alert(deployment: Deployment, alert_id: str, **fields: Any) -> None:
    item = {"alert_id": alert_id, "status": "resolved", "notification_count": 1, "interval_seconds": 60,
            "message": f"Bench alert {alert_id}", **fields}
    serialize = TypeSerializer().serialize
    deployment.client("dynamodb").put_item(TableName=deployment.output(STACK, "AlertTableName"),
                                           Item={k: serialize(v) for k, v in item.items()})


def _delete_alerts(deployment: Deployment, alert_ids: list[str]) -> None:
    for alert_id in alert_ids:
        deployment.client("dynamodb").delete_item(TableName=deployment.output(STACK, "AlertTableName"),
                                                  Key={"alert_id": {"S": alert_id}})


def _executions(deployment: Deployment, alert_ids: list[str]) -> dict[str, str]:
    keys = {alert_key(a): a for a in alert_ids}
    found = {}
    pages = deployment.client("stepfunctions").get_paginator("list_executions").paginate(
        stateMachineArn=deployment.machine_arn("alert"))
    for page in pages:
        for execution in page["executions"]:
            if (key := alert_key_of(execution["name"])) in keys:
                found[keys[key]] = execution["executionArn"]
    return found


def _wait(condition, what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.5)


def alarm_storm(deployment: Deployment) -> dict[str, Any]:
    slack, aws = deployment.slack, deployment.aws
    slack.reset()  # Slack's pace on, from a full burst
    run = uuid.uuid4().hex[:6]
    names = [f"bench-storm-{run}-{n:03d}" for n in range(STORM_ALARMS)]
    for name in names:
        _put_alarm(deployment, name)
        _put_alert(deployment, name, alarm_name=name, user_accounts=[f"U0B{name[-3:]}{run.upper()}"])
    try:
        started = time.monotonic()
        aws.clock.pause()
        raised_at = aws.clock.now()
        try:
            with ThreadPoolExecutor(20) as pool:
                list(pool.map(lambda name: deployment.client("cloudwatch").set_alarm_state(
                    AlarmName=name, StateValue="ALARM", StateReason="bench"), names))
        finally:
            aws.clock.resume()
        _wait(lambda: len(_executions(deployment, names)) == STORM_ALARMS, "every escalation to start", 300)
        results = [follow(aws, arn, timeout_seconds=600) for arn in _executions(deployment, names).values()]
        wall = time.monotonic() - started
    finally:
        _delete_alerts(deployment, names)
    posts = [p for p in slack.posts if isinstance(p.body, dict) and run in str(p.body.get("text", ""))]
    delivered = [p for p in posts if 200 <= p.status < 300]
    first_by_alert: dict[str, float] = {}
    for post in delivered:
        alert = next(name for name in names if name in post.body["text"])
        first_by_alert[alert] = min(first_by_alert.get(alert, float("inf")), float(post.ts) - raised_at)
    waits = sorted(first_by_alert.values())
    return {
        "alarms": STORM_ALARMS,
        "succeeded": sum(r.status == "SUCCEEDED" for r in results),
        # Where the others ended, and why (a loaded machine times tasks out: their timeouts run on the
        # simulated clock, which flows at real speed while work is pending)
        "failed_at": dict(Counter(f"{_last_state(r)}: {r.error}" for r in results if r.status != "SUCCEEDED")),
        "notifications_failed": sum(len(r.output.get("notifications_failed", [])) for r in results if r.output),
        "posts_delivered": len(delivered),
        "posts_refused_429": sum(p.status == 429 for p in posts),
        "first_post_seconds": waits[0] if waits else None,
        "drained_seconds": waits[-1] if waits else None,
        "first_notification_median_seconds": statistics.median(waits) if waits else None,
        "first_notification_p95_seconds": waits[int(len(waits) * 0.95) - 1] if waits else None,
        "waited_for_the_channel": sum(r.entered("Wait For The Channel's Turn") for r in results),
        # Of the escalations that succeeded: those that waited for the channel, and those that did not
        "transitions_waiting": _mean([r.transitions for r in results if r.status == "SUCCEEDED" and _waited(r)]),
        "transitions_not_waiting": _mean([r.transitions for r in results if r.status == "SUCCEEDED" and not _waited(r)]),
        "wall_seconds": wall,
    }


def _waited(result: Any) -> bool:
    return result.entered("Wait For The Channel's Turn") > 0


def _mean(values: list[int]) -> float | None:
    return statistics.mean(values) if values else None


def _last_state(result: Any) -> str:
    entered = [e for e in result.events if e["type"].endswith("StateEntered")]
    return entered[-1]["stateEnteredEventDetails"]["name"] if entered else "?"


def click_answer(deployment: Deployment) -> dict[str, Any]:
    """A signed Slack click on a real notification, cold (a new execution environment) and warm."""
    slack, aws = deployment.slack, deployment.aws
    slack.reset()
    clicks: list[dict[str, Any]] = []
    alert_ids = []
    try:
        for n in range(1 + CLICKS_WARM):
            alert_id = f"bench-click-{uuid.uuid4().hex[:6]}"
            alert_ids.append(alert_id)
            _put_alert(deployment, alert_id, status="active", user_accounts=[f"U0CLICK{n}"])
            result = deployment.run("alert", {"alert_id": alert_id})
            if result.status != "SUCCEEDED":
                raise RuntimeError(f"the notification for {alert_id} ended {result.status}")
            [post] = [p for p in slack.delivered if alert_id in str(p.body.get("text", ""))]
            if n == 0:  # the emulator stops an instance idle this long: the next request starts a new one
                time.sleep(IDLE_INSTANCE_SECONDS + 1)
            with aws.api_calls.counting() as calls:
                started = time.perf_counter()
                clicked = slack.click(post.seq, block=1, element=0)
                milliseconds = (time.perf_counter() - started) * 1000
            if clicked["interaction"]["status"] != 200:
                raise RuntimeError(f"the click on {alert_id} was answered {clicked['interaction']['status']}")
            clicks.append({"cold": n == 0, "milliseconds": milliseconds, "calls": dict(calls)})
    finally:
        _delete_alerts(deployment, alert_ids)
    warm = [c for c in clicks if not c["cold"]]
    return {
        "cold": clicks[0],
        "warm_median_milliseconds": statistics.median(c["milliseconds"] for c in warm),
        "warm_calls": warm[-1]["calls"],
        "warm_clicks": len(warm),
    }

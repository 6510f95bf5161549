"""What resolving an on-call schedule costs a round: the same alert paging a person, then a schedule.

Both alerts notify one target for ROUNDS rounds; the second names ``schedule:<id>`` whose only member
is the first's person, so the difference is Find Who Is On Call alone: its state transitions per
round, and its Lambda invocation's duration in the emulator (this machine's milliseconds, not Lambda's).
It also times /oncall from the Slack stand-in's signed POST to the answer (Slack allows 3 s).
"""

from __future__ import annotations

import time
import urllib.request
import uuid
from statistics import median
from urllib.parse import urlencode

from bench.measure import observe
from emulator.session import Deployment
from emulator.slack import TEAM

ROUNDS = 3
INTERVAL_SECONDS = 60
FUNCTION = "FindWhoIsOnCall"
SLASH_COMMANDS = 3  # the first includes the endpoint's cold start


def schedule_resolution_cost(deployment: Deployment) -> dict:
    alerts = deployment.output("AlertNotificationStack", "AlertTableName")
    on_call = deployment.output("AlertNotificationStack", "OnCallTableName")
    dynamodb = deployment.client("dynamodb")
    suffix = uuid.uuid4().hex[:6]
    person, schedule_id = f"bench-oncall-{suffix}@example.com", f"bench-{suffix}"
    dynamodb.put_item(TableName=on_call, Item={
        "schedule_id": {"S": schedule_id}, "time_zone": {"S": "UTC"},
        "layers": {"L": [{"M": {"members": {"L": [{"S": person}]}, "start": {"S": "2020-01-01T00:00"},
                                "shift": {"S": "P1W"}}}]},
    })
    observed = {}
    try:
        for kind, target in (("person", person), ("schedule", f"schedule:{schedule_id}")):
            alert_id = f"bench-{kind}-{suffix}"
            dynamodb.put_item(TableName=alerts, Item={
                "alert_id": {"S": alert_id}, "notification_count": {"N": str(ROUNDS)},
                "escalation": {"L": [{"L": [{"S": target}]}]}, "status": {"S": "active"},
                "interval_seconds": {"N": str(INTERVAL_SECONDS)}, "message": {"S": "Benchmark alert"},
            })
            try:
                observed[kind] = observe(deployment.aws, deployment.machine_arn("alert"), {"alert_id": alert_id})
            finally:
                dynamodb.delete_item(TableName=alerts, Key={"alert_id": {"S": alert_id}})
        slash_ms = [_slash_command_ms(deployment) for _ in range(SLASH_COMMANDS)]
    finally:
        dynamodb.delete_item(TableName=on_call, Key={"schedule_id": {"S": schedule_id}})
    durations = [1000 * (r["end"] - r["start"]) for r in observed["schedule"].invocations if FUNCTION in r["function"]]
    transitions = {kind: o.result.transitions for kind, o in observed.items()}
    return {
        "rounds": ROUNDS,
        "statuses": {kind: o.result.status for kind, o in observed.items()},
        "transitions": transitions,
        "extra_transitions_per_round": (transitions["schedule"] - transitions["person"]) / ROUNDS,
        "find_invocations": len(durations),
        "find_median_ms": round(median(durations), 1) if durations else None,
        "slash_command_ms": [round(ms, 1) for ms in slash_ms],
    }


def _slash_command_ms(deployment: Deployment) -> float:
    """Wall milliseconds of one signed /oncall (a list of every schedule) through the function URL."""
    body = urlencode({"command": "/oncall", "text": "", "user_id": "U0BENCH01", "team_id": TEAM["id"]})
    stamp = str(int(deployment.aws.clock.now()))
    request = urllib.request.Request(
        deployment.output("AlertNotificationStack", "AlertActionsUrl"), data=body.encode(), method="POST",
        headers={"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": stamp,
                 "X-Slack-Signature": deployment.slack.sign(stamp, body)})
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback
        response.read()
    return 1000 * (time.monotonic() - started)


def cost_lines(cost: dict) -> list[str]:
    return [
        f"  {cost['rounds']} rounds paging a person: {cost['transitions']['person']} transitions; "
        f"paging a schedule: {cost['transitions']['schedule']} ({cost['statuses']})",
        f"  resolving a schedule per round: +{cost['extra_transitions_per_round']:g} transition, "
        f"1 Lambda invocation of {cost['find_median_ms']} ms (median of {cost['find_invocations']}, in the emulator)",
        f"  /oncall answered in {', '.join(f'{ms:g}' for ms in cost['slash_command_ms'])} ms of wall time (Slack allows 3000)",
    ]

"""The issue's scenarios, each run for the seed design and for ours in the same emulator."""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from bench.deploy import SEED002_ATTEMPTS_TABLE, BenchMachines, use_runner
from bench.measure import Observed, Run, run
from emulator.session import Deployment
from patterns_common.items_demo import fails_by_chance

SEED001 = "seed 001, repaired"
OURS = "ours"
SEED004 = "seed 004, 1 s polling"
OURS_POLLER = "ours, initial wait + 60 s polling"
OURS_CALLBACK = "ours, callback"
SEED002_WHOLE = "seed 002, whole-Map Retry"
SEED002_FAILED_ONLY = "seed 002, failed-only second pass"
# Our designs end SUCCEEDED in every scenario but one: two passes cannot retry every item at 20% failures
# an attempt. A run of ours that ends otherwise is our design failing: the bench fails and writes nothing.
# (The seeds' endings are what the bench shows of them, not expectations.)
OURS_EXPECTED_TO_FAIL = {"ours, 2 passes"}


def unexpected_endings(runs: Iterable[Run]) -> list[str]:
    """Each run of our designs that ended otherwise than its scenario expects, said in a line."""
    return [
        f"{run.machine}, {run.scenario}, {run.design}: {run.status}" + (f" ({run.error})" if run.error else "")
        for run in runs
        if run.design.startswith(OURS) and (run.status == "SUCCEEDED") == (run.design in OURS_EXPECTED_TO_FAIL)
    ]

# The largest is the most rounds of 40 users the alert machine accepts: its worst-case history (every
# notification waiting for its slot, then failing after every retry) must fit 25,000 events.
ALERT_SIZES = [(1, 1), (3, 3), (10, 5), (40, 6)]
ROUND_INTERVAL_SECONDS = 300  # the seed's fixed Sleep; ours reads it from the alert item
JOB_DURATIONS = [(60, "1 min job"), (900, "15 min job"), (3600, "1 h job")]
# The longest job the app's demo runners accept (they are Lambdas); longer ones use the bench runners.
DEMO_RUNNER_MAX_SECONDS = 880
MAP_SIZES = [10, 100, 1000]
FAILURE_RATE = 0.2
# Ours takes up to this many items inline; 1,000 items are refused inline (their state would pass
# the 200 KiB budget) and go through S3 and a Distributed Map, as docs/map-retry.md says.
INLINE_MAX_ITEMS = 100


def alert_runs(deployment: Deployment, machines: BenchMachines) -> list[Run]:
    table = deployment.output("AlertNotificationStack", "AlertTableName")
    dynamodb = deployment.client("dynamodb")
    runs: list[Run] = []
    for users, rounds in ALERT_SIZES:
        alert_id = f"bench-{users}x{rounds}-{uuid.uuid4().hex[:6]}"
        accounts = {str(n): f"user{n:02d}@example.com" for n in range(1, users + 1)}
        dynamodb.put_item(TableName=table, Item={
            "alert_id": {"S": alert_id},
            "notification_count": {"N": str(rounds)},
            # The seed's map form, which ours accepts too: both designs read this one item.
            "user_accounts": {"M": {key: {"S": user} for key, user in accounts.items()}},
            "status": {"S": "active"},
            "interval_seconds": {"N": str(ROUND_INTERVAL_SECONDS)},
            "message": {"S": "Benchmark alert"},
        })
        scenario = f"{users} user{'s' if users > 1 else ''} x {rounds} round{'s' if rounds > 1 else ''}"
        try:
            for design, arn in ((SEED001, machines.seed001_alert), (OURS, deployment.machine_arn("alert"))):
                deployment.slack.reset()
                # Cost, not pace: the seed posts a round at once, which Slack's pace would refuse
                # (the storm section measures the pace, with the stand-in keeping it)
                deployment.slack.lift_rate_limit()
                figures, observed = run(
                    deployment.aws, arn, {"alert_id": alert_id}, machine="alert", scenario=scenario, design=design
                )
                figures.details["slack_posts"] = len(deployment.slack.posts)
                figures.details["expected_posts"] = users * rounds
                figures.details.update(notification_times(observed, NOTIFIERS[design]))
                runs.append(figures)
        finally:
            # An active alert left in the table would be dispatched whenever the schedule fires on the
            # simulated clock (the poller's hour-long jobs pass the hour), and run beside later sections.
            dynamodb.delete_item(TableName=table, Key={"alert_id": {"S": alert_id}})
    return runs


# The function that posts one notification, per design (a part of its name).
NOTIFIERS = {SEED001: "seed001_notify_alerts", OURS: "NotifyUser"}


def notification_times(observed: Observed, notifier: str) -> dict[str, float]:
    """Simulated seconds from raising the alert (the execution's start) to its first notification
    delivered, and the longest a round took from its first notification starting to its last done.

    Rounds are told apart by the wait between them (300 s): a notification starting more than half
    of it after the previous one starts a new round.
    """
    calls = sorted((r["start"], r["end"]) for r in observed.invocations if notifier in r["function"] and "end" in r)
    rounds: list[list[tuple[float, float]]] = []
    for call in calls:
        if not rounds or call[0] - rounds[-1][-1][0] > ROUND_INTERVAL_SECONDS / 2:
            rounds.append([])
        rounds[-1].append(call)
    return {
        "first_notification_seconds": round(calls[0][1] - observed.result.start.timestamp(), 1),
        "slowest_round_seconds": round(max(max(end for _, end in r) - r[0][0] for r in rounds), 1),
    }


def poller_runs(deployment: Deployment, machines: BenchMachines) -> list[Run]:
    runs: list[Run] = []
    app_runner = None
    try:
        for duration, scenario in JOB_DURATIONS:
            long_job = duration > DEMO_RUNNER_MAX_SECONDS
            if long_job and app_runner is None:
                app_runner = use_runner(deployment, machines.job_runner_name)
            runner = "bench runner" if long_job else "app's demo runner"
            timeout = 2 * duration
            designs = [
                (SEED004, machines.seed004_poller, {"job_duration_seconds": duration, "timeout_seconds": timeout},
                 "seed runner stand-in"),
                (OURS_POLLER, deployment.machine_arn("poller"),
                 {"job": {"duration_seconds": duration}, "timeout_seconds": timeout,
                  "initial_wait_seconds": duration, "poll_interval_seconds": 60}, runner),
                (OURS_CALLBACK, machines.callback_long if long_job else deployment.machine_arn("callback"),
                 {"job": {"duration_seconds": duration}, "timeout_seconds": timeout}, runner),
            ]
            for design, arn, payload, design_runner in designs:
                figures, observed = run(deployment.aws, arn, payload, machine="poller", scenario=scenario, design=design)
                figures.details.update(polls=observed.result.entered("Get Job Status"), runner=design_runner)
                runs.append(figures)
    finally:
        if app_runner is not None:  # the demo scenarios timed later run the app as deployed
            use_runner(deployment, app_runner)
    return runs


# -- Map retry ---------------------------------------------------------------------------------
def item_figures(ids: Iterable[str], processings: Mapping[str, int]) -> dict[str, int]:
    """Per-item counts -> what the Map retry table shows.

    Every design draws an item's outcome on its k-th processing as ``fails_by_chance(id, k)``, so
    the counts alone say which processing first succeeded.
    """
    total = reprocessed = left_failed = never = 0
    for item_id in ids:
        count = processings.get(item_id, 0)
        total += count
        first_success = next((k for k in range(1, count + 1) if not fails_by_chance(item_id, k, FAILURE_RATE)), None)
        if count == 0:
            never += 1
        if first_success is None:
            left_failed += 1
        else:
            reprocessed += count - first_success
    return {"processings": total, "reprocessed_succeeded": reprocessed, "left_failed": left_failed,
            "never_processed": never}


def _seed_processings(deployment: Deployment, execution_arn: str) -> Counter:
    dynamodb = deployment.client("dynamodb")
    counts: Counter = Counter()
    kwargs: dict[str, Any] = {
        "TableName": SEED002_ATTEMPTS_TABLE,
        "KeyConditionExpression": "execution_id = :e",
        "ExpressionAttributeValues": {":e": {"S": execution_arn}},
    }
    while True:
        page = dynamodb.query(**kwargs)
        for item in page["Items"]:
            counts[item["item_id"]["S"]] = int(item["attempts"]["N"])
        if "LastEvaluatedKey" not in page:
            return counts
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _inline_processings(observed: Observed) -> Counter:
    """Ours, inline: one Process Item task per processing, its payload naming the item."""
    counts: Counter = Counter()
    for event in observed.result.events:
        if event["type"] != "TaskScheduled":
            continue
        payload = json.loads(event["taskScheduledEventDetails"]["parameters"]).get("Payload")
        if isinstance(payload, dict) and "attempt" in payload and isinstance(payload.get("item"), dict):
            counts[payload["item"]["id"]] += 1
    return counts


def _s3_processings(deployment: Deployment, bucket: str, execution_name: str) -> Counter:
    """Ours, S3 mode: each chunk's results object lists the items its processor ran."""
    s3 = deployment.client("s3")
    counts: Counter = Counter()
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"runs/{execution_name}/"):
        for entry in page.get("Contents", []):
            if "/results-" in entry["Key"]:
                results = json.loads(s3.get_object(Bucket=bucket, Key=entry["Key"])["Body"].read())
                counts.update(r if isinstance(r, str) else r["id"] for r in results)
    return counts


def _chunk_child_transitions(observed: Observed) -> int:
    """Distributed Map children are executions of their own; the parent's history does not hold their
    states. Each child enters Process Item Chunk once per invocation, and Mark Chunk As Failed when it fails."""
    chunks = [c for c in observed.invocations if "ChunkProcessor" in c["function"]]
    return len(chunks) + sum(1 for c in chunks if c["error"])


def map_runs(deployment: Deployment, machines: BenchMachines) -> list[Run]:
    bucket = deployment.output("MapRetryStack", "ItemsBucketName")
    runs: list[Run] = []
    for size in MAP_SIZES:
        ids = [f"item-{n:04d}" for n in range(1, size + 1)]
        scenario = f"{size:,} items"
        seed_input = {"products": [{"id": item_id, "name": item_id} for item_id in ids]}
        for design, arn in ((SEED002_WHOLE, machines.seed002_whole_map), (SEED002_FAILED_ONLY, machines.seed002_failed_only)):
            figures, observed = run(deployment.aws, arn, seed_input, machine="map-retry", scenario=scenario, design=design)
            figures.details.update(item_figures(ids, _seed_processings(deployment, observed.result.execution_arn)))
            runs.append(figures)
        items = [{"id": item_id, "failure_rate": FAILURE_RATE} for item_id in ids]
        for passes in (2, 5):
            design = f"ours, {passes} passes"
            if size <= INLINE_MAX_ITEMS:
                figures, observed = run(deployment.aws, deployment.machine_arn("map-retry"),
                                        {"items": items, "max_attempts": passes},
                                        machine="map-retry", scenario=scenario, design=design)
                counts = _inline_processings(observed)
                figures.details["mode"] = "inline"
            else:
                name = f"bench-{size}-{passes}-{uuid.uuid4().hex[:6]}"
                key = f"inputs/{name}.json"
                deployment.client("s3").put_object(Bucket=bucket, Key=key, Body=json.dumps(items).encode())
                figures, observed = run(deployment.aws, deployment.machine_arn("map-retry"),
                                        {"items_s3_uri": f"s3://{bucket}/{key}", "max_attempts": passes},
                                        machine="map-retry", scenario=scenario, design=design, name=name)
                figures.transitions += _chunk_child_transitions(observed)
                counts = _s3_processings(deployment, bucket, name)
                figures.details["mode"] = "S3"
            figures.details.update(item_figures(ids, counts))
            runs.append(figures)
    return runs

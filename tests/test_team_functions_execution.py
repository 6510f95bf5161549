"""The example app (examples/): a team's own functions run by the pattern constructs, deployed beside the
app in the emulator and executed (issue 24, "Done when")."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from tests.emulator_helpers import unique

STACK = "TeamPatternsStack"
ITEMS = [{"id": "order-1"}, {"id": "order-2", "flaky": True}, {"id": "order-3"}, {"id": "order-4", "flaky": True}]


def _run(deployment: Any, output_key: str, payload: Any) -> tuple[Any, list[dict]]:
    """Follow one execution of the example's machine; also what the Lambda runtime ran meanwhile."""
    from emulator.follow import run

    runtime = deployment.aws.runtime
    before = len(runtime.invocations)
    result = run(deployment.aws, deployment.output(STACK, output_key), payload, name=unique("team"))
    return result, runtime.invocations[before:]


def _processor_payloads(events: list[dict]) -> list[dict]:
    """What each Process Item task handed the team's processor, from the execution history."""
    scheduled = [json.loads(e["taskScheduledEventDetails"]["parameters"]) for e in events if e["type"] == "TaskScheduled"]
    return [p["Payload"] for p in scheduled if "ItemProcessor" in p["FunctionName"]]


def _team_function(deployment: Any, part: str) -> str:
    return deployment.stack_resource(STACK, "AWS::Lambda::Function", part)


def test_the_map_retries_only_the_items_the_teams_processor_failed(deployment):
    # When: items whose first attempt the team's processor fails (flaky) beside items it processes at once
    result, calls = _run(deployment, "MapRetryStateMachineArn", {"items": ITEMS, "max_attempts": 3})
    # Then: all succeeded in two passes; the flaky ones took two attempts, the others one
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output["attempts"] == {"order-1": 1, "order-2": 2, "order-3": 1, "order-4": 2}
    assert sorted(result.output["succeeded"]) == ["order-1", "order-2", "order-3", "order-4"]
    assert result.output["passes"] == 2
    # ...the history shows the team's processor given {item, attempt}: pass 2 only the failed items
    handed = [(p["item"]["id"], p["attempt"]) for p in _processor_payloads(result.events)]
    assert Counter(handed) == Counter({("order-1", 1): 1, ("order-2", 1): 1, ("order-3", 1): 1, ("order-4", 1): 1,
                                       ("order-2", 2): 1, ("order-4", 2): 1})
    # ...and the team's function is what ran them: 6 invocations, the 2 first attempts of flaky items failing
    processor = _team_function(deployment, "ItemProcessor")
    team_calls = [c for c in calls if c["function"] == processor]
    assert len(team_calls) == 6
    assert sorted(str(c["error"]) for c in team_calls).count("None") == 4


def test_a_failed_item_records_the_error_the_teams_processor_raised(deployment):
    # When: one attempt only, so the flaky item stays failed
    result, _ = _run(deployment, "MapRetryStateMachineArn", {"items": ITEMS[:2], "max_attempts": 1, "fail_on_remaining": False})
    # Then: its error is the name of the exception the team's handler raised
    assert result.status == "SUCCEEDED"
    assert result.output["failed"] == [{"id": "order-2", "error": "DownstreamNotReady"}]


def test_s3_mode_runs_the_teams_processor_once_per_item_attempt_from_the_chunk_processor(deployment):
    # Given: the items as an uploaded list
    bucket = deployment.output(STACK, "ItemsBucketName")
    key = f"inputs/{unique('team-items')}.json"
    deployment.client("s3").put_object(Bucket=bucket, Key=key, Body=json.dumps(ITEMS).encode())
    # When
    result, calls = _run(deployment, "MapRetryStateMachineArn", {"items_s3_uri": f"s3://{bucket}/{key}", "max_attempts": 3})
    # Then: the same outcome as inline mode
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output["succeeded_count"] == 4 and result.output["failed_count"] == 0
    full = json.loads(deployment.client("s3").get_object(Bucket=bucket, Key=result.output["result_s3_uri"].split("/", 3)[3])["Body"].read())
    assert full["attempts"] == {"order-1": 1, "order-2": 2, "order-3": 1, "order-4": 2}
    # ...each item attempt was one synchronous invocation of the team's function, made by a chunk processor
    processor = _team_function(deployment, "ItemProcessor")
    team_calls = [c for c in calls if c["function"] == processor]
    assert len(team_calls) == 6 and {c["type"] for c in team_calls} == {"RequestResponse"}
    assert [c for c in calls if "ChunkProcessor" in c["function"]], "no chunk processor ran"


def test_the_poller_follows_the_teams_runner_to_succeeded(deployment):
    # When: a job of 3 steps (one second each), polled every 2 s
    result, _ = _run(deployment, "JobPollerStateMachineArn",
                     {"job": {"steps": 3}, "timeout_seconds": 60, "poll_interval_seconds": 2})
    # Then
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output["status"] == "succeeded"
    # ...and the bucket holds what the helper wrote for the runner
    bucket = deployment.output(STACK, "JobBucketName")
    prefix = f"jobs/{result.output['execution_md5']}/"
    s3 = deployment.client("s3")
    assert s3.get_object(Bucket=bucket, Key=prefix + "status.txt")["Body"].read() == b"succeeded"
    assert json.loads(s3.get_object(Bucket=bucket, Key=prefix + "result.json")["Body"].read())["status"] == "succeeded"


def test_the_poller_follows_the_teams_runner_to_failed_with_its_message(deployment):
    # When: the runner's step 2 of 3 fails
    result, _ = _run(deployment, "JobPollerStateMachineArn",
                     {"job": {"steps": 3, "fail_at_step": 2}, "timeout_seconds": 60, "poll_interval_seconds": 2})
    # Then: the execution fails with JobFailed, the cause is the message the runner reported
    assert result.status == "FAILED"
    assert (result.error, result.cause) == ("JobFailed", "step 2 of 3 failed")


def test_the_alert_posts_through_the_teams_notifier(deployment):
    # Given: an alert of the team's with one reachable user and one its paging tool cannot reach
    alert_id = unique("team-alert")
    users = ["ops@example.com", "oncall@unreachable.example.com"]
    deployment.client("dynamodb").put_item(
        TableName=deployment.output(STACK, "AlertTableName"),
        Item={
            "alert_id": {"S": alert_id},
            "notification_count": {"N": "2"},
            "user_accounts": {"L": [{"S": user} for user in users]},
            "interval_seconds": {"N": "60"},
            "message": {"S": "Queue depth above 1,000"},
        },
    )
    # When
    result, _ = _run(deployment, "AlertStateMachineArn", {"alert_id": alert_id})
    # Then: two rounds; the user the notifier raised for is listed with the notifier's error name
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert result.output["rounds_completed"] == 2 and result.output["stopped_reason"] == "count_reached"
    assert result.output["notifications_sent"] == 2
    assert sorted(map(json.dumps, result.output["notifications_failed"])) == sorted(
        json.dumps({"round": r, "user": users[1], "error": "RecipientUnreachable"}) for r in (1, 2)
    )
    # ...and the team's queue holds one message per delivered notification, the payload the notifier got
    sqs = deployment.client("sqs")
    queue = deployment.output(STACK, "NotificationQueueUrl")
    messages = []
    while answer := sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages"):
        messages += [json.loads(m["Body"]) for m in answer]
        for m in answer:
            sqs.delete_message(QueueUrl=queue, ReceiptHandle=m["ReceiptHandle"])
    mine = sorted((m for m in messages if m["alert_id"] == alert_id), key=lambda m: m["round"])
    assert [(m["round"], m["user"], m["message"]) for m in mine] == [(r, users[0], "Queue depth above 1,000") for r in (1, 2)]
    assert all(set(m["links"]) == {"acknowledge", "resolve"} and m["execution_id"] == result.execution_arn for m in mine)
    # ...each at its first attempt, the rounds at least the item's 60 simulated seconds apart
    assert [m["attempt"] for m in mine] == [1, 1]
    assert mine[1]["post_at"] - mine[0]["post_at"] >= 60

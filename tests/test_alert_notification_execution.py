"""Alert notification machine end to end: the deployed template run in the local emulator.

Every test writes its own alert item (unique id and users) and reads only the Slack posts that
name its alert, so tests stay independent on the shared deployment. Waits and retry back-off pass
in simulated time; durations are asserted on the execution history, never on the wall clock.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from boto3.dynamodb.types import TypeSerializer

from emulator.follow import ExecutionResult, follow
from tests.emulator_helpers import unique, wait_for

STACK = "AlertNotificationStack"
MACHINE = "alert"
NOTIFY = "Notify User"
WAIT = "Wait Before Next Round"
# The text the notifier posts (lambdas/alert_notifier/slack_webhook.py), read back per post.
POST_TEXT = re.compile(
    r"^(?P<user>\S+): alert (?P<alert_id>\S+) is active \(notification round (?P<round>\d+)\)\. (?P<message>.*)$",
    re.DOTALL,
)


@dataclass(frozen=True)
class Notification:
    alert_id: str
    round: int
    user: str
    message: str
    status: int


def _users(*names: str) -> list[str]:
    """Users no other test names, so the Slack stand-in's per-user failures stay within one test."""
    suffix = uuid.uuid4().hex[:6]
    return [f"{name}.{suffix}@example.com" for name in names]


# --------------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------------
@pytest.fixture
def slack(deployment):
    """The shared Slack stand-in, with no scripted failures left over from another test, on a quiet webhook."""
    deployment.slack.reset()
    pass_the_slots_taken(deployment)
    yield deployment.slack
    deployment.slack.reset()


def pass_the_slots_taken(deployment) -> None:
    """Move the simulated clock past the slots earlier tests' posts took on the webhook's shared pace
    (docs/alert-notification.md), so that a test counting states starts on a quiet webhook: a post
    whose slot has not come waits for it in the machine, 2 more transitions."""
    from patterns_common.slack_pace import pace_key

    table = deployment.stack_resource(STACK, "AWS::DynamoDB::Table", "IdempotencyTable")
    key = {"id": {"S": pace_key(deployment.slack.url)["id"]}}
    item = deployment.client("dynamodb").get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
    if item is not None:
        deployment.aws.clock.advance(max(0.0, float(item["tat"]["N"]) - deployment.aws.clock.now()))


class AlertTable:
    """Writes alert items the way an operator would, and deletes them after the test."""

    def __init__(self, deployment) -> None:
        self.name = deployment.output(STACK, "AlertTableName")
        self.client = deployment.client("dynamodb")
        self.written: list[str] = []
        self._serialize = TypeSerializer().serialize

    def put(self, **item: Any) -> str:
        self.client.put_item(TableName=self.name, Item={k: self._serialize(v) for k, v in item.items()})
        self.written.append(item["alert_id"])
        return item["alert_id"]

    def put_alert(
        self, users: list[str] | dict[str, str], *, rounds: int = 1, interval: int = 300, status: str = "active"
    ) -> str:
        alert_id = unique("disk-full")
        return self.put(
            alert_id=alert_id,
            notification_count=rounds,
            user_accounts=users,
            status=status,
            interval_seconds=interval,
            message=f"Disk above 90% on {alert_id}",
        )

    def acknowledge(self, alert_id: str, *, by: str) -> None:
        """What the action endpoint records for an acknowledgement (the status and who)."""
        self.client.update_item(
            TableName=self.name,
            Key={"alert_id": {"S": alert_id}},
            UpdateExpression="SET #status = :status, acknowledged_by = :by",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":status": {"S": "acknowledged"}, ":by": {"S": by}},
        )

    def set_status(self, alert_id: str, status: str) -> None:
        self.client.update_item(
            TableName=self.name,
            Key={"alert_id": {"S": alert_id}},
            UpdateExpression="SET #status = :status",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":status": {"S": status}},
        )

    def delete_all(self) -> None:
        # An active item left behind would be dispatched by every later firing of the schedule.
        for alert_id in self.written:
            self.client.delete_item(TableName=self.name, Key={"alert_id": {"S": alert_id}})


@pytest.fixture
def alerts(deployment) -> Iterator[AlertTable]:
    table = AlertTable(deployment)
    yield table
    table.delete_all()


def notifications(slack, alert_id: str, *, delivered_only: bool = False) -> list[Notification]:
    """The Slack posts about one alert, in arrival order."""
    found = []
    for post in slack.delivered if delivered_only else slack.posts:
        match = POST_TEXT.match(post.body.get("text", "")) if isinstance(post.body, dict) else None
        if match and match["alert_id"] == alert_id:
            found.append(Notification(alert_id, int(match["round"]), match["user"], match["message"], post.status))
    return found


def assert_delivered_at_most_once(slack, alert_id: str) -> None:
    """The idempotency guarantee: a user sees each round's notification of an alert at most once.

    Each test runs one execution per alert, so (alert, round, user) names one (execution, round, user).
    """
    delivered = Counter((n.round, n.user) for n in notifications(slack, alert_id, delivered_only=True))
    assert [key for key, count in delivered.items() if count > 1] == []


def by_round(entries: list[tuple]) -> list[tuple]:
    """``(round, ...)`` entries in arrival order, sorted within each round after checking the rounds
    came in order: a round's first three posts go out together, in any order."""
    assert [entry[0] for entry in entries] == sorted(entry[0] for entry in entries), entries
    return sorted(entries)


def task_parameters(result: ExecutionResult, state: str) -> list[dict]:
    """The Payload each entry into a Lambda task state sent, in order."""
    payloads, current = [], None
    for event in result.events:
        if event["type"].endswith("StateEntered"):
            current = event["stateEnteredEventDetails"]["name"]
        elif event["type"] == "TaskScheduled" and current == state:
            payloads.append(json.loads(event["taskScheduledEventDetails"]["parameters"])["Payload"])
    return payloads


def state_spans(result: ExecutionResult, state: str) -> list[tuple[float, float]]:
    """(entered, exited) of each visit to ``state``, in simulated seconds since the start."""
    entered, spans = None, []
    for event in result.events:
        offset = (event["timestamp"] - result.start).total_seconds()
        if event["type"].endswith("StateEntered") and event["stateEnteredEventDetails"]["name"] == state:
            entered = offset
        elif event["type"].endswith("StateExited") and event["stateExitedEventDetails"]["name"] == state:
            spans.append((entered, offset))
    return spans


# --------------------------------------------------------------------------------------------------
# The loops
# --------------------------------------------------------------------------------------------------
def test_one_user_one_round_posts_once_and_stops_at_the_count(deployment, slack, alerts):
    # Given
    [user] = _users("foo")
    alert_id = alerts.put_alert([user], rounds=1)
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {
        "alert_id": alert_id,
        "rounds_completed": 1,
        "notifications_sent": 1,
        "notifications_failed": [],
        "stopped_reason": "count_reached",
    }
    sent = notifications(slack, alert_id)
    assert [(n.round, n.user, n.status) for n in sent] == [(1, user, 200)]
    assert sent[0].message == f"Disk above 90% on {alert_id}"
    assert_delivered_at_most_once(slack, alert_id)
    assert result.entered(WAIT) == 0
    assert result.retries == 0


def test_three_users_three_rounds_post_nine_messages_round_by_round_with_two_simulated_waits(deployment, slack, alerts):
    # Given
    users = _users("foo", "bar", "baz")
    alert_id = alerts.put_alert(users, rounds=3, interval=300)
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then: exactly 9 POSTs, round by round, user by user, each naming its user and the message
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {
        "alert_id": alert_id,
        "rounds_completed": 3,
        "notifications_sent": 9,
        "notifications_failed": [],
        "stopped_reason": "count_reached",
    }
    sent = notifications(slack, alert_id)
    assert by_round([(n.round, n.user) for n in sent]) == sorted((r, u) for r in (1, 2, 3) for u in users)
    assert {n.message for n in sent} == {f"Disk above 90% on {alert_id}"}
    assert {n.status for n in sent} == {200}
    assert_delivered_at_most_once(slack, alert_id)
    # Then: two 300 s waits, both between rounds; round 1 went out at once
    waits = state_spans(result, WAIT)
    assert len(waits) == 2
    # (each wait is the interval; simulated time also runs while the engine works, so a loaded
    # machine adds a little; history times are in milliseconds: 600.185 - 300.185 is 300 to the
    # millisecond, 299.99999999999994 in floating point)
    assert all(300 <= round(exited - entered, 3) < 330 for entered, exited in waits), waits
    notify_times = [entered for entered, _ in state_spans(result, NOTIFY)]
    assert len(notify_times) == 9
    assert result.entered(WAIT) == 2 and notify_times[0] < waits[0][0]
    assert max(notify_times[:3]) < waits[0][0] and waits[0][1] <= min(notify_times[3:6])
    assert max(notify_times[3:6]) < waits[1][0] and waits[1][1] <= min(notify_times[6:])
    assert 600 <= result.simulated_seconds < 630
    # Then: the status was read before each round (by Fetch Alert Config before the first), and no
    # state ran more than the loops need: the budget is 25 transitions for 3 users x 3 rounds
    assert result.entered("Read Alert Status") == 2
    lambda_tasks = [e for e in result.events if e["type"] == "TaskScheduled" and e["taskScheduledEventDetails"]["resourceType"] == "lambda"]
    assert len(lambda_tasks) == 1 + 9
    assert result.transitions <= 25


def test_map_form_user_accounts_are_notified_in_numeric_key_order(deployment, slack, alerts):
    # Given: the seed's map form; "10" sorts before "2" as text
    first, second, tenth = _users("first", "second", "tenth")
    alert_id = alerts.put_alert({"10": tenth, "2": second, "1": first}, rounds=2, interval=60)
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["notifications_sent"] == 6
    assert by_round([(n.round, n.user) for n in notifications(slack, alert_id)]) == sorted(
        (r, u) for r in (1, 2) for u in (first, second, tenth)
    )
    # Then: the round's Map takes them in numeric key order (what Fetch Alert Config returned)
    fetched = next(e for e in result.events if e["type"] == "TaskSucceeded")
    assert json.loads(fetched["taskSucceededEventDetails"]["output"])["Payload"]["levels"] == [[first, second, tenth]]
    assert_delivered_at_most_once(slack, alert_id)


# --------------------------------------------------------------------------------------------------
# Stopping early
# --------------------------------------------------------------------------------------------------
def test_acknowledging_between_rounds_stops_before_the_next_round(deployment, slack, alerts):
    # Given: two users, three rounds an hour apart
    users = _users("foo", "bar")
    alert_id = alerts.put_alert(users, rounds=3, interval=3600)
    sfn = deployment.client("stepfunctions")
    # When: an operator acknowledges once round 1 is on Slack. Simulated time stands still while
    # the test holds the clock, so the hour-long wait cannot end before the acknowledgement lands.
    with deployment.aws.clock.busy():
        execution_arn = sfn.start_execution(
            stateMachineArn=deployment.machine_arn(MACHINE), input=json.dumps({"alert_id": alert_id})
        )["executionArn"]
        wait_for(lambda: len(notifications(slack, alert_id, delivered_only=True)) == 2, "round 1 on Slack")
        alerts.acknowledge(alert_id, by=users[1])
    result = follow(deployment.aws, execution_arn)
    # Then: round 2 never went out; the machine stopped after the wait, when it re-read the status
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {
        "alert_id": alert_id,
        "rounds_completed": 1,
        "notifications_sent": 2,
        "notifications_failed": [],
        "stopped_reason": "acknowledged",
        "acknowledged_by": users[1],
    }
    assert by_round([(n.round, n.user) for n in notifications(slack, alert_id)]) == sorted((1, u) for u in users)
    assert_delivered_at_most_once(slack, alert_id)
    assert result.entered(WAIT) == 1
    assert result.entered("Read Alert Status") == 1
    assert 3600 <= result.simulated_seconds < 3630


def test_an_alert_resolved_before_the_first_round_notifies_nobody(deployment, slack, alerts):
    # Given
    alert_id = alerts.put_alert(_users("foo", "bar"), rounds=3, status="resolved")
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {
        "alert_id": alert_id,
        "rounds_completed": 0,
        "notifications_sent": 0,
        "notifications_failed": [],
        "stopped_reason": "resolved",
        "resolved_by": None,
    }
    assert notifications(slack, alert_id) == []
    assert result.entered(NOTIFY) == 0
    assert result.entered(WAIT) == 0


def test_an_item_without_a_status_is_active(deployment, slack, alerts):
    # Given: the status is optional; absent means active
    [user] = _users("foo")
    alert_id = alerts.put(alert_id=unique("no-status"), notification_count=1, user_accounts=[user])
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then: the default message went out
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["stopped_reason"] == "count_reached"
    assert [(n.user, n.message) for n in notifications(slack, alert_id)] == [(user, f"Alert {alert_id} is active")]


# --------------------------------------------------------------------------------------------------
# Rejected alerts
# --------------------------------------------------------------------------------------------------
def test_a_missing_alert_fails_with_alert_not_found(deployment, slack):
    # Given
    alert_id = unique("never-written")
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then
    assert result.status == "FAILED"
    assert result.error == "AlertNotFound"
    assert result.cause == f"alert_id: the alert table has no item {alert_id!r}"
    assert result.entered(NOTIFY) == 0


def _item(**overrides: Any) -> dict:
    item = {
        "notification_count": 2,
        "user_accounts": ["foo@example.com", "bar@example.com"],
        "status": "active",
        "interval_seconds": 300,
        "message": "Disk above 90% on web-1",
    }
    item.update(overrides)
    return {key: value for key, value in item.items() if value is not None}


# One execution per way an alert is refused; every field's own rule is a logic test in
# test_alert_notification_runtime.py (the same Catch and Fail state carry them all).
INVALID_ITEMS = {
    "count zero": (_item(notification_count=0), "notification_count"),
    "more rounds than the history limit allows": (
        _item(notification_count=1000, interval_seconds=0, user_accounts=[f"u{i}@example.com" for i in range(60)]),
        "notification_count",
    ),
    "an empty escalation level": (_item(user_accounts=None, escalation=[["foo@example.com"], []]), "escalation[1]"),
    "status unknown": (_item(status="snoozed"), "status"),
}


@pytest.mark.parametrize("item, field", INVALID_ITEMS.values(), ids=INVALID_ITEMS.keys())
def test_each_invalid_field_fails_with_invalid_alert_config_naming_it(deployment, slack, alerts, item, field):
    # Given
    alert_id = alerts.put(alert_id=unique("invalid"), **item)
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then: nobody was notified, and the cause starts with the field
    assert result.status == "FAILED"
    assert result.error == "InvalidAlertConfig"
    assert result.cause.startswith(f"{field}: "), result.cause
    assert result.entered(NOTIFY) == 0
    assert notifications(slack, alert_id) == []


def test_a_rejected_alert_ends_with_the_plain_message_not_the_lambda_error_document(deployment, slack, alerts):
    # Given: docs/alert-notification.md's example of an invalid alert
    alert_id = alerts.put(alert_id=unique("zero-rounds"), **_item(notification_count=0))
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then: the error name is the Lambda's, the cause is only its message (no errorType, no stackTrace)
    assert (result.status, result.error) == ("FAILED", "InvalidAlertConfig")
    assert result.cause == "notification_count: must be an integer of at least 1, got 0"
    assert result.entered("Alert Cannot Run") == 1


@pytest.mark.parametrize("payload", [{}, {"id": "disk-full-web-1"}])
def test_an_input_without_a_usable_alert_id_fails_with_invalid_alert_config(deployment, payload):
    # When
    result = deployment.run(MACHINE, payload)
    # Then
    assert result.status == "FAILED"
    assert result.error == "InvalidAlertConfig"
    assert result.cause.startswith("alert_id: "), result.cause


# --------------------------------------------------------------------------------------------------
# Slack failures
# --------------------------------------------------------------------------------------------------
def test_slack_500_then_success_retries_and_posts_exactly_once(deployment, slack, alerts):
    # Given: Slack answers the first POST (user 1, round 1) with 500, then recovers
    users = _users("foo", "bar")
    alert_id = alerts.put_alert(users, rounds=1)
    slack.fail_next(1, status=500)
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then: the state machine retried that notification once, after its back-off
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["notifications_sent"] == 2
    assert result.output["notifications_failed"] == []
    # (the two users' first posts go together: either may be the one Slack refused)
    statuses = {u: [n.status for n in notifications(slack, alert_id) if n.user == u] for u in users}
    assert sorted(statuses.values()) == [[200], [500, 200]]
    assert_delivered_at_most_once(slack, alert_id)
    assert result.retries == 1
    # Full jitter: the retry comes at a random moment within the first back-off interval (5 s).
    assert result.simulated_seconds < 30
    assert sorted(Counter(p["user"] for p in task_parameters(result, NOTIFY)).values()) == [1, 2]


def test_a_user_slack_always_fails_for_is_reported_and_the_others_are_still_notified(deployment, slack, alerts):
    # Given: every POST naming bar gets 500, in every round
    foo, bar, baz = _users("foo", "bar", "baz")
    alert_id = alerts.put_alert([foo, bar, baz], rounds=2, interval=60)
    slack.fail_for(bar, status=500)
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then: bar is listed once per round with the error; foo and baz got every round
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {
        "alert_id": alert_id,
        "rounds_completed": 2,
        "notifications_sent": 4,
        "notifications_failed": [
            {"round": 1, "user": bar, "error": "SlackTransientError"},
            {"round": 2, "user": bar, "error": "SlackTransientError"},
        ],
        "stopped_reason": "count_reached",
    }
    delivered = notifications(slack, alert_id, delivered_only=True)
    assert by_round([(n.round, n.user) for n in delivered]) == sorted([(1, foo), (1, baz), (2, foo), (2, baz)])
    assert_delivered_at_most_once(slack, alert_id)
    # Then: each of bar's notifications was tried 1 + 4 times (the ASL's retry budget), no more
    attempts = Counter(n.round for n in notifications(slack, alert_id) if n.user == bar)
    assert attempts == {1: 5, 2: 5}
    assert result.retries == 8


def test_every_notification_failing_fails_with_notification_delivery_failed(deployment, slack, alerts):
    # Given: the webhook was revoked (404 for everyone): a permanent failure, not retried
    users = _users("foo", "bar")
    alert_id = alerts.put_alert(users, rounds=2, interval=60)
    for user in users:
        slack.fail_for(user, status=404)
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then: the loops still ran to the end, then the execution failed with a searchable error
    assert result.status == "FAILED"
    assert result.error == "NotificationDeliveryFailed"
    assert result.cause == (
        f"All 4 notifications of alert {alert_id} failed; each failure is in the execution history at"
        " Notify User."
    )
    sent = notifications(slack, alert_id)
    assert by_round([(n.round, n.user, n.status) for n in sent]) == sorted((r, u, 404) for r in (1, 2) for u in users)
    assert result.retries == 0
    assert result.entered(WAIT) == 1


# --------------------------------------------------------------------------------------------------
# Idempotency of the notifier
# --------------------------------------------------------------------------------------------------
def _stack_resource(deployment, resource_type: str, logical_id_part: str) -> str:
    return deployment.stack_resource(STACK, resource_type, logical_id_part)


def test_a_repeated_notification_for_the_same_execution_round_and_user_posts_once(deployment, slack):
    # Given: the deployed notifier, and one notification as the machine sends it
    function = _stack_resource(deployment, "AWS::Lambda::Function", "NotifyUser")
    [user] = _users("foo")
    alert_id = unique("repeat")
    event = {
        "execution_id": f"arn:aws:states:us-east-1:123456789012:execution:alerts:{uuid.uuid4()}",
        "alert_id": alert_id,
        "message": "Disk above 90% on web-1",
        "round": 1,
        "user": user,
        "links": {"acknowledge": "https://alerts.example/?t=a", "resolve": "https://alerts.example/?t=r"},
    }
    lam = deployment.client("lambda")
    # When: the same notification is invoked again (a retry after a lost response), then round 2
    answers = [
        json.loads(lam.invoke(FunctionName=function, Payload=json.dumps(event))["Payload"].read()) for _ in range(2)
    ]
    lam.invoke(FunctionName=function, Payload=json.dumps({**event, "round": 2}))
    # Then: the retry returned the first result without posting; the next round posted
    assert answers[0] == answers[1] == {"user": user, "round": 1, "status": 200}
    assert [(n.round, n.user) for n in notifications(slack, alert_id)] == [(1, user), (2, user)]
    assert_delivered_at_most_once(slack, alert_id)


# --------------------------------------------------------------------------------------------------
# The schedule
# --------------------------------------------------------------------------------------------------
def _executions_by_alert(deployment, alert_ids: set[str]) -> dict[str, list[dict]]:
    sfn = deployment.client("stepfunctions")
    found: dict[str, list[dict]] = {alert_id: [] for alert_id in alert_ids}
    for page in sfn.get_paginator("list_executions").paginate(stateMachineArn=deployment.machine_arn(MACHINE)):
        for execution in page["executions"]:
            described = sfn.describe_execution(executionArn=execution["executionArn"])
            document = json.loads(described["input"])  # any JSON value: other tests start bad input too
            alert_id = document.get("alert_id") if isinstance(document, dict) else None
            if alert_id in found:
                found[alert_id].append(described)
    return found


def _is_waiting(deployment, execution_arn: str) -> bool:
    """Whether the execution has entered its wait between rounds (and is not past it)."""
    history = deployment.client("stepfunctions").get_execution_history
    latest = history(executionArn=execution_arn, reverseOrder=True, maxResults=1)["events"]
    return bool(latest) and latest[0]["type"] == "WaitStateEntered"  # none yet right after the start


@dataclass(frozen=True)
class Schedule:
    rule: str
    dispatcher: str
    failure_queue_url: str


@pytest.fixture
def schedule(deployment) -> Schedule:
    rule = _stack_resource(deployment, "AWS::Events::Rule", "Schedule")
    [target] = deployment.client("events").list_targets_by_rule(Rule=rule)["Targets"]
    queue = _stack_resource(deployment, "AWS::SQS::Queue", "DispatchFailureQueue")
    return Schedule(rule, target["Arn"].rsplit(":", 1)[-1], queue)


def _fire(deployment, schedule: Schedule) -> str:
    """Fire the schedule as EventBridge does; returns the event's id, which a failure record repeats."""
    assert deployment.aws.router.fire_schedule(schedule.rule) == 1
    return next(d["event"]["id"] for d in reversed(deployment.aws.router.delivered) if d["rule"] == schedule.rule)


def _fire_and_await_dispatch(deployment, schedule: Schedule) -> str:
    """Fire the schedule and wait for a dispatch that succeeds at its first attempt; returns the event's id."""
    dispatcher = schedule.dispatcher
    done_before = sum(1 for r in deployment.aws.runtime.invocations if r["function"] == dispatcher and "end" in r)
    event_id = _fire(deployment, schedule)
    wait_for(
        lambda: sum(1 for r in deployment.aws.runtime.invocations if r["function"] == dispatcher and "end" in r)
        == done_before + 1,
        "the dispatcher to finish",
    )
    [last] = [r for r in deployment.aws.runtime.invocations if r["function"] == dispatcher][-1:]
    assert last["error"] is None
    return event_id


def test_the_schedule_starts_one_execution_per_active_alert_and_never_a_second(deployment, slack, alerts, schedule):
    # Given: two active alerts whose rounds are two hours apart, and a resolved one
    first = alerts.put_alert(_users("foo", "bar"), rounds=3, interval=7200)
    second = alerts.put_alert(_users("baz"), rounds=3, interval=7200)
    resolved = alerts.put_alert(_users("qux"), rounds=3, interval=7200, status="resolved")
    ours = {first, second, resolved}
    # When: the schedule fires, and fires again an hour later. The test holds the simulated clock
    # between the two, so both executions are still in their two-hour wait at the second firing.
    with deployment.aws.clock.busy():
        _fire_and_await_dispatch(deployment, schedule)
        after_first = _executions_by_alert(deployment, ours)
        for execution in after_first[first] + after_first[second]:
            wait_for(lambda: _is_waiting(deployment, execution["executionArn"]), "round 1 to end")
        deployment.aws.clock.advance(3600)
        _fire_and_await_dispatch(deployment, schedule)
        after_second = _executions_by_alert(deployment, ours)
        # Resolve both so their executions end at the next status read.
        alerts.set_status(first, "resolved")
        alerts.set_status(second, "resolved")
    # Then: one execution per active alert, the same one after the second firing; none for the resolved one
    assert {a: len(e) for a, e in after_first.items()} == {first: 1, second: 1, resolved: 0}
    assert {a: [e["executionArn"] for e in v] for a, v in after_second.items()} == {
        a: [e["executionArn"] for e in v] for a, v in after_first.items()
    }
    assert all(e["status"] == "RUNNING" for e in after_second[first] + after_second[second])
    # Then: each ran round 1 only, once, and stopped as resolved
    for alert_id, users_notified in ((first, 2), (second, 1)):
        [execution] = after_second[alert_id]
        result = follow(deployment.aws, execution["executionArn"])
        assert result.status == "SUCCEEDED", result.cause
        assert result.output["rounds_completed"] == 1
        assert result.output["notifications_sent"] == users_notified
        assert result.output["stopped_reason"] == "resolved"
        assert_delivered_at_most_once(slack, alert_id)
    assert notifications(slack, resolved) == []


def _dispatch(deployment, dispatcher: str, slot: str) -> dict:
    """Invoke the dispatcher as the hourly schedule does for ``slot``, and wait for its answer."""
    event = {"detail-type": "Scheduled Event", "source": "aws.events", "time": slot, "detail": {}}
    response = deployment.client("lambda").invoke(FunctionName=dispatcher, Payload=json.dumps(event))
    answer = json.loads(response["Payload"].read())
    assert "FunctionError" not in response, answer
    return answer


def _stop_running_alert_executions(deployment) -> None:
    sfn = deployment.client("stepfunctions")
    pages = sfn.get_paginator("list_executions").paginate(
        stateMachineArn=deployment.machine_arn(MACHINE), statusFilter="RUNNING"
    )
    for execution in [e for page in pages for e in page["executions"]]:
        sfn.stop_execution(executionArn=execution["executionArn"])


def _active_alerts(deployment) -> list[str]:
    """The table's active alerts (an item without a status is active)."""
    scan = deployment.client("dynamodb").get_paginator("scan").paginate(
        TableName=deployment.output(STACK, "AlertTableName"),
        ProjectionExpression="alert_id, #status",
        ExpressionAttributeNames={"#status": "status"},
    )
    items = [item for page in scan for item in page["Items"]]
    return [
        item["alert_id"]["S"]
        for item in items
        if item.get("status", {"S": "active"})["S"] == "active"
    ]


def test_a_dispatch_calls_the_api_once_per_alert_to_start_and_not_per_running_execution(deployment, slack, alerts):
    # Given: 12 active alerts. 4 are still running from the previous hour's dispatch (in their
    # two-hour wait: the test holds the simulated clock), 1 from an execution started by hand
    dispatcher = _stack_resource(deployment, "AWS::Lambda::Function", "DispatchAlerts")
    sfn = deployment.client("stepfunctions")
    with deployment.aws.clock.busy():
        # (alerts and executions other tests left active would be more to start and describe: set aside)
        _stop_running_alert_executions(deployment)
        left_active = _active_alerts(deployment)
        for alert_id in left_active:
            alerts.set_status(alert_id, "resolved")
        earlier: list[str] = []
        later: list[str] = []
        try:
            earlier = [alerts.put_alert(_users("foo"), rounds=2, interval=7200) for _ in range(4)]
            assert _dispatch(deployment, dispatcher, "2026-11-22T05:00:00Z")["started"] == sorted(earlier)
            later = [alerts.put_alert(_users("bar"), rounds=2, interval=7200) for _ in range(8)]
            by_hand, *to_start = later
            sfn.start_execution(
                stateMachineArn=deployment.machine_arn(MACHINE), name=unique("by-hand"), input=json.dumps({"alert_id": by_hand})
            )
            # When: the next hour's dispatch runs, its API calls counted as the emulator receives them
            with deployment.aws.api_calls.counting() as calls:
                result = _dispatch(deployment, dispatcher, "2026-11-22T06:00:00Z")
        finally:
            for alert_id in earlier + later:  # their executions end at the next status read
                alerts.set_status(alert_id, "resolved")
            for alert_id in left_active:
                alerts.set_status(alert_id, "active")
    # Then: it started the 7 alerts not running, none twice
    assert result == {
        "started": sorted(to_start),
        "already_running": sorted(earlier + [by_hand]),
        "already_started": [],
        "alarm_ok": [],
    }
    # Then: one Scan page (DynamoDB reads up to 1 MB per page:
    # https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Scan.html), one ListExecutions
    # page (up to 1,000 executions: https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html),
    # a DescribeExecution for the execution started by hand only, and a StartExecution per alert started
    dispatcher_calls = {op: calls[op] for op in ("Scan", "ListExecutions", "DescribeExecution", "StartExecution")}
    assert dispatcher_calls == {"Scan": 1, "ListExecutions": 1, "DescribeExecution": 1, "StartExecution": 7}


def test_the_dispatch_does_not_page_an_alert_whose_alarm_is_ok(deployment, slack, alerts):
    # Given: an alarm that is OK, and an alert naming it written without a status (which reads as
    # active: docs/alert-lifecycle.md), beside the same alert without the alarm
    dispatcher = _stack_resource(deployment, "AWS::Lambda::Function", "DispatchAlerts")
    cloudwatch = deployment.client("cloudwatch")
    alarm = unique("orders-db-cpu-high")
    # The clock held from the start: idle, it would jump to the alarm's next evaluation, which finds no
    # data and puts it in INSUFFICIENT_DATA before the dispatch reads it
    with deployment.aws.clock.busy():
        cloudwatch.put_metric_alarm(
            AlarmName=alarm, Namespace="AWS/RDS", MetricName="CPUUtilization", Statistic="Average", Period=60,
            EvaluationPeriods=3, Threshold=90, ComparisonOperator="GreaterThanThreshold",
        )
        cloudwatch.set_alarm_state(AlarmName=alarm, StateValue="OK", StateReason="the database is fine")
        _stop_running_alert_executions(deployment)
        linked = alerts.put(alert_id=unique("linked"), alarm_name=alarm, user_accounts=["foo@example.com"],
                            notification_count=1)
        unlinked = alerts.put(alert_id=unique("unlinked"), user_accounts=["foo@example.com"], notification_count=1)
        # When
        result = _dispatch(deployment, dispatcher, "2026-11-22T07:00:00Z")
        for alert_id in (linked, unlinked):
            alerts.set_status(alert_id, "resolved")
    # Then: the alert whose alarm is OK got no execution; the other did
    assert linked in result["alarm_ok"] and linked not in result["started"]
    assert unlinked in result["started"]
    cloudwatch.delete_alarms(AlarmNames=[alarm])


# --------------------------------------------------------------------------------------------------
# When a dispatch fails (docs/alert-notification.md, "When a dispatch fails, someone is told")
# --------------------------------------------------------------------------------------------------
# The dispatcher's StartExecution client: botocore standard mode with total_max_attempts 6, which
# botocore's Config documents as every call, the first one included.
START_ATTEMPTS = 6
# Lambda's asynchronous invocation: the first attempt and the two retries the stack configures.
DISPATCH_ATTEMPTS = 3


def _failure_records(deployment, schedule: Schedule, event_id: str, *, expected: int, timeout: float = 60) -> list[dict]:
    """The dispatch failure queue's records of one schedule event, read as a person would."""
    sqs, found = deployment.client("sqs"), []
    deadline = time.monotonic() + timeout
    while len(found) < expected and time.monotonic() < deadline:
        # Visibility 0: records of other events stay where they are.
        answer = sqs.receive_message(QueueUrl=schedule.failure_queue_url, MaxNumberOfMessages=10, VisibilityTimeout=0)
        for message in answer.get("Messages", []):
            record = json.loads(message["Body"])
            if record["requestPayload"]["id"] == event_id:
                found.append(record)
                sqs.delete_message(QueueUrl=schedule.failure_queue_url, ReceiptHandle=message["ReceiptHandle"])
        time.sleep(0.05)
    return found


def _attempts(deployment, request_id: str) -> list[dict]:
    return [r for r in deployment.aws.runtime.invocations if r["request_id"] == request_id]


def _resolve_and_finish(deployment, alerts: AlertTable, executions: list[dict]) -> None:
    """Let the dispatched executions end (each stops at its next status read) so none outlives the test."""
    for alert_id in alerts.written:
        alerts.set_status(alert_id, "resolved")
    for execution in executions:
        assert follow(deployment.aws, execution["executionArn"]).status == "SUCCEEDED"


def test_a_crashing_dispatcher_is_retried_twice_then_recorded_on_the_failure_queue(
    deployment, slack, alerts, schedule
):
    # Given: an active alert, and the alert table's Scan failing on every call
    alert_id = alerts.put_alert(_users("foo"))
    table = deployment.output(STACK, "AlertTableName")
    # When: the schedule fires
    with deployment.aws.faults.dynamodb_throttled("Scan", table=table, times=None):
        event_id = _fire(deployment, schedule)
        records = _failure_records(deployment, schedule, event_id, expected=1)
    # Then: three attempts of the one event, each failing, then one record carrying the error
    [record] = records
    attempts = _attempts(deployment, record["requestContext"]["requestId"])
    assert [a["function"] for a in attempts] == [schedule.dispatcher] * DISPATCH_ATTEMPTS
    assert [a["error"] for a in attempts] == ["ProvisionedThroughputExceededException"] * DISPATCH_ATTEMPTS
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == DISPATCH_ATTEMPTS
    assert record["responsePayload"]["errorType"] == "ProvisionedThroughputExceededException"
    assert "when calling the Scan operation" in record["responsePayload"]["errorMessage"]
    assert _failure_records(deployment, schedule, event_id, expected=1, timeout=0.5) == []
    assert _executions_by_alert(deployment, {alert_id}) == {alert_id: []}
    # Then: the queue that holds the record is the one whose alarm notifies the status topic
    [alarm] = deployment.client("cloudwatch").describe_alarms(AlarmNames=["MonitoringStack-AlertDispatchFailed"])[
        "MetricAlarms"
    ]
    assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": schedule.failure_queue_url.rsplit("/", 1)[-1]}]
    assert alarm["AlarmActions"] == [deployment.output("MonitoringStack", "StatusTopicArn")]


def test_an_alert_whose_start_stays_throttled_is_named_on_the_failure_queue_and_the_others_start_once(
    deployment, slack, alerts, schedule
):
    # Given: three active alerts (two rounds an hour apart, so each execution still runs during the
    # dispatcher's retries), and StartExecution throttled on every call for the second one
    first, throttled, third = (alerts.put_alert(_users(name), rounds=2, interval=3600) for name in ("a", "b", "c"))
    # When: the schedule fires
    with deployment.aws.faults.stepfunctions_throttled("StartExecution", times=None, matching=throttled) as fault:
        event_id = _fire(deployment, schedule)
        records = _failure_records(deployment, schedule, event_id, expected=1)
    executions = _executions_by_alert(deployment, {first, throttled, third})
    try:
        # Then: one record, naming the throttled alert and no other
        [record] = records
        assert record["requestContext"]["approximateInvokeCount"] == DISPATCH_ATTEMPTS
        assert record["responsePayload"]["errorType"] == "DispatchFailed"
        assert re.fullmatch(
            rf"1 of \d+ alerts were not started: {throttled} \(ThrottlingException\)",
            record["responsePayload"]["errorMessage"],
        )
        # Then: every attempt retried the throttled start; the other alerts started once, by the first
        assert fault.hits == DISPATCH_ATTEMPTS * START_ATTEMPTS
        assert [a["error"] for a in _attempts(deployment, record["requestContext"]["requestId"])] == [
            "DispatchFailed"
        ] * DISPATCH_ATTEMPTS
        assert {a: len(e) for a, e in executions.items()} == {first: 1, throttled: 0, third: 1}
    finally:
        _resolve_and_finish(deployment, alerts, executions[first] + executions[third])


def test_a_start_throttled_fewer_times_than_the_retries_allow_starts_every_alert(deployment, slack, alerts, schedule):
    # Given: two active alerts, and StartExecution throttled three times for the second one
    first, throttled = (alerts.put_alert(_users(name), rounds=2, interval=3600) for name in ("a", "b"))
    # When: the schedule fires
    with deployment.aws.faults.stepfunctions_throttled("StartExecution", times=3, matching=throttled) as fault:
        event_id = _fire_and_await_dispatch(deployment, schedule)
    executions = _executions_by_alert(deployment, {first, throttled})
    try:
        # Then: the dispatch succeeded at its first attempt, both alerts started, nothing is on the failure queue
        assert fault.hits == 3
        assert {a: len(e) for a, e in executions.items()} == {first: 1, throttled: 1}
        assert _failure_records(deployment, schedule, event_id, expected=1, timeout=1) == []
    finally:
        _resolve_and_finish(deployment, alerts, executions[first] + executions[throttled])


# --------------------------------------------------------------------------------------------------
# Escalation levels and the message (issue 23, parts 2-4)
# --------------------------------------------------------------------------------------------------
def test_escalation_levels_notify_level_k_in_round_k_and_repeat_the_last(deployment, slack, alerts):
    # Given: the on-call first, then the on-call and the lead for every later round
    oncall, lead = _users("oncall", "lead")
    alert_id = alerts.put(
        alert_id=unique("escalating"),
        notification_count=3,
        escalation=[[oncall], [oncall, lead]],
        interval_seconds=60,
        message="Error rate above 5%",
    )
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["notifications_sent"] == 5
    assert by_round([(n.round, n.user) for n in notifications(slack, alert_id)]) == sorted(
        [(1, oncall), (2, oncall), (2, lead), (3, oncall), (3, lead)]
    )


def _link_key(deployment) -> bytes:
    arn = _stack_resource(deployment, "AWS::SecretsManager::Secret", "SigningKey")
    return deployment.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"].encode()


def test_a_member_id_is_mentioned_and_the_buttons_carry_that_users_signed_links(deployment, slack, alerts):
    # Given: a Slack member ID and an e-mail address
    from patterns_common.alert_action_links import verify

    member, [email] = f"U{uuid.uuid4().hex[:10].upper()}", _users("foo")
    alert_id = alerts.put_alert([member, email])
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then: the member is mentioned (Slack notifies them), the e-mail named
    assert result.status == "SUCCEEDED", result.cause
    posts = {p.body["text"].split(":", 1)[0]: p.body for p in slack.posts if alert_id in p.body.get("text", "")}
    assert sorted(posts) == sorted([f"<@{member}>", email])
    # Then: every post has the two buttons, each opening a link the stack's key signed for that user,
    # that action and this alert, valid at least a day; links are not unfurled
    key, now = _link_key(deployment), deployment.aws.clock.now()
    for post, user in ((posts[f"<@{member}>"], member), (posts[email], email)):
        assert post["unfurl_links"] is False
        buttons = post["blocks"][1]["elements"]
        assert [b["text"]["text"] for b in buttons] == ["Acknowledge", "Resolve"]
        for button, action in zip(buttons, ("acknowledge", "resolve")):
            claim = verify(key, button["url"].split("?t=", 1)[1], now=now)
            assert (claim.alert_id, claim.user, claim.action) == (alert_id, user, action)
            assert claim.expires_at >= now + 23 * 3600


# --------------------------------------------------------------------------------------------------
# One escalation per alert (issue 23 part 1; issue 26 item 9)
# --------------------------------------------------------------------------------------------------
def _start(deployment, alert_id: str, name: str | None = None) -> str:
    return deployment.client("stepfunctions").start_execution(
        stateMachineArn=deployment.machine_arn(MACHINE),
        name=name or unique("by-hand"),
        input=json.dumps({"alert_id": alert_id}),
    )["executionArn"]


def _claim(alerts: AlertTable, alert_id: str) -> str | None:
    item = alerts.client.get_item(TableName=alerts.name, Key={"alert_id": {"S": alert_id}}, ConsistentRead=True)["Item"]
    return item.get("escalation_execution_arn", {}).get("S")


def test_a_second_execution_for_an_escalating_alert_ends_at_once_naming_the_first(deployment, slack, alerts):
    # Given: an alert escalating (round 1 sent, an hour until round 2; the test holds the clock)
    users = _users("foo", "bar")
    alert_id = alerts.put_alert(users, rounds=2, interval=3600)
    with deployment.aws.clock.busy():
        first = _start(deployment, alert_id)
        wait_for(lambda: len(notifications(slack, alert_id, delivered_only=True)) == 2, "round 1 on Slack")
        # When: the alert is started again seconds later, as a person or a redelivered event would
        second = follow(deployment.aws, _start(deployment, alert_id))
        alerts.set_status(alert_id, "resolved")
    # Then: the second notified nobody and named the running one; the first went on and ended
    assert second.status == "SUCCEEDED", second.cause
    assert second.output == {
        "alert_id": alert_id,
        "rounds_completed": 0,
        "notifications_sent": 0,
        "notifications_failed": [],
        "stopped_reason": "already_running",
        "running_execution_arn": first,
    }
    assert sum(e["type"] == "TaskScheduled" for e in second.events) == 1  # Fetch Alert Config only
    first_result = follow(deployment.aws, first)
    assert first_result.output["stopped_reason"] == "resolved"
    assert len(notifications(slack, alert_id)) == 2
    # Then: the first's end released the alert, so the next escalation may start at once
    assert _claim(alerts, alert_id) is None


def test_executions_started_together_for_one_alert_notify_once(deployment, slack, alerts):
    # Given: five starts of one alert in the same moment (an alarm storm's redelivered events), the
    # alert's rounds an hour apart (the test holds the clock, so the escalation is still running)
    [user] = _users("foo")
    alert_id = alerts.put_alert([user], rounds=2, interval=3600)
    sfn = deployment.client("stepfunctions")
    with deployment.aws.clock.busy():
        arns = [_start(deployment, alert_id) for _ in range(5)]
        ended = lambda: [a for a in arns if sfn.describe_execution(executionArn=a)["status"] != "RUNNING"]  # noqa: E731
        wait_for(lambda: len(ended()) == 4, "four of them to end")
        [winner] = set(arns) - set(ended())
        wait_for(lambda: _is_waiting(deployment, winner), "the escalation's round 1 to end")
        alerts.set_status(alert_id, "resolved")
    results = {arn: follow(deployment.aws, arn) for arn in arns}
    # Then: exactly one escalated; each other one ended at once naming it
    assert results[winner].output["stopped_reason"] == "resolved"
    others = [r.output for arn, r in results.items() if arn != winner]
    assert [(o["stopped_reason"], o["running_execution_arn"], o["notifications_sent"]) for o in others] == [
        ("already_running", winner, 0)
    ] * 4
    assert [(n.round, n.user) for n in notifications(slack, alert_id)] == [(1, user)]


def test_a_stopped_escalation_does_not_block_the_next_one(deployment, slack, alerts):
    # Given: an escalation stopped by an operator in its wait: its end never released the alert
    [user] = _users("foo")
    alert_id = alerts.put_alert([user], rounds=2, interval=3600)
    sfn = deployment.client("stepfunctions")
    with deployment.aws.clock.busy():
        stopped = _start(deployment, alert_id)
        wait_for(lambda: _is_waiting(deployment, stopped), "round 1 to end")
        sfn.stop_execution(executionArn=stopped)
    assert _claim(alerts, alert_id) == stopped
    # When: the alert is started again
    with deployment.aws.clock.busy():
        again = _start(deployment, alert_id)
        wait_for(lambda: _is_waiting(deployment, again), "round 1 to end")
        alerts.set_status(alert_id, "resolved")
    result = follow(deployment.aws, again)
    # Then: it took the claim over and notified
    assert result.output["stopped_reason"] == "resolved"
    assert result.output["notifications_sent"] == 1
    assert [(n.round, n.user) for n in notifications(slack, alert_id)] == [(1, user), (1, user)]


# --------------------------------------------------------------------------------------------------
# Slack's pace (issue 23 part 2)
# --------------------------------------------------------------------------------------------------
def test_a_round_of_forty_users_keeps_slacks_rate_limit(deployment, slack, alerts):
    # Given: the stand-in keeps Slack's webhook limit, about one message per second with short
    # bursts (https://api.slack.com/docs/rate-limits), in simulated time
    users = _users(*(f"user{n:02d}" for n in range(40)))
    alert_id = alerts.put_alert(users, rounds=1)
    slack.limit_rate(per_second=1, burst=4)
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then: every user notified once, and Slack never had to refuse a post
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["notifications_sent"] == 40
    posts = notifications(slack, alert_id)
    assert [n.status for n in posts].count(429) == 0
    assert sorted(n.user for n in posts) == sorted(users)
    # Then: the round took about 40 s of simulated time (three at once, then one a second), not one second
    assert 37 <= result.simulated_seconds < 80


# --------------------------------------------------------------------------------------------------
# The history-limit guard against a real worst case (issue 26, "Tests that cannot see these")
# --------------------------------------------------------------------------------------------------
def test_the_history_model_matches_an_execution_whose_every_notification_failed_after_every_retry(
    deployment, slack, alerts
):
    # Given: two escalation levels, every post failing with 500 (retried until the machine gives up),
    # and a start delay (the wait and status read the dispatcher's starts add)
    from tests.lambda_loader import load_lambda_module

    config_logic = load_lambda_module("alert_config", "alert_config_logic")
    first, second, third = _users("first", "second", "third")
    # When: it runs. An attempt that outlives its timeout on a loaded machine, after its post, is
    # retried and posts again (docs/alert-notification.md): that run is another case than this one's
    # (Slack's 500s alone), and a new alert runs again, three times at most
    for _ in range(3):
        slack.reset()
        for user in (first, second, third):
            slack.fail_for(user, status=500)
        alert_id = alerts.put(
            alert_id=unique("worst-case"),
            notification_count=2,
            escalation=[[first], [second, third]],
            interval_seconds=0,
        )
        result = deployment.run(MACHINE, {"alert_id": alert_id, "start_delay_seconds": 10})
        if not [e for e in result.events if e["type"] == "TaskFailed"
                and e["taskFailedEventDetails"]["error"] in ("Sandbox.Timedout", "States.Timeout")]:
            break
    # Then: every notification was tried 1 + 4 times and failed
    assert (result.status, result.error) == ("FAILED", "NotificationDeliveryFailed")
    attempts = Counter((n.round, n.user) for n in notifications(slack, alert_id))
    assert attempts == {(1, first): 5, (2, second): 5, (2, third): 5}
    # Then: the model counts exactly the events this execution wrote, and its worst case bounds them
    modelled = config_logic.history_events(
        [1, 2],
        fetch_attempts=1,
        read_attempts=1,
        notify_attempts=5,
        release_attempts=0,
        delayed=True,
        notifications_failed=True,
        released=False,
    )
    assert len(result.events) == modelled
    assert len(result.events) < config_logic.worst_case_history_events([1, 2])

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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from boto3.dynamodb.types import TypeSerializer

from emulator.follow import ExecutionResult, follow
from tests.emulator_helpers import unique

STACK = "AlertNotificationStack"
MACHINE = "alert"
NOTIFY = "Notify Next User"
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


def _wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


# --------------------------------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------------------------------
@pytest.fixture
def slack(deployment):
    """The shared Slack stand-in, with no scripted failures left over from another test."""
    deployment.slack.reset()
    yield deployment.slack
    deployment.slack.reset()


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


def test_three_users_three_rounds_post_nine_messages_in_order_with_two_simulated_waits(deployment, slack, alerts):
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
    assert [(n.round, n.user) for n in sent] == [(r, u) for r in (1, 2, 3) for u in users]
    assert {n.message for n in sent} == {f"Disk above 90% on {alert_id}"}
    assert {n.status for n in sent} == {200}
    assert_delivered_at_most_once(slack, alert_id)
    # Then: two 300 s waits, both between rounds; round 1 went out at once
    waits = state_spans(result, WAIT)
    assert len(waits) == 2
    assert all(300 <= exited - entered < 305 for entered, exited in waits)
    notify_times = [entered for entered, _ in state_spans(result, NOTIFY)]
    assert len(notify_times) == 9
    assert notify_times[0] < 5
    assert max(notify_times[:3]) < waits[0][0] and waits[0][1] <= min(notify_times[3:6])
    assert max(notify_times[3:6]) < waits[1][0] and waits[1][1] <= min(notify_times[6:])
    assert 600 <= result.simulated_seconds < 630
    # Then: the status was re-read before each round, and no state ran more than the loops need
    assert result.entered("Read Alert Status") == 3
    assert result.lambda_invocations == 1 + 9


def test_map_form_user_accounts_are_notified_in_numeric_key_order(deployment, slack, alerts):
    # Given: the seed's map form; "10" sorts before "2" as text
    first, second, tenth = _users("first", "second", "tenth")
    alert_id = alerts.put_alert({"10": tenth, "2": second, "1": first}, rounds=2, interval=60)
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then
    assert result.status == "SUCCEEDED", result.cause
    assert result.output["notifications_sent"] == 6
    assert [(n.round, n.user) for n in notifications(slack, alert_id)] == [
        (r, u) for r in (1, 2) for u in (first, second, tenth)
    ]
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
        _wait_for(lambda: len(notifications(slack, alert_id, delivered_only=True)) == 2, "round 1 on Slack")
        alerts.set_status(alert_id, "acknowledged")
    result = follow(deployment.aws, execution_arn)
    # Then: round 2 never went out; the machine stopped after the wait, when it re-read the status
    assert result.status == "SUCCEEDED", result.cause
    assert result.output == {
        "alert_id": alert_id,
        "rounds_completed": 1,
        "notifications_sent": 2,
        "notifications_failed": [],
        "stopped_reason": "acknowledged",
    }
    assert [(n.round, n.user) for n in notifications(slack, alert_id)] == [(1, u) for u in users]
    assert_delivered_at_most_once(slack, alert_id)
    assert result.entered(WAIT) == 1
    assert result.entered("Read Alert Status") == 2
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


INVALID_ITEMS = {
    "count missing": (_item(notification_count=None), "notification_count"),
    "count zero": (_item(notification_count=0), "notification_count"),
    "count fractional": (_item(notification_count=Decimal("1.5")), "notification_count"),
    "count a string": (_item(notification_count="3"), "notification_count"),
    "count a boolean": (_item(notification_count=True), "notification_count"),
    "more rounds than the history limit allows": (
        _item(notification_count=1000, interval_seconds=0, user_accounts=[f"u{i}@example.com" for i in range(60)]),
        "notification_count",
    ),
    "users missing": (_item(user_accounts=None), "user_accounts"),
    "users empty": (_item(user_accounts=[]), "user_accounts"),
    "users a string set": (_item(user_accounts={"foo@example.com", "bar@example.com"}), "user_accounts"),
    "users a string": (_item(user_accounts="foo@example.com"), "user_accounts"),
    "user listed twice": (_item(user_accounts=["foo@example.com", "foo@example.com"]), "user_accounts[1]"),
    "user not a string": (_item(user_accounts=["foo@example.com", 7]), "user_accounts[1]"),
    "map user empty": (_item(user_accounts={"1": "foo@example.com", "2": ""}), "user_accounts['2']"),
    "too many users for one round": (
        _item(notification_count=1, user_accounts=[f"u{i}@example.com" for i in range(1000)]),
        "user_accounts",
    ),
    "interval negative": (_item(interval_seconds=-1), "interval_seconds"),
    "interval over a day": (_item(interval_seconds=86_401), "interval_seconds"),
    "waits over a day in total": (_item(notification_count=3, interval_seconds=50_000), "interval_seconds"),
    "message empty": (_item(message=""), "message"),
    "message too long": (_item(message="x" * 4001), "message"),
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


@pytest.mark.parametrize("payload", [{}, {"alert_id": ""}, {"alert_id": 7}, {"id": "disk-full-web-1"}])
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
    assert [(n.user, n.status) for n in notifications(slack, alert_id)] == [
        (users[0], 500),
        (users[0], 200),
        (users[1], 200),
    ]
    assert_delivered_at_most_once(slack, alert_id)
    assert result.retries == 1
    assert 5 <= result.simulated_seconds < 30
    assert [p["user"] for p in task_parameters(result, NOTIFY)] == [users[0], users[0], users[1]]


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
    assert [(n.round, n.user) for n in delivered] == [(1, foo), (1, baz), (2, foo), (2, baz)]
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
        " Notify Next User."
    )
    sent = notifications(slack, alert_id)
    assert [(n.round, n.user, n.status) for n in sent] == [(r, u, 404) for r in (1, 2) for u in users]
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
    return latest[0]["type"] == "WaitStateEntered"


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
    _wait_for(
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
            _wait_for(lambda: _is_waiting(deployment, execution["executionArn"]), "round 1 to end")
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


def _other_active_alerts(deployment, ours: set[str]) -> list[str]:
    """Active alerts other tests left in the table (an item without a status is active)."""
    scan = deployment.client("dynamodb").get_paginator("scan").paginate(
        TableName=deployment.output(STACK, "AlertTableName"),
        ProjectionExpression="alert_id, #status",
        ExpressionAttributeNames={"#status": "status"},
    )
    items = [item for page in scan for item in page["Items"]]
    return [
        item["alert_id"]["S"]
        for item in items
        if item.get("status", {"S": "active"})["S"] == "active" and item["alert_id"]["S"] not in ours
    ]


def test_a_dispatch_calls_the_api_once_per_alert_to_start_and_not_per_running_execution(deployment, slack, alerts):
    # Given: 12 active alerts. 4 are still running from the previous hour's dispatch (in their
    # two-hour wait: the test holds the simulated clock), 1 from an execution started by hand
    dispatcher = _stack_resource(deployment, "AWS::Lambda::Function", "DispatchAlerts")
    sfn = deployment.client("stepfunctions")
    with deployment.aws.clock.busy():
        _stop_running_alert_executions(deployment)  # an earlier test's execution would be one more to describe
        earlier = [alerts.put_alert(_users("foo"), rounds=2, interval=7200) for _ in range(4)]
        assert _dispatch(deployment, dispatcher, "2026-11-22T05:00:00Z")["started"] == sorted(earlier)
        later = [alerts.put_alert(_users("bar"), rounds=2, interval=7200) for _ in range(8)]
        by_hand, *to_start = later
        sfn.start_execution(
            stateMachineArn=deployment.machine_arn(MACHINE), name=unique("by-hand"), input=json.dumps({"alert_id": by_hand})
        )
        others = _other_active_alerts(deployment, set(earlier + later))
        # When: the next hour's dispatch runs, its API calls counted as the emulator receives them
        with deployment.aws.api_calls.counting() as calls:
            result = _dispatch(deployment, dispatcher, "2026-11-22T06:00:00Z")
        for alert_id in earlier + later:  # their executions end at the next status read
            alerts.set_status(alert_id, "resolved")
    # Then: it started the 7 alerts not running (and any other test left active), none twice
    assert result == {
        "started": sorted(to_start + others),
        "already_running": sorted(earlier + [by_hand]),
        "already_started": [],
    }
    # Then: one Scan page (DynamoDB reads up to 1 MB per page:
    # https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_Scan.html), one ListExecutions
    # page (up to 1,000 executions: https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html),
    # a DescribeExecution for the execution started by hand only, and a StartExecution per alert started
    dispatcher_calls = {op: calls[op] for op in ("Scan", "ListExecutions", "DescribeExecution", "StartExecution")}
    assert dispatcher_calls == {"Scan": 1, "ListExecutions": 1, "DescribeExecution": 1, "StartExecution": 7 + len(others)}


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

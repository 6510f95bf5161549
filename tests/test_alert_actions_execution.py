"""Acting on alerts end to end in the local emulator: the deployed endpoint, Slack's clicks, alarms.

Requests go over real HTTP to the function URL the stack publishes (``AlertActionsUrl``) and run the
deployed handler; Slack's clicks come from the Slack stand-in, signed with the signing secret the
emulator set up as a deployer would; alarm changes are what `aws cloudwatch set-alarm-state` makes
the emulator's CloudWatch put on the default bus, routed by the deployed rule. The links are signed
with the key the stack generated, as the machine's Fetch Alert Config signs them.
"""

from __future__ import annotations

import calendar
import json
import re
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlencode

import pytest
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from emulator.follow import follow
from patterns_common import alert_action_links as links
from patterns_common.alert_executions import alert_key, alert_key_of
from tests.emulator_helpers import function_log, wait_for, wait_for_event

STACK = "AlertNotificationStack"


class Alerts:
    """Alert items this test writes (unique ids), read back as plain values, deleted afterwards."""

    def __init__(self, deployment) -> None:
        self.table = deployment.output(STACK, "AlertTableName")
        self.client = deployment.client("dynamodb")
        self.written: list[str] = []

    def put(self, **fields) -> str:
        alert_id = fields.setdefault("alert_id", f"alert-{uuid.uuid4().hex[:8]}")
        item = {"status": "active", "notification_count": 1, "interval_seconds": 60, "message": f"Disk full ({alert_id})", **fields}
        serialize = TypeSerializer().serialize
        self.client.put_item(TableName=self.table, Item={k: serialize(v) for k, v in item.items()})
        self.written.append(alert_id)
        return alert_id

    def get(self, alert_id: str) -> dict:
        item = self.client.get_item(TableName=self.table, Key={"alert_id": {"S": alert_id}}, ConsistentRead=True)["Item"]
        return {k: TypeDeserializer().deserialize(v) for k, v in item.items()}

    def delete_all(self) -> None:
        for alert_id in self.written:
            self.client.delete_item(TableName=self.table, Key={"alert_id": {"S": alert_id}})


@pytest.fixture
def alerts(deployment):
    table = Alerts(deployment)
    yield table
    table.delete_all()


@pytest.fixture
def slack(deployment):
    deployment.slack.reset()
    yield deployment.slack
    deployment.slack.reset()


@pytest.fixture(scope="module")
def signing_key(deployment) -> bytes:
    arn = deployment.stack_resource(STACK, "AWS::SecretsManager::Secret", "SigningKey")
    return deployment.client("secretsmanager").get_secret_value(SecretId=arn)["SecretString"].encode()


def link(deployment, key: bytes, alert_id: str, user: str, action: str = "acknowledge") -> str:
    now = int(deployment.aws.clock.now())
    urls = links.links_for(key, deployment.output(STACK, "AlertActionsUrl"), alert_id=alert_id, user=user,
                           expires_at=now + links.LINK_LIFETIME_SECONDS)
    return urls[action]


def http(url: str, *, data: dict | None = None) -> tuple[int, str]:
    body = urlencode(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read().decode()


def confirm(url: str) -> dict:
    """The form the page's button posts."""
    claim = json.loads(links._b64decode(url.split("t=")[1].split(".")[0]))
    return {"t": url.split("t=")[1], "alert_id": claim["a"], "action": claim["x"]}


def followups(slack, alert_id: str) -> list[str]:
    return [p.body["text"] for p in slack.delivered if isinstance(p.body, dict)
            and str(p.body.get("text", "")).startswith(f"Alert {alert_id} was ")]


def notifications_about(slack, alert_id: str) -> list:
    """The machine's posts about the alert (whatever their shape): every post naming it but the follow-ups."""
    return [p for p in slack.delivered if alert_id in json.dumps(p.body) and p.body.get("text", "") not in followups(slack, alert_id)]


# -- the endpoint on its function URL --------------------------------------------------------------


def test_the_link_page_changes_nothing_its_button_acknowledges_and_the_execution_stops(deployment, alerts, slack, signing_key):
    # Given: an alert escalating in rounds an hour apart, round 1 sent
    user = f"U{uuid.uuid4().hex[:8].upper()}"
    alert_id = alerts.put(user_accounts=[user], notification_count=3, interval_seconds=3600)
    sfn = deployment.client("stepfunctions")
    with deployment.aws.clock.busy():
        execution_arn = sfn.start_execution(
            stateMachineArn=deployment.machine_arn("alert"), input=json.dumps({"alert_id": alert_id})
        )["executionArn"]
        wait_for(lambda: len(notifications_about(slack, alert_id)) == 1, "round 1 on Slack", timeout=60)
        url = link(deployment, signing_key, alert_id, user)
        # When: the link is opened (as a person, Slack's unfurler or a mail scanner would)
        status, page = http(url)
        # Then: a page and nothing else
        assert status == 200 and alert_id in page and user in page and "<form" in page
        assert alerts.get(alert_id)["status"] == "active" and followups(slack, alert_id) == []
        # When: its button is pressed
        pressed_at = deployment.aws.clock.now()
        status, page = http(url, data=confirm(url))
    # Then: acknowledged, said in the channel, and the execution ends at its next status read
    item = alerts.get(alert_id)
    assert status == 200 and item["status"] == "acknowledged" and item["acknowledged_by"] == user
    # (the follow-up goes after the answer: the follow-up function, invoked asynchronously, posts it)
    expected = [f"Alert {alert_id} was acknowledged by <@{user}> at {item['acknowledged_at']}."]
    wait_for(lambda: followups(slack, alert_id) == expected, "the follow-up", timeout=60)
    result = follow(deployment.aws, execution_arn)
    assert result.status == "SUCCEEDED" and result.output["stopped_reason"] == "acknowledged"
    assert len(notifications_about(slack, alert_id)) == 1  # no further notification
    # And the time recorded is the simulated clock's (the Lambda sees simulated time; the test held it)
    assert abs(calendar.timegm(time.strptime(item["acknowledged_at"], "%Y-%m-%dT%H:%M:%SZ")) - pressed_at) < 2


def test_a_tampered_link_gets_a_4xx_page_over_http_and_changes_nothing(deployment, alerts, slack, signing_key):
    alert_id = alerts.put(user_accounts=["U0TAMPER"])
    url = link(deployment, signing_key, alert_id, "U0TAMPER")
    forged = url[:-2] + ("AA" if not url.endswith("AA") else "BB")
    assert http(forged)[0] == 400 and http(forged, data=confirm(forged))[0] == 400
    assert alerts.get(alert_id)["status"] == "active" and slack.posts == []


def test_200_concurrent_clicks_on_one_alert_record_one_acknowledgement(deployment, alerts, slack, signing_key):
    # Given
    alert_id = alerts.put(user_accounts=["U0CLICKS"])
    url = link(deployment, signing_key, alert_id, "U0CLICKS")
    form = confirm(url)
    # When: 200 presses at once (the endpoint's reserved concurrency caps instances on AWS)
    with ThreadPoolExecutor(50) as pool:
        answers = list(pool.map(lambda _: http(url, data=form), range(200)))
    # Then: every press is answered, one acted, the others were told who did
    assert Counter(status for status, _ in answers) == {200: 200}
    assert sum("is acknowledged" in page for _, page in answers) == 1
    assert sum("was already acknowledged" in page for _, page in answers) == 199
    item = alerts.get(alert_id)
    assert item["status"] == "acknowledged"
    expected = [f"Alert {alert_id} was acknowledged by <@U0CLICKS> at {item['acknowledged_at']}."]
    wait_for(lambda: followups(slack, alert_id) == expected, "the follow-up", timeout=60)


# -- Slack interactivity ---------------------------------------------------------------------------


def test_a_click_in_slack_acts_for_the_clicker_and_the_opened_page_says_who(deployment, alerts, slack, signing_key):
    # Given: a notification with link buttons, as the notifier posts it (Block Kit actions block)
    alert_id = alerts.put(user_accounts=["U0NOTIFIED"])
    urls = {action: link(deployment, signing_key, alert_id, "U0NOTIFIED", action) for action in ("acknowledge", "resolve")}
    message = {
        "text": f"<@U0NOTIFIED>: alert {alert_id} is active",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"<@U0NOTIFIED>: alert {alert_id} is active"}},
            {"type": "actions", "elements": [
                {"type": "button", "action_id": action, "text": {"type": "plain_text", "text": label}, "url": urls[action]}
                for action, label in (("acknowledge", "Acknowledge"), ("resolve", "Resolve"))
            ]},
        ],
    }
    request = urllib.request.Request(slack.url, data=json.dumps(message).encode(), headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=10).close()  # noqa: S310 - the stand-in
    [post] = slack.posts
    # When: a person clicks Resolve
    clicked = slack.click(post.seq, block=1, element=1, user="U0CLICKER")
    # Then: Slack opened the link and sent the signed request, which the endpoint accepted at once
    assert clicked["url"] == urls["resolve"] and clicked["interaction"]["status"] == 200
    item = alerts.get(alert_id)
    assert item["status"] == "resolved" and item["resolved_by"] == "U0CLICKER"
    # And the page the click opened says who acted
    status, page = http(clicked["url"])
    assert status == 200 and f"Resolved by U0CLICKER at {item['resolved_at']}" in page


# -- alarms ----------------------------------------------------------------------------------------


def put_alarm(deployment, name: str) -> str:
    deployment.client("cloudwatch").put_metric_alarm(
        # A day's period: no evaluation of the (missing) data moves the state a test sets meanwhile.
        AlarmName=name, Namespace="Test/Alerts", MetricName=name, Statistic="Sum", Period=86400, EvaluationPeriods=1,
        Threshold=1.0, ComparisonOperator="GreaterThanOrEqualToThreshold",
    )
    return name


def set_alarm_state(deployment, name: str, state: str) -> None:
    """As `aws cloudwatch set-alarm-state` does: CloudWatch then puts the state-change event on the default bus."""
    deployment.client("cloudwatch").set_alarm_state(AlarmName=name, StateValue=state, StateReason="test")


def alarm_changes_handled(deployment, alarms: set[str], state: str) -> int:
    """Deliveries of ``alarms``' changes to ``state`` the app's alarm handler has finished with.

    Read from the handler's own log records, one per delivery, as an operator would read them: the
    handler is invoked for every alarm in the account (the rule matches them all, and the emulator's
    own alarms change state as the clock moves), so a count of its invocations says nothing about one
    alarm.
    """
    handler = deployment.stack_resource(STACK, "AWS::Lambda::Function", "ApplyAlarmChange")
    count = 0
    for line in function_log(deployment.aws, handler, filterPattern='"Alarm change"'):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if (isinstance(record, dict) and record.get("message") in ("Alarm change applied", "Alarm change ignored")
                and record.get("alarm_name") in alarms and record.get("state") == state):
            count += 1
    return count


def execution_arns(deployment, alert_ids: set[str], **filters: str) -> dict[str, list[str]]:
    """The executions named for each alert (the names say which alert they are for)."""
    keys = {alert_key(a): a for a in alert_ids}
    filters = {"statusFilter": filters["status"]} if "status" in filters else {}
    pages = deployment.client("stepfunctions").get_paginator("list_executions").paginate(
        stateMachineArn=deployment.machine_arn("alert"), **filters
    )
    found: dict[str, list[str]] = {}
    for page in pages:
        for execution in page["executions"]:
            if (key := alert_key_of(execution["name"])) in keys:
                found.setdefault(keys[key], []).append(execution["executionArn"])
    return found


def executions_for(deployment, alert_ids: set[str]) -> Counter:
    return Counter({alert_id: len(arns) for alert_id, arns in execution_arns(deployment, alert_ids).items()})


def test_an_alarm_raises_its_alert_at_once_and_ok_resolves_it(deployment, alerts, slack):
    # Given: a resolved alert that names an alarm
    alarm = put_alarm(deployment, f"disk-full-{uuid.uuid4().hex[:6]}")
    alert_id = alerts.put(alarm_name=alarm, user_accounts=["U0ALARM"], status="resolved", notification_count=2,
                          interval_seconds=3600)
    # The simulated clock held still until OK is applied: its round-2 Wait must not pass meanwhile
    # (idle, the clock would jump the hour at once and the rounds would run out first).
    deployment.aws.clock.pause()
    try:
        # When: the alarm enters ALARM
        set_alarm_state(deployment, alarm, "ALARM")
        wait_for(lambda: alarm_changes_handled(deployment, {alarm}, "ALARM") == 1, "the alarm change to be applied", timeout=60)
        # Then: active, and its escalation started at once (first post without waiting for the schedule)
        assert alerts.get(alert_id)["status"] == "active"
        [execution_arn] = execution_arns(deployment, {alert_id})[alert_id]
        wait_for(lambda: len(notifications_about(slack, alert_id)) == 1, "the first notification", timeout=60)
        # When: a minute later (simulated; well inside the round-2 wait), the alarm returns to OK. The
        # round must be over first: a minute jumped while the notifier still runs would be a minute
        # of its timeout, which real time never takes from a running function.
        wait_for_event(deployment.client("stepfunctions"), execution_arn, "WaitStateEntered", timeout=60)
        deployment.aws.clock.advance(60)
        set_alarm_state(deployment, alarm, "OK")
        wait_for(lambda: alarm_changes_handled(deployment, {alarm}, "OK") == 1, "the OK change to be applied", timeout=60)
    finally:
        deployment.aws.clock.resume()
    # Then: resolved by the alarm, said in the channel, and the execution ends resolved
    item = alerts.get(alert_id)
    assert item["status"] == "resolved" and item["resolved_by"] == f"CloudWatch alarm {alarm}"
    assert followups(slack, alert_id) == [f"Alert {alert_id} was resolved by CloudWatch alarm {alarm} at {item['resolved_at']}."]
    result = follow(deployment.aws, execution_arn)
    assert result.status == "SUCCEEDED", (result.status, result.error, result.cause)
    assert result.output["stopped_reason"] == "resolved"
    assert len(notifications_about(slack, alert_id)) == 1  # no round after the resolution


@pytest.mark.load
def test_an_alarm_storm_with_redelivered_events_starts_each_escalation_exactly_once(deployment, alerts, slack):
    # Given: the alert's functions warm, as the tests before this one leave them: one alarm's alert has
    # run its escalation. Lambda gives each of a storm's instances hardware of its own; the emulator
    # runs all their cold starts on two cores (148 of Fetch Alert Config's 234 invocations in one run
    # alone on a fresh deployment), and the storm's first post then waited 17 to 25 s for that CPU, not
    # for Slack's pace, which is what the 5 s below is about.
    warm_alarm = put_alarm(deployment, f"warm-{uuid.uuid4().hex[:6]}")
    warm = alerts.put(alarm_name=warm_alarm, user_accounts=["U0WARM"], status="resolved")
    set_alarm_state(deployment, warm_alarm, "ALARM")
    wait_for(lambda: alarm_changes_handled(deployment, {warm_alarm}, "ALARM") == 1, "the warm-up alarm change", timeout=60)
    [warm_execution] = execution_arns(deployment, {warm})[warm]
    follow(deployment.aws, warm_execution)
    # and 200 alerts, each named by its own alarm
    run = uuid.uuid4().hex[:6]
    alarms = {put_alarm(deployment, f"storm-{run}-{n:03d}"): alerts.put(
        alert_id=f"storm-{run}-{n:03d}", alarm_name=f"storm-{run}-{n:03d}", user_accounts=[f"U0STORM{n:03d}"],
        status="resolved") for n in range(200)}
    router = deployment.aws.router
    # When: all 200 enter ALARM in the same second (the simulated clock paused meanwhile), and
    # EventBridge delivers every event twice
    deployment.aws.clock.pause()
    raised_at = deployment.aws.clock.now()
    try:
        with ThreadPoolExecutor(20) as pool:
            list(pool.map(lambda alarm: set_alarm_state(deployment, alarm, "ALARM"), alarms))
    finally:
        deployment.aws.clock.resume()
    # (each event once, though every alert stack's rule got it: the example app's is deployed beside the app's)
    events = list({d["event"]["id"]: d["event"] for d in list(router.delivered)
                   if d["event"].get("detail", {}).get("alarmName") in alarms}.values())
    assert len(events) == 200 and len({e["detail"]["state"]["timestamp"][:19] for e in events}) == 1
    # and once the storm's first post is in, Slack takes the next one but answers it only after the
    # notifier's 5 s timeout
    wait_for(lambda: any(run in json.dumps(p.body) for p in slack.delivered), "the storm's first post", timeout=60)
    slack.hang_next(seconds=6)
    for event in events:
        router.put(event)
    wait_for(lambda: alarm_changes_handled(deployment, set(alarms), "ALARM") == 400, "400 deliveries", timeout=240)
    # Then: 200 escalations, one per alert
    started = executions_for(deployment, set(alarms.values()))
    assert len(started) == 200 and set(started.values()) == {1}
    assert all(alerts.get(alert_id)["status"] == "active" for alert_id in alarms.values())
    # Then: with Slack's webhook pace on (the stand-in's default: about one a second, short bursts, 429
    # beyond: https://api.slack.com/docs/rate-limits), every escalation ends with its notification
    # delivered, none failed or lost, and the storm's first post within 5 s of the alarms (issue 30)
    wait_for(lambda: not execution_arns(deployment, set(alarms.values()), status="RUNNING"), "the escalations to end",
             timeout=300)
    # (each read as DescribeExecution tells it: 200 histories read and parsed cost the shard a minute)
    sfn = deployment.client("stepfunctions")
    arns_by_alert = execution_arns(deployment, set(alarms.values()))
    ended = [sfn.describe_execution(executionArn=arns[0]) for arns in arns_by_alert.values()]
    assert Counter(d["status"] for d in ended) == {"SUCCEEDED": 200}, Counter(
        (d.get("error"), (d.get("cause") or "")[:80]) for d in ended)
    outputs = [json.loads(d["output"]) for d in ended]
    assert all(o["notifications_sent"] == 1 and o["notifications_failed"] == [] for o in outputs)
    delivered = [p for p in slack.delivered if run in json.dumps(p.body)]
    posted = Counter(user for p in delivered for user in set(re.findall(r"U0STORM\d{3}", json.dumps(p.body))))
    assert set(posted) == {f"U0STORM{n:03d}" for n in range(200)}
    # A post a loaded machine sends late may meet a 429; it is sent again after Retry-After, never twice.
    # Only a post Slack took but answered after the notifier stopped waiting (the hung one; a machine this
    # loaded may answer others that late too) is posted again by the machine's retry, as it must be: no
    # client can tell an unanswered post from a lost one, and a page must not be lost. The attempt that
    # stopped waiting failed as "Slack did not answer" (its 5 s timeout) or as the function's timeout.
    repeated = sorted(user for user, count in posted.items() if count > 1)
    assert repeated, "the post Slack answered after the timeout was not posted again"
    for user in repeated:
        [arn] = arns_by_alert[f"storm-{run}-{user.removeprefix('U0STORM')}"]
        failed = [e["taskFailedEventDetails"] for e in sfn.get_execution_history(executionArn=arn, maxResults=1000)["events"]
                  if e["type"] == "TaskFailed"]
        unanswered = [f for f in failed if f["error"] in ("Sandbox.Timedout", "States.Timeout") or (
            f["error"] == "SlackTransientError" and "Slack did not answer" in f.get("cause", ""))]
        assert posted[user] <= 1 + len(unanswered), (user, posted[user], failed)
    assert min(float(p.ts) for p in delivered) - raised_at <= 5


def test_done_when_an_alarm_pages_at_once_and_the_posts_acknowledge_link_stops_the_escalation(deployment, alerts, slack):
    # Issue 23's "Done when": an alert naming an alarm; the alarm enters ALARM
    alarm = put_alarm(deployment, f"api-5xx-{uuid.uuid4().hex[:6]}")
    user = f"U{uuid.uuid4().hex[:8].upper()}"
    alert_id = alerts.put(alarm_name=alarm, user_accounts=[user], status="resolved", notification_count=3,
                          interval_seconds=600)
    # The test holds the simulated clock (it flows, but never jumps the 600 s wait) until the press
    with deployment.aws.clock.busy():
        raised_at = deployment.aws.clock.now()
        set_alarm_state(deployment, alarm, "ALARM")
        # Then: the first post comes within seconds of simulated time, with its two buttons
        wait_for(lambda: len(notifications_about(slack, alert_id)) == 1, "the first post", timeout=60)
        [post] = notifications_about(slack, alert_id)
        assert float(post.ts) - raised_at < 10  # simulated seconds: the stand-in stamps posts on the emulator's clock
        [actions] = [block for block in post.body["blocks"] if block["type"] == "actions"]
        buttons = {button["text"]["text"]: button["url"] for button in actions["elements"]}
        assert set(buttons) == {"Acknowledge", "Resolve"}
        # When: the Acknowledge link is opened: a page, and nothing changes
        status, page = http(buttons["Acknowledge"])
        assert status == 200 and "<form" in page and alerts.get(alert_id)["status"] == "active"
        # When: the page's button is pressed
        status, page = http(buttons["Acknowledge"], data=confirm(buttons["Acknowledge"]))
        assert status == 200 and alerts.get(alert_id)["acknowledged_by"] == user
    # Then: the execution ends acknowledged at its next status read, and nothing but the follow-up follows
    [execution_arn] = execution_arns(deployment, {alert_id})[alert_id]
    result = follow(deployment.aws, execution_arn)
    assert result.output["stopped_reason"] == "acknowledged" and result.output["acknowledged_by"] == user
    wait_for(lambda: len(followups(slack, alert_id)) == 1, "the follow-up", timeout=60)
    assert len(notifications_about(slack, alert_id)) == 1


# -- alarms as CloudWatch moves them (issue 30) ------------------------------------------------------


def test_a_flap_during_the_escalation_escalates_the_new_occurrence_from_its_first_round(deployment, alerts, slack):
    # Given: an alert of 3 rounds 300 s apart naming an alarm; the alarm enters ALARM and round 1 is posted
    alarm = put_alarm(deployment, f"flap-{uuid.uuid4().hex[:6]}")
    user = f"U{uuid.uuid4().hex[:8].upper()}"
    alert_id = alerts.put(alarm_name=alarm, user_accounts=[user], status="resolved", notification_count=3,
                          interval_seconds=300)
    sfn = deployment.client("stepfunctions")
    deployment.aws.clock.pause()  # the 300 s wait must not pass on its own meanwhile
    try:
        set_alarm_state(deployment, alarm, "ALARM")
        wait_for(lambda: alarm_changes_handled(deployment, {alarm}, "ALARM") == 1, "the alarm change", timeout=60)
        [earlier] = execution_arns(deployment, {alert_id})[alert_id]
        wait_for_event(sfn, earlier, "WaitStateEntered", timeout=60)
        [before_flap] = notifications_about(slack, alert_id)
        # When: during the first wait, OK, and ALARM again (a flapping alarm; CloudWatch evaluates once a minute)
        deployment.aws.clock.advance(100)
        set_alarm_state(deployment, alarm, "OK")
        wait_for(lambda: alarm_changes_handled(deployment, {alarm}, "OK") == 1, "the OK change", timeout=60)
        deployment.aws.clock.advance(60)
        set_alarm_state(deployment, alarm, "ALARM")
        wait_for(lambda: alarm_changes_handled(deployment, {alarm}, "ALARM") == 2, "the second ALARM", timeout=60)
        # Then: the earlier occurrence's execution is stopped at once, not at its next round
        [new] = [arn for arn in execution_arns(deployment, {alert_id})[alert_id] if arn != earlier]
        assert sfn.describe_execution(executionArn=earlier)["status"] == "ABORTED"
        assert alerts.get(alert_id)["escalation_execution_arn"] == new
    finally:
        deployment.aws.clock.resume()
    # Then: the new occurrence gets its 3 rounds, from the first
    result = follow(deployment.aws, new)
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert (result.output["rounds_completed"], result.output["notifications_sent"]) == (3, 3)
    after = [p for p in notifications_about(slack, alert_id) if p.seq > before_flap.seq]
    assert [f"(notification round {n})" in p.body["text"] for n, p in enumerate(after, start=1)] == [True] * 3
    # When: the notified person clicks Acknowledge in Slack on a message posted after the re-raise
    clicked = slack.click(after[-1].seq, block=1, element=0)
    # Then: the signed click acknowledges the alert
    assert clicked["interaction"]["status"] == 200
    item = alerts.get(alert_id)
    assert item["status"] == "acknowledged" and item["acknowledged_by"] == user
    # And after the answer, the clicked message loses its buttons for who acted, through the click's response_url
    wait_for(lambda: [b["type"] for b in slack.shown(after[-1].seq)["blocks"]] == ["section", "context"],
             "the clicked message to be updated", timeout=60)
    # And a link of the earlier occurrence is refused with a page saying the alert was raised again
    old_link = slack.click(before_flap.seq, block=1, element=1)
    assert old_link["interaction"]["status"] == 409
    status, page = http(old_link["url"])
    assert status == 409 and "was raised again" in page


def test_alarm_insufficient_data_alarm_after_an_acknowledgement_sends_nothing(deployment, alerts, slack):
    # Given: the alarm raised the alert, its first round was posted, and the person acknowledged it
    alarm = put_alarm(deployment, f"gap-{uuid.uuid4().hex[:6]}")
    user = f"U{uuid.uuid4().hex[:8].upper()}"
    alert_id = alerts.put(alarm_name=alarm, user_accounts=[user], status="resolved", notification_count=3,
                          interval_seconds=300)
    deployment.aws.clock.pause()
    try:
        set_alarm_state(deployment, alarm, "ALARM")
        wait_for(lambda: len(notifications_about(slack, alert_id)) == 1, "the first post", timeout=60)
        [post] = notifications_about(slack, alert_id)
        assert slack.click(post.seq, block=1, element=0)["interaction"]["status"] == 200
        # When: the metric has a gap (missing data, CloudWatch's default: INSUFFICIENT_DATA), then breaches again
        deployment.aws.clock.advance(60)
        set_alarm_state(deployment, alarm, "INSUFFICIENT_DATA")
        deployment.aws.clock.advance(60)
        set_alarm_state(deployment, alarm, "ALARM")
        wait_for(lambda: alarm_changes_handled(deployment, {alarm}, "ALARM") == 2, "the second ALARM", timeout=60)
    finally:
        deployment.aws.clock.resume()
    # Then: still acknowledged by the person, one execution only, and nothing more sent
    [execution] = execution_arns(deployment, {alert_id})[alert_id]
    result = follow(deployment.aws, execution)
    assert result.output["stopped_reason"] == "acknowledged" and result.output["notifications_sent"] == 1
    item = alerts.get(alert_id)
    assert item["status"] == "acknowledged" and item["acknowledged_by"] == user
    assert len(notifications_about(slack, alert_id)) == 1

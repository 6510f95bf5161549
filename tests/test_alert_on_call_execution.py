"""On-call schedules end to end: alerts whose escalation names schedule:<id>, run in the local emulator.

Who is on call is worked out by hand from the schedule each test writes (issue 31: member k holds
shift n, k = n mod len(members); hour shifts are elapsed hours; before its start a layer has no one),
against the emulator's simulated clock, which the app's handlers read as the time.
"""

from __future__ import annotations

import hashlib
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import urlencode
from zoneinfo import ZoneInfo

import pytest
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from selenium.webdriver.common.by import By

from emulator.slack import TEAM
from tests.browser import until
from tests.emulator_helpers import unique, wait_for
from tests.test_alert_notification_execution import MACHINE, STACK, AlertTable, _users, notifications

FIND = "Find Who Is On Call"
NEW_YORK = ZoneInfo("America/New_York")


class OnCallTable:
    """Writes schedule items as a person would (`aws dynamodb put-item` on OnCallTableName), removed after the test."""

    def __init__(self, deployment) -> None:
        self.name = deployment.output(STACK, "OnCallTableName")
        self.client = deployment.client("dynamodb")
        self.written: list[str] = []

    def put(self, **item: Any) -> str:
        serialize = TypeSerializer().serialize
        self.client.put_item(TableName=self.name, Item={key: serialize(value) for key, value in item.items()})
        self.written.append(item["schedule_id"])
        return item["schedule_id"]

    def delete_all(self) -> None:
        for schedule_id in self.written:
            self.client.delete_item(TableName=self.name, Key={"schedule_id": {"S": schedule_id}})


@pytest.fixture
def slack(deployment):
    deployment.slack.reset()
    yield deployment.slack
    deployment.slack.reset()


@pytest.fixture
def alerts(deployment) -> Iterator[AlertTable]:
    table = AlertTable(deployment)
    yield table
    table.delete_all()


@pytest.fixture
def on_call(deployment) -> Iterator[OnCallTable]:
    table = OnCallTable(deployment)
    yield table
    table.delete_all()


def _local_minute(instant: datetime) -> str:
    return instant.astimezone(NEW_YORK).strftime("%Y-%m-%dT%H:%M")


def test_a_handoff_during_an_escalation_reaches_the_new_person_in_the_next_round(deployment, slack, alerts, on_call):
    # Given: hourly shifts, A then B, whose handoff falls 2 to 3 simulated minutes from now: the layer
    # started an hour before it, so A holds shift 0 now and B (shift 1) from the handoff on
    first, second = _users("first", "second")
    now = datetime.fromtimestamp(deployment.aws.clock.now(), timezone.utc)
    handoff = now.replace(second=0, microsecond=0) + timedelta(minutes=3)
    # (in UTC: a New York start an hour before could fall in the hour its clocks repeat once a year)
    schedule_id = on_call.put(
        schedule_id=unique("hourly"), time_zone="UTC",
        layers=[{"members": [first, second], "start": f"{handoff - timedelta(hours=1):%Y-%m-%dT%H:%M}", "shift": "PT1H"}],
    )
    # And: an alert paging the schedule in two rounds 300 s apart (round 2 comes after the handoff)
    alert_id = alerts.put(alert_id=unique("paging-schedule"), notification_count=2, interval_seconds=300,
                          escalation=[[f"schedule:{schedule_id}"]], message="Queue depth above 1000")
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then: round 1 paged A, round 2 paged B; each round looked the schedule up when it notified
    assert result.status == "SUCCEEDED", result.cause
    assert sorted((n.round, n.user) for n in notifications(slack, alert_id)) == [(1, first), (2, second)]
    assert result.entered(FIND) == 2
    assert result.output["notifications_sent"] == 2


def test_a_gap_falls_to_the_next_level_and_the_message_names_the_schedule(deployment, slack, alerts, on_call):
    # Given: a rotation that starts tomorrow (before its start a layer has no one), then a lead
    (member,), (lead,) = _users("member"), _users("lead")
    tomorrow = datetime.fromtimestamp(deployment.aws.clock.now(), timezone.utc) + timedelta(days=1)
    schedule_id = on_call.put(schedule_id=unique("later"), time_zone="America/New_York",
                              layers=[{"members": [member], "start": _local_minute(tomorrow), "shift": "P1D"}])
    alert_id = alerts.put(alert_id=unique("gap"), notification_count=1,
                          escalation=[[f"schedule:{schedule_id}"], [lead]], message="Error rate above 5%")
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then: the lead was paged in round 1, told which schedule had nobody on call
    assert result.status == "SUCCEEDED", result.cause
    [sent] = notifications(slack, alert_id)
    assert (sent.round, sent.user) == (1, lead)
    assert sent.message.startswith("Error rate above 5%\n")
    assert f"Schedule {schedule_id} has nobody on call." in sent.message


def test_an_unreadable_schedule_with_no_later_level_fails_the_alert_naming_it(deployment, slack, alerts, on_call):
    # Given: an alert paging a schedule the table does not have
    alert_id = alerts.put(alert_id=unique("unreadable"), notification_count=1,
                          escalation=[["schedule:no-such-schedule"]], message="Disk full")
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then: the execution fails under the error's name, naming the schedule; nobody was notified
    assert result.status == "FAILED"
    assert result.error == "ScheduleUnreadable"
    assert result.cause == "schedule:no-such-schedule: the on-call table has no such schedule"
    assert notifications(slack, alert_id) == []


def test_an_override_until_9999_in_new_york_pages_its_member(deployment, slack, alerts, on_call):
    # Given (issue 38): "until further notice" written as 9999-12-31T23:59 in New York, which is past the
    # last datetime in UTC and used to fail Find Who Is On Call with OverflowError, paging nobody
    (rotating,), (covering,) = _users("rotating"), _users("covering")
    now = datetime.fromtimestamp(deployment.aws.clock.now(), timezone.utc)
    schedule_id = on_call.put(
        schedule_id=unique("until-further-notice"), time_zone="America/New_York",
        layers=[{"members": [rotating], "start": _local_minute(now - timedelta(days=3)), "shift": "P1D"}],
        overrides=[{"member": covering, "start": _local_minute(now - timedelta(hours=1)), "end": "9999-12-31T23:59"}])
    alert_id = alerts.put(alert_id=unique("forever"), notification_count=1,
                          escalation=[[f"schedule:{schedule_id}"]], message="Disk full")
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then: the override's member is paged, as the override wins over every layer
    assert result.status == "SUCCEEDED", result.cause
    assert [(n.round, n.user) for n in notifications(slack, alert_id)] == [(1, covering)]


def test_a_broken_schedule_beside_a_lead_pages_the_lead_on_the_same_level_and_says_why(deployment, slack, alerts, on_call):
    # Given (issue 38): two overlapping overrides, as the docs' update-item can append without a check, make
    # the schedule unusable; the lead is named beside it on the only level
    (member,), (lead,) = _users("member"), _users("lead")
    now = datetime.fromtimestamp(deployment.aws.clock.now(), timezone.utc)
    schedule_id = on_call.put(
        schedule_id=unique("overlapping"), time_zone="America/New_York",
        layers=[{"members": [member], "start": _local_minute(now - timedelta(days=3)), "shift": "P1D"}],
        overrides=[{"member": member, "start": _local_minute(now - timedelta(hours=2)), "end": _local_minute(now + timedelta(hours=2))},
                   {"member": lead, "start": _local_minute(now - timedelta(hours=1)), "end": _local_minute(now + timedelta(hours=3))}])
    alert_id = alerts.put(alert_id=unique("broken-beside-lead"), notification_count=1,
                          escalation=[[f"schedule:{schedule_id}", lead]], message="Error rate above 5%")
    # When
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    # Then: the lead was paged, and the message says which schedule could not be read and why
    assert result.status == "SUCCEEDED", result.cause
    [sent] = notifications(slack, alert_id)
    assert (sent.round, sent.user) == (1, lead)
    assert (f"Schedule {schedule_id} could not be read (schedule '{schedule_id}', overrides[1]: overlaps overrides[0]"
            in sent.message)


def _slash(deployment, text: str, *, user: str, age_seconds: float = 0, team_id: str = TEAM["id"]) -> tuple[int, str]:
    """/oncall as Slack sends a slash command: a form POST to the Request URL (AlertActionsUrl), signed by
    the stand-in with the app's signing secret (https://api.slack.com/interactivity/slash-commands), from
    the stand-in's workspace, the one the emulator deploys the app for (slackTeamId) unless told otherwise."""
    body = urlencode({"token": "stand-in-verification-token", "team_id": team_id, "channel_id": "C0001",
                      "user_id": user, "command": "/oncall", "text": text,
                      "response_url": "https://hooks.slack.com/commands/T0001/1/abc", "trigger_id": "1.2.3"})
    stamp = str(int(deployment.aws.clock.now() - age_seconds))
    request = urllib.request.Request(
        deployment.output(STACK, "AlertActionsUrl"), data=body.encode(), method="POST",
        headers={"Content-Type": "application/x-www-form-urlencoded", "X-Slack-Request-Timestamp": stamp,
                 "X-Slack-Signature": deployment.slack.sign(stamp, body)})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 - loopback
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read().decode()


def _local_text(instant: datetime) -> str:
    local = instant.astimezone(NEW_YORK)
    return f"{local:%a %Y-%m-%d %H:%M} {local.tzname()}"


def test_oncall_signed_by_slack_lists_the_schedule_and_a_stale_one_is_refused(deployment, on_call):
    # Given: two-hour shifts, A then B, the first started an hour ago (to the minute)
    first, second = "U0FIRST01", "U0SECOND2"
    started = datetime.fromtimestamp(deployment.aws.clock.now(), timezone.utc).replace(second=0, microsecond=0) - timedelta(hours=1)
    schedule_id = on_call.put(schedule_id=unique("two-hourly"), time_zone="America/New_York",
                              layers=[{"members": [first, second], "start": _local_minute(started), "shift": "PT2H"}])
    # And: a schedule whose shift is a month, which the parser refuses (hours, days or weeks only)
    broken = on_call.put(schedule_id=unique("monthly"), time_zone="UTC",
                         layers=[{"members": [first], "start": _local_minute(started), "shift": "P1M"}])
    # When: /oncall, signed now
    status, body = _slash(deployment, "", user="U0ASKING1")
    # Then: 200 and, for this schedule, A until the handoff and B for the shift after, in New York time
    assert status == 200, body
    answer = json.loads(body)
    assert answer["response_type"] == "ephemeral"
    handoff = started + timedelta(hours=2)
    assert (
        f"*{schedule_id}* (America/New_York)\n"
        f"• now: <@{first}> until {_local_text(handoff)}\n"
        f"• next: <@{second}> from {_local_text(handoff)} until {_local_text(handoff + timedelta(hours=2))}"
    ) in answer["text"]
    # And: the broken schedule is listed with its error, not left out
    assert (f"*{broken}* cannot be read: schedule '{broken}', layers[0].shift: must be an ISO 8601 duration in "
            "hours, days or weeks (PT12H, P1D, P1W), got 'P1M'") in answer["text"].splitlines()
    # When: the same command signed six minutes ago (Slack: refuse more than five minutes)
    status, _ = _slash(deployment, f"cover {schedule_id}", user="U0ASKING1", age_seconds=360)
    # Then: refused, and nobody covers anything
    assert status == 401
    item = deployment.client("dynamodb").get_item(TableName=on_call.name, Key={"schedule_id": {"S": schedule_id}})["Item"]
    assert "overrides" not in item


def test_a_cover_is_refused_to_an_outsider_told_to_the_channel_and_undone_by_uncover(deployment, slack, on_call):
    # Given: daily shifts in UTC, A then B, A's started an hour ago (to the minute)
    first, second, outsider = "U0COVERA1", "U0COVERB2", "U0OUTSIDE"
    started = datetime.fromtimestamp(deployment.aws.clock.now(), timezone.utc).replace(second=0, microsecond=0) - timedelta(hours=1)
    schedule_id = on_call.put(schedule_id=unique("covered"), time_zone="UTC",
                              layers=[{"members": [first, second], "start": f"{started:%Y-%m-%dT%H:%M}", "shift": "P1D"}])
    dynamodb = deployment.client("dynamodb")

    def overrides() -> list:
        item = dynamodb.get_item(TableName=on_call.name, Key={"schedule_id": {"S": schedule_id}}, ConsistentRead=True)["Item"]
        return TypeDeserializer().deserialize(item["overrides"]) if "overrides" in item else None

    def answer(text: str, user: str, **kwargs) -> str:
        status, body = _slash(deployment, text, user=user, **kwargs)
        assert status == 200, body
        return json.loads(body)["text"]

    def told(text: str) -> None:
        wait_for(lambda: any(isinstance(post.body, dict) and post.body.get("text") == text for post in slack.delivered), f"{text!r} in the channel")

    # When: someone in no layer covers the schedule, then a member from another workspace
    # Then: both refused, nothing written
    assert answer(f"cover {schedule_id}", outsider) == (
        f"Not covered: only the members of *{schedule_id}*'s layers and its coverers may cover it: <@{first}>, <@{second}>.")
    assert answer(f"cover {schedule_id}", second, team_id="T0OTHER99") == (
        "/oncall takes requests only from the Slack workspace this app is deployed for.")
    assert overrides() is None

    # When: B covers two to three hours after A's start, inside A's shift
    begins, ends = started + timedelta(hours=2), started + timedelta(hours=3)
    covered = (f"<@{second}> covers <@{first}> on *{schedule_id}* from {begins:%a %Y-%m-%d %H:%M} UTC to "
               f"{ends:%a %Y-%m-%d %H:%M} UTC (UTC).")
    assert answer(f"cover {schedule_id} {begins:%Y-%m-%dT%H:%M} {ends:%Y-%m-%dT%H:%M}", second) == covered
    # Then: written, and the channel is told, not only B
    assert overrides() == [{"member": second, "start": f"{begins:%Y-%m-%dT%H:%M}", "end": f"{ends:%Y-%m-%dT%H:%M}"}]
    told(covered)

    # When: B uncovers; the cover has not started
    handoff_arms = deployment.aws.runtime.count("HandoffNotice")
    uncovered = (f"<@{second}> uncovers *{schedule_id}*: the cover from {begins:%a %Y-%m-%d %H:%M} UTC to "
                 f"{ends:%a %Y-%m-%d %H:%M} UTC is removed (UTC).")
    assert answer(f"uncover {schedule_id}", second) == uncovered
    # Then: removed, told to the channel, and Handoff Notice asked to arm again (the cover moved handoffs)
    assert overrides() == []
    told(uncovered)
    wait_for(lambda: deployment.aws.runtime.count("HandoffNotice") > handoff_arms, "Handoff Notice invoked to re-arm")


BERLIN = ZoneInfo("Europe/Berlin")


def _berlin_text(day, hour: int) -> str:
    """A local time on ``day`` in Berlin as the console writes it (docs/on-call-schedules.md): ``Mon 2026-11-30 22:00 CET``."""
    local = datetime(day.year, day.month, day.day, hour, tzinfo=BERLIN)
    return f"{local:%a %Y-%m-%d %H:%M} {local.tzname()}"


_READ_TIMELINE = """
const section = arguments[0], track = section.querySelector('.row[data-row="final"] .track').getBoundingClientRect();
const segments = (row) => [...section.querySelectorAll(`.row[data-row="${row}"] .segment`)].map((s) => ({
  member: s.dataset.member, start: s.dataset.start, end: s.dataset.end, kinds: [...s.classList].filter((c) => c !== "segment").sort(),
  text: s.textContent }));
const now = section.querySelector(".now");
return {
  rows: [...section.querySelectorAll(".timeline .row")].map((r) => r.dataset.row),
  days: [...section.querySelectorAll(".row.days .day")].map((d) => d.textContent),
  layer1: segments("layer 1"), layer2: segments("layer 2"), overrides: segments("overrides"), final: segments("final"),
  now: { text: now.textContent, fraction: (now.getBoundingClientRect().left - track.left) / track.width },
};
"""


def test_the_console_shows_each_schedules_next_two_weeks_in_its_zone(deployment, on_call, console, browser):
    # Given: the clock paused (the page shows "now": nothing may move it meanwhile), in Berlin:
    # layer 1 rotates A and B weekly from a day ago, days only (08:00-20:00); layer 2 has N every
    # evening 20:00-22:00; C covers from noon in two days to noon the day after; nights 22:00-08:00
    # have nobody (gaps). And a schedule with a misspelt zone whose id sorts after it.
    deployment.aws.clock.pause()
    try:
        now = datetime.fromtimestamp(deployment.aws.clock.now(), timezone.utc)
        today = now.astimezone(BERLIN).date()
        first, second, evening, cover = "U0DAYS0A1", "U0DAYS0B2", "U0EVEN0N3", "U0COVER04"
        every_day = ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"]
        cover_from, cover_to = today + timedelta(days=2), today + timedelta(days=3)
        schedule_id = on_call.put(schedule_id=unique("a-layered"), time_zone="Europe/Berlin", layers=[
            {"members": [first, second], "start": (now.astimezone(BERLIN) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M"),
             "shift": "P1W", "restrictions": [{"days": every_day, "start": "08:00", "end": "20:00"}]},
            {"members": [evening], "start": f"{today - timedelta(days=1)}T00:00", "shift": "P1D",
             "restrictions": [{"days": every_day, "start": "20:00", "end": "22:00"}]},
        ], overrides=[{"member": cover, "start": f"{cover_from}T12:00", "end": f"{cover_to}T12:00"}])
        broken_id = on_call.put(schedule_id=unique("z-broken"), time_zone="Europe/Berlinn",
                                layers=[{"members": [first], "start": "2026-01-01T00:00", "shift": "P1D"}])
        # When: the console's on-call page is opened
        browser.get(console.url + "#/oncall")
        section = f'section[data-schedule="{schedule_id}"]'
        until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, f'{section} .row[data-row="final"] .segment')
              and browser.find_elements(By.CSS_SELECTOR, f'section[data-schedule="{broken_id}"]'), "both schedules drawn")
        timeline = browser.execute_script(_READ_TIMELINE, browser.find_element(By.CSS_SELECTOR, section))
        order = [s.get_attribute("data-schedule") for s in browser.find_elements(By.CSS_SELECTOR, "#oncall section")]
        broken = [s.get_attribute("data-schedule") for s in browser.find_elements(By.CSS_SELECTOR, "#oncall section.broken")]
    finally:
        deployment.aws.clock.resume()

    # Then: broken schedules first (every one, ours among them, though its id sorts last), with the
    # parser's error naming the field
    assert broken_id in broken and order[:len(broken)] == broken
    assert order.index(broken_id) < order.index(schedule_id)
    error = browser.find_element(By.CSS_SELECTOR, f'section[data-schedule="{broken_id}"] .error').text
    assert error == (f"schedule {broken_id!r}, time_zone: 'Europe/Berlinn' is not an IANA time zone "
                     "(such as Europe/Berlin or America/New_York)")
    # Then: the day labels, a row per layer, the overrides, then the final row
    assert timeline["rows"] == ["days", "layer 1", "layer 2", "overrides", "final"]
    # From the start of today in Berlin to two weeks from now: today and the 14 days after it
    assert timeline["days"][0] == f"{today:%a %d %b}" and len(timeline["days"]) == 15
    # The now line: as far along as now is, from Berlin's midnight to now + 14 days
    midnight = datetime(today.year, today.month, today.day, tzinfo=BERLIN)
    assert timeline["now"]["text"] == "now"
    assert abs(timeline["now"]["fraction"] - (now - midnight) / (now + timedelta(days=14) - midnight)) < 0.003
    # Layer rows: each layer alone, only its members, only in its hours
    assert {s["member"] for s in timeline["layer1"]} == {first, second}
    assert all(s["start"][15:20] >= "08:00" and s["end"][15:20] <= "20:00" for s in timeline["layer1"])
    later = today + timedelta(days=5)
    assert {"member": evening, "start": _berlin_text(later, 20), "end": _berlin_text(later, 22), "kinds": ["shift"],
            "text": evening} in timeline["layer2"]
    # The override marked in its row and in the final row, saying who covers, over the layers
    assert timeline["overrides"] == [{"member": cover, "start": _berlin_text(cover_from, 12), "end": _berlin_text(cover_to, 12),
                                      "kinds": ["override"], "text": f"{cover} covers"}]
    assert [s for s in timeline["final"] if "override" in s["kinds"]] == [
        {"member": cover, "start": _berlin_text(cover_from, 12), "end": _berlin_text(cover_to, 12),
         "kinds": ["override", "shift"], "text": f"{cover} (covers)"}]
    # The final row: the evening layer 20:00-22:00, then nobody (a gap) until 08:00
    assert {"member": evening, "start": _berlin_text(later, 20), "end": _berlin_text(later, 22), "kinds": ["shift"],
            "text": evening} in timeline["final"]
    assert {"member": "", "start": _berlin_text(later, 22), "end": _berlin_text(later + timedelta(days=1), 8), "kinds": ["gap"],
            "text": "gap: nobody"} in timeline["final"]


def test_schedules_declared_with_the_app_are_in_its_on_call_table_after_deployment(deployment):
    # Given: the example team app declares one schedule (examples/team_stack.py), deployed with the app
    from examples.team_stack import TEAM_ON_CALL

    table = deployment.output("TeamPatternsStack", "OnCallTableName")

    # When: its on-call table is read
    item = deployment.client("dynamodb").get_item(TableName=table, Key={"schedule_id": {"S": "team-weekly"}})["Item"]

    # Then: the item is the schedule as declared (issue 31: "writes the items at deploy")
    assert {key: TypeDeserializer().deserialize(value) for key, value in item.items()} == TEAM_ON_CALL


class HandoffNotices:
    """The deployed Handoff Notice: its function, the group of its one-time schedules, its hourly re-arm."""

    def __init__(self, deployment) -> None:
        self.lam = deployment.client("lambda")
        self.scheduler = deployment.client("scheduler")
        [function] = [f for f in self.lam.list_functions()["Functions"]
                      if f["FunctionName"].startswith(STACK) and "HandoffNotice" in f["FunctionName"]]
        self.function = function["FunctionName"]
        self.group = self.lam.get_function_configuration(FunctionName=self.function)["Environment"]["Variables"][
            "HANDOFF_SCHEDULE_GROUP"]
        [self.rearm] = [s["Name"] for s in self.scheduler.list_schedules(GroupName=self.group)["Schedules"]
                        if self.schedule(s["Name"])["ScheduleExpression"] == "rate(1 hour)"]

    def schedule(self, name: str) -> dict:
        found = self.scheduler.get_schedule(GroupName=self.group, Name=name)
        found.pop("ResponseMetadata")  # the request's id and time, not the schedule's
        return found

    def exists(self, name: str) -> bool:
        return name in [s["Name"] for s in self.scheduler.list_schedules(GroupName=self.group)["Schedules"]]

    def invoke(self, event: dict) -> dict:
        return json.loads(self.lam.invoke(FunctionName=self.function, Payload=json.dumps(event).encode())["Payload"].read())


def notice_schedule_name(schedule_id: str, handoff: datetime) -> str:
    # docs/on-call-schedules.md: handoff-<id, first 16 characters>-<first 10 hex of its SHA-256>-<UTC minute>
    return f"handoff-{schedule_id[:16]}-{hashlib.sha256(schedule_id.encode()).hexdigest()[:10]}-{handoff:%Y%m%dT%H%MZ}"


def _posts_to(slack, member: str, delivered: bool = True) -> list:
    return [post for post in (slack.delivered if delivered else slack.posts) if f"<@{member}>" in str(post.body)]


def test_a_schedule_put_by_hand_gets_its_notice_through_the_hourly_re_arm_with_no_invoke(deployment, slack, on_call):
    # Given: a schedule put by hand (docs: `aws dynamodb put-item`) in Kolkata (UTC+05:30, no daylight
    # saving) whose only layer starts 90 minutes from now: A is handed the shift then (issue 31:
    # "before its start, a layer has no one"); nobody invokes Handoff Notice
    aws = deployment.aws
    notices = HandoffNotices(deployment)
    handoff = datetime.fromtimestamp(aws.clock.now() // 60 * 60 + 90 * 60, timezone.utc)
    member = "U0HANDHAND"
    schedule_id = on_call.put(schedule_id=unique("by-hand"), time_zone="Asia/Kolkata", layers=[
        {"members": [member], "start": f"{handoff.astimezone(ZoneInfo('Asia/Kolkata')):%Y-%m-%dT%H:%M}", "shift": "P1D"}])
    name = notice_schedule_name(schedule_id, handoff)
    aws.scheduler.fire_on_clock({notices.rearm, "handoff-*"})
    try:
        # When: the clock reaches the re-arm's next firing, within the hour (rate(1 hour))
        [rearm] = [e for e in aws.scheduler.armed() if e["name"] == notices.rearm]
        assert aws.clock.now() - 60 <= rearm["next"] <= aws.clock.now() + 3600
        aws.clock.advance(max(0.0, rearm["next"] - aws.clock.now()))
        wait_for(lambda: notices.exists(name), "the handoff's one-time schedule, armed by the re-arm")
        # Then: the handoff has its own one-time schedule, in UTC, deleted after it fires (EventBridge Scheduler
        # User Guide, "Schedule types": at(yyyy-mm-ddThh:mm:ss) in ScheduleExpressionTimezone)
        armed = notices.schedule(name)
        assert (armed["ScheduleExpression"], armed["ScheduleExpressionTimezone"]) == (f"at({handoff:%Y-%m-%dT%H:%M:%S})", "UTC")
        assert armed["ActionAfterCompletion"] == "DELETE"
        assert json.loads(armed["Target"]["Input"]) == {"schedule_id": schedule_id, "handoff_at": handoff.isoformat()}

        # When: simulated time reaches the handoff
        aws.clock.advance(max(0.0, handoff.timestamp() - aws.clock.now()))
        wait_for(lambda: _posts_to(slack, member), "the handoff notice in Slack")

        # Then: one notice, posted within the handoff's minute (Scheduler's precision), and its schedule is gone
        [notice] = _posts_to(slack, member)
        assert notice.body["text"].startswith(f"<@{member}> your on-call shift for *{schedule_id}* starts now, ")
        assert handoff.timestamp() <= float(notice.ts) < handoff.timestamp() + 60
        wait_for(lambda: not notices.exists(name), "the fired schedule's deletion")
    finally:
        aws.scheduler.fire_on_clock(set())


def test_a_notice_slack_refused_is_posted_once_by_the_retry_and_the_other_of_that_instant_once(deployment, slack, on_call):
    # Given: two schedules handing off at the same instant, ten minutes from now, to P and Q; the
    # notices armed (as a deploy or a cover asks), and Slack refusing the next post
    aws = deployment.aws
    notices = HandoffNotices(deployment)
    handoff = datetime.fromtimestamp(aws.clock.now() // 60 * 60 + 600, timezone.utc)
    p, q = "U0HANDRETP", "U0HANDRETQ"
    ids = [on_call.put(schedule_id=unique("retry"), time_zone="UTC", layers=[
        {"members": [member], "start": f"{handoff:%Y-%m-%dT%H:%M}", "shift": "P1D"}]) for member in (p, q)]
    notices.invoke({})
    names = [notice_schedule_name(schedule_id, handoff) for schedule_id in ids]
    assert all(notices.exists(name) for name in names)
    slack.fail_next(1, status=500)
    aws.scheduler.fire_on_clock(set(names))
    try:
        # When: the handoff comes; the refused notice's invocation fails and Lambda retries it
        aws.clock.advance(max(0.0, handoff.timestamp() - aws.clock.now()))
        wait_for(lambda: _posts_to(slack, p) and _posts_to(slack, q), "both notices delivered")
        # Then: three posts reached Slack (one refused with 500), and each person was told once
        assert len(_posts_to(slack, p, delivered=False)) + len(_posts_to(slack, q, delivered=False)) == 3
        assert len(_posts_to(slack, p)) == len(_posts_to(slack, q)) == 1

        # When: a notice's event comes again (a duplicate delivery, a retry after the post)
        again = notices.invoke({"schedule_id": ids[0], "handoff_at": handoff.isoformat()})
        # Then: its record says it was posted: nothing is posted
        assert again == {"posted": False, "reason": "posted already"}
        assert len(_posts_to(slack, p, delivered=False)) + len(_posts_to(slack, q, delivered=False)) == 3
    finally:
        aws.scheduler.fire_on_clock(set())


def test_a_re_arm_in_the_minute_a_notice_is_due_leaves_it_where_it_is(deployment, slack, on_call):
    # Given: a schedule handing off to R ten minutes from now, its notice armed
    aws = deployment.aws
    notices = HandoffNotices(deployment)
    handoff = datetime.fromtimestamp(aws.clock.now() // 60 * 60 + 600, timezone.utc)
    member = "U0HANDDUE1"
    schedule_id = on_call.put(schedule_id=unique("due"), time_zone="Europe/Berlin", layers=[
        {"members": [member], "start": f"{handoff.astimezone(ZoneInfo('Europe/Berlin')):%Y-%m-%dT%H:%M}", "shift": "P1D"}])
    name = notice_schedule_name(schedule_id, handoff)
    assert name in notices.invoke({})["created"]
    armed = notices.schedule(name)
    # When: a re-arm runs a second before the handoff, and another 20 s into its minute, before the notice fired
    aws.clock.advance(max(0.0, handoff.timestamp() - 1 - aws.clock.now()))
    before = notices.invoke({})
    aws.clock.advance(21)
    during = notices.invoke({})
    # Then: neither created or moved it: the one armed stays as it was (a ConflictException counts as armed)
    assert name not in before["created"] and name not in during["created"]
    assert notices.schedule(name) == armed
    # When: it fires (let fire now, in its minute)
    aws.scheduler.fire_on_clock({name})
    try:
        wait_for(lambda: _posts_to(slack, member), "the handoff notice in Slack")
        # Then: posted once, within the handoff's minute
        [notice] = _posts_to(slack, member)
        assert handoff.timestamp() <= float(notice.ts) < handoff.timestamp() + 60
    finally:
        aws.scheduler.fire_on_clock(set())


def test_a_notice_slack_refuses_on_every_attempt_lands_on_the_failure_queue_the_status_topic_watches(
    deployment, slack, on_call
):
    # Given: a schedule handing off to F ten minutes from now, its notice armed, and Slack refusing
    # the invocation and both of Lambda's asynchronous retries (Lambda Developer Guide, "Asynchronous
    # invocation": two retries, then the on-failure destination)
    aws = deployment.aws
    notices = HandoffNotices(deployment)
    handoff = datetime.fromtimestamp(aws.clock.now() // 60 * 60 + 600, timezone.utc)
    member = "U0HANDFAIL"
    schedule_id = on_call.put(schedule_id=unique("failing"), time_zone="UTC", layers=[
        {"members": [member], "start": f"{handoff:%Y-%m-%dT%H:%M}", "shift": "P1D"}])
    name = notice_schedule_name(schedule_id, handoff)
    assert name in notices.invoke({})["created"]
    queue_name = notices.lam.get_function_configuration(FunctionName=notices.function)["Environment"]["Variables"][
        "HANDOFF_FAILURE_QUEUE_ARN"].rsplit(":", 1)[-1]
    sqs = deployment.client("sqs")
    queue_url = sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]
    slack.fail_next(3, status=500)
    aws.scheduler.fire_on_clock({name})
    try:
        # When: the handoff comes
        aws.clock.advance(max(0.0, handoff.timestamp() - aws.clock.now()))
        records: list[dict] = []

        def recorded() -> bool:
            for message in sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
                record = json.loads(message["Body"])
                if record["requestPayload"].get("schedule_id") == schedule_id:
                    records.append(record)
                    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
            return bool(records)

        wait_for(recorded, "the failure record")
        # Then: three attempts, none delivered, then one record naming the schedule and the instant
        [record] = records
        assert record["requestContext"]["condition"] == "RetriesExhausted"
        assert record["requestContext"]["approximateInvokeCount"] == 3
        assert record["requestPayload"] == {"schedule_id": schedule_id, "handoff_at": handoff.isoformat()}
        assert record["responsePayload"]["errorType"] == "HandoffNoticeUndelivered"
        assert len(_posts_to(slack, member, delivered=False)) == 3 and _posts_to(slack, member) == []
        # And: that queue's alarm notifies the status topic
        [alarm] = deployment.client("cloudwatch").describe_alarms(AlarmNames=["MonitoringStack-HandoffNoticeFailed"])[
            "MetricAlarms"]
        assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": queue_name}]
        assert alarm["AlarmActions"] == [deployment.output("MonitoringStack", "StatusTopicArn")]
    finally:
        aws.scheduler.fire_on_clock(set())

"""Replies to the alert texts end to end: a phone texts the emulator's number, End User Messaging publishes the
text to the number's two-way channel (the stack's replies topic, pointed at by the session as a deployer
points it), SNS invokes the deployed replies function, which acts and texts back.

Texts are sent with the console's ``POST /api/phone/reply`` and read back with ``GET /api/phone``, the
interface issue 39 fixes. The account is in the SMS sandbox, as a new account is: a text reaches only a
verified destination number ("SMS/MMS and Voice sandbox",
https://docs.aws.amazon.com/sms-voice/latest/userguide/sandbox.html), so each phone that must receive an
answer is verified first through the sandbox API, as a deployer would. The people item and its
``reply_codes`` are written here in issue 39's shape (code -> {"alert_id", "occurrence"}), as the Contact
function leaves them; the alert items as the machine leaves them. Expected texts come from the issue's
rules; the channel's follow-up is ``Alert <id> was <status> by <@member> at <time>.`` as for a click.
"""

from __future__ import annotations

import pytest
from boto3.dynamodb.types import TypeSerializer

from emulator.sms import PHONE_NUMBER, verify_destination
from tests.emulator_helpers import wait_for
from tests.test_alert_actions_execution import STACK, Alerts, followups
from tests.test_emulator_sms import _get, _post

# 555-01xx numbers are reserved for fiction; these are used by no other test.
ANA_NUMBER, STRANGER_NUMBER, CARL_NUMBER = "+14255550131", "+14255550132", "+14255550133"
ANA, BEN, CARL = "U0REPLYANA", "U0REPLYBEN", "U0REPLYCARL"
RAISED_AT = "2026-11-28T03:00:00Z"


def person(member: str, name: str, number: str, reply_codes: dict | None = None) -> dict:
    return {
        "member": member, "name": name,
        "contact_methods": [{"id": "mobile", "type": "sms", "address": number, "verified": True}],
        "rules": [{"after_minutes": 0, "contact": "slack"}, {"after_minutes": 1, "contact": "mobile"}],
        "reply_codes": reply_codes or {},
    }


class People:
    """People items this module writes, deleted afterwards."""

    def __init__(self, deployment) -> None:
        self.table = deployment.output(STACK, "PeopleTableName")
        self.client = deployment.client("dynamodb")
        self.written: set[str] = set()

    def put(self, item: dict) -> None:
        serialize = TypeSerializer().serialize
        self.client.put_item(TableName=self.table, Item={k: serialize(v) for k, v in item.items()})
        self.written.add(item["member"])

    def delete_all(self) -> None:
        for member in self.written:
            self.client.delete_item(TableName=self.table, Key={"member": {"S": member}})


@pytest.fixture(scope="module")
def people(deployment):
    table = People(deployment)
    # Ben resolves alerts; Carl's number will opt out. Their items are the team's, present all along.
    table.put(person(BEN, "Ben", "+14255550134"))
    table.put(person(CARL, "Carl", CARL_NUMBER))
    yield table
    table.delete_all()


@pytest.fixture(scope="module")
def phones(deployment):
    """Ana's phone and a stranger's, verified in the sandbox so the function's answers reach them."""
    verify_destination(deployment.aws, ANA_NUMBER)
    verify_destination(deployment.aws, STRANGER_NUMBER)


@pytest.fixture
def alerts(deployment):
    table = Alerts(deployment)
    yield table
    table.delete_all()


@pytest.fixture
def slack(deployment):
    deployment.slack.reset()
    yield deployment.slack


def texts_to(console, number: str) -> list[str]:
    return [e["body"] for e in _get(console, "api/phone") if e["to"] == number and e["from"] == PHONE_NUMBER and e["kind"] == "sms"]


def text_app(console, sender: str, body: str) -> None:
    """The phone ``sender`` texts the account's number; End User Messaging publishes it to the replies topic."""
    status, sent = _post(console, "api/phone/reply", {"from": sender, "body": body})
    assert status == 201 and sent["published"] and sent["refused"] is None, sent


def answered(console, number: str, before: int) -> str:
    """The one answer texted to ``number`` since it had ``before`` texts."""
    wait_for(lambda: len(texts_to(console, number)) > before, f"the answer to {number}", timeout=60)
    [answer] = texts_to(console, number)[before:]
    return answer


def test_the_number_two_way_channel_is_the_stacks_replies_topic(deployment):
    # As docs/reaching-people.md tells a deployer: update-phone-number --two-way-enabled --two-way-channel-arn
    [number] = deployment.client("pinpoint-sms-voice-v2").describe_phone_numbers()["PhoneNumbers"]
    assert (number["TwoWayEnabled"], number["TwoWayChannelArn"]) == (True, deployment.output(STACK, "SmsRepliesTopicArn"))


def test_a_reply_from_the_persons_verified_number_acknowledges_tells_the_channel_and_texts_them(
        deployment, console, people, phones, alerts, slack):
    # Given: an active alert and Ana, whose text about it said code 4
    alert_id = alerts.put(raised_at=RAISED_AT)
    people.put(person(ANA, "Ana", ANA_NUMBER, {"4": {"alert_id": alert_id, "occurrence": RAISED_AT}}))
    before = len(texts_to(console, ANA_NUMBER))
    # When: Ana texts back "4a"
    text_app(console, ANA_NUMBER, "4a")
    # Then: she is texted that it worked, the alert is acknowledged by her, the channel is told as for a click
    answer = answered(console, ANA_NUMBER, before)
    item = alerts.get(alert_id)
    assert (item["status"], item["acknowledged_by"]) == ("acknowledged", ANA)
    assert answer == f"Done: you acknowledged alert {alert_id} at {item['acknowledged_at']}. The channel is told."
    expected = [f"Alert {alert_id} was acknowledged by <@{ANA}> at {item['acknowledged_at']}."]
    wait_for(lambda: followups(slack, alert_id) == expected, "the follow-up", timeout=60)


def test_a_stranger_is_refused_and_texted_why(deployment, console, people, phones, alerts, slack):
    # Given: Ana holds code 5 for an active alert; the stranger's number is nobody's
    alert_id = alerts.put(raised_at=RAISED_AT)
    people.put(person(ANA, "Ana", ANA_NUMBER, {"5": {"alert_id": alert_id, "occurrence": RAISED_AT}}))
    before = len(texts_to(console, STRANGER_NUMBER))
    # When: the stranger texts Ana's code
    text_app(console, STRANGER_NUMBER, "5a")
    # Then: refused, texted why; the alert is as it was and the channel is told nothing
    assert answered(console, STRANGER_NUMBER, before) == (
        "Not done: this number is not the verified number of anyone the alerts page. Nothing was changed.")
    assert alerts.get(alert_id)["status"] == "active" and followups(slack, alert_id) == []


def test_a_stale_code_whose_alert_was_raised_again_is_refused(deployment, console, people, phones, alerts, slack):
    # Given: Ana's code 6 is about the 03:00 occurrence; the alarm raised the alert again at 05:00
    alert_id = alerts.put(raised_at="2026-11-28T05:00:00Z")
    people.put(person(ANA, "Ana", ANA_NUMBER, {"6": {"alert_id": alert_id, "occurrence": RAISED_AT}}))
    before = len(texts_to(console, ANA_NUMBER))
    # When: she answers the old text
    text_app(console, ANA_NUMBER, "6a")
    # Then: the new occurrence is not acknowledged by an answer to the old one
    assert answered(console, ANA_NUMBER, before) == (
        f"Not done: alert {alert_id} was raised again at 2026-11-28T05:00:00Z, after the text you answered. "
        "Answer the newest text about it.")
    assert alerts.get(alert_id)["status"] == "active" and followups(slack, alert_id) == []


def test_a_reply_after_the_alert_was_resolved_is_texted_who_resolved_it(deployment, console, people, phones, alerts, slack):
    # Given: Ben resolved the alert Ana's code 7 is about
    alert_id = alerts.put(raised_at=RAISED_AT, status="resolved", resolved_by=BEN, resolved_at="2026-11-28T03:02:00Z")
    people.put(person(ANA, "Ana", ANA_NUMBER, {"7": {"alert_id": alert_id, "occurrence": RAISED_AT}}))
    before = len(texts_to(console, ANA_NUMBER))
    # When: Ana texts "7 R"
    text_app(console, ANA_NUMBER, "7 R")
    # Then: texted that Ben resolved it, and when; nothing changes
    assert answered(console, ANA_NUMBER, before) == f"Not done: alert {alert_id} was already resolved by Ben at 2026-11-28T03:02:00Z."
    assert alerts.get(alert_id)["resolved_by"] == BEN and followups(slack, alert_id) == []


def test_stop_opts_the_number_out_and_the_channel_is_told(deployment, console, people, slack):
    sms = deployment.client("pinpoint-sms-voice-v2")
    before = len(texts_to(console, CARL_NUMBER))
    # When: Carl texts STOP
    text_app(console, CARL_NUMBER, "STOP")
    # Then: End User Messaging opted his number out (he asked it to), on the number's opt-out list
    [opted] = sms.describe_opted_out_numbers(OptOutListName="Default", OptedOutNumbers=[CARL_NUMBER])["OptedOutNumbers"]
    assert (opted["OptedOutNumber"], opted["EndUserOptedOut"]) == (CARL_NUMBER, True)
    # And: the channel is told whose number it is and that his next rule still runs; he is texted nothing by the app
    notice = (f"<@{CARL}>'s number {CARL_NUMBER} opted out of texts from the alert number (STOP): "
              "End User Messaging sends it no more texts. Their next notification rule still runs.")
    wait_for(lambda: notice in [p.body.get("text") for p in slack.delivered if isinstance(p.body, dict)], "the notice", timeout=60)
    assert len(texts_to(console, CARL_NUMBER)) == before

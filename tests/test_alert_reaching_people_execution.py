"""Reaching people end to end: a person's rules (text, call, e-mail) on the simulated clock, in the local emulator.

The deployment names the emulator's phone number (smsOriginationIdentity) and an SES identity
(alertEmailFrom); the SMS/voice and SES sandboxes stay on, as in a new account, so each test verifies
its destinations through the sandbox API first, as a deployer would. Expected times come from the
rules (issue 39: a rule fires at its minute after the round notified the person; EventBridge
Scheduler's one-time schedules fire within their minute) and expected texts from the issue's ending
``reply <code>a to acknowledge, <code>r to resolve``, never from the code's output.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from emulator.server import ACCOUNT_ID, REGION
from emulator.ses.patches import mail_log
from emulator.sms import PHONE_NUMBER, verify_destination
from tests.emulator_helpers import unique, wait_for
from tests.test_alert_actions_execution import confirm, http
from tests.test_alert_notification_execution import MACHINE, STACK, AlertTable, pass_the_slots_taken

MESSAGE = "Disk above 90% on db-1"


def _member() -> str:
    return f"U{uuid.uuid4().hex[:8].upper()}"


def _number() -> str:
    # A German mobile number no other test uses (E.164: +49 151 and eight digits).
    return f"+49151{secrets.randbelow(10**8):08d}"


class People:
    """Writes people items in the plain form (issue 39) as an administrator would, deleted after the test."""

    def __init__(self, deployment) -> None:
        self.name = deployment.output(STACK, "PeopleTableName")
        self.client = deployment.client("dynamodb")
        self.written: list[str] = []

    def put(self, member: str, methods: list[dict], rules: list[dict]) -> str:
        item = {"member": member, "name": "Ana", "contact_methods": methods, "rules": rules}
        serialize = TypeSerializer().serialize
        self.client.put_item(TableName=self.name, Item={key: serialize(value) for key, value in item.items()})
        self.written.append(member)
        return member

    def get(self, member: str) -> dict[str, Any]:
        item = self.client.get_item(TableName=self.name, Key={"member": {"S": member}}, ConsistentRead=True)["Item"]
        return {key: TypeDeserializer().deserialize(value) for key, value in item.items()}

    def delete_all(self) -> None:
        for member in self.written:
            self.client.delete_item(TableName=self.name, Key={"member": {"S": member}})


@pytest.fixture
def people(deployment) -> Iterator[People]:
    table = People(deployment)
    yield table
    table.delete_all()


@pytest.fixture
def alerts(deployment) -> Iterator[AlertTable]:
    table = AlertTable(deployment)
    yield table
    table.delete_all()


@pytest.fixture
def slack(deployment):
    deployment.slack.reset()
    pass_the_slots_taken(deployment)
    yield deployment.slack
    deployment.slack.reset()


@pytest.fixture
def rules_fire(deployment) -> Iterator[None]:
    """The contact schedules fire on the simulated clock (the emulator fires only the schedules a test names)."""
    deployment.aws.scheduler.fire_on_clock({"contact-*"})
    yield
    deployment.aws.scheduler.fire_on_clock(set())


@pytest.fixture(scope="module")
def phone(deployment) -> str:
    """One number verified for this file's pages: the sandbox holds at most 10 for the whole account."""
    number = _number()
    verify_destination(deployment.aws, number)
    return number


def verified_mail(deployment) -> str:
    """An address the SES sandbox delivers to: verified as an identity first (SES Developer Guide,
    "Verified identities")."""
    address = f"{uuid.uuid4().hex[:10]}@example.com"
    deployment.client("sesv2").create_email_identity(EmailIdentity=address)
    return address


def sent(deployment, number: str, kind: str) -> list[dict]:
    """Texts or calls from the app's number to ``number`` (not the sandbox's verification code)."""
    return [e for e in deployment.aws.sms.phone_log if e["to"] == number and e["kind"] == kind and e["from"] == PHONE_NUMBER
            and not e["body"].startswith("Your verification code is")]


def mails(address: str) -> list[dict]:
    return [m for m in mail_log(REGION, ACCOUNT_ID) if m["to"] == address]


def page(deployment, alerts, member: str):
    """An alert notifying ``member`` in one round; the run, and when the channel post was made."""
    alert_id = alerts.put(alert_id=unique("reach"), notification_count=1, user_accounts=[member],
                          interval_seconds=300, message=MESSAGE)
    result = deployment.run(MACHINE, {"alert_id": alert_id})
    assert result.status == "SUCCEEDED", result.cause
    [post] = [p for p in deployment.slack.delivered if isinstance(p.body, dict)
              and f"<@{member}>: alert {alert_id} is active" in p.body.get("text", "")]
    return alert_id, result, post


def advance_to(deployment, instant: float) -> None:
    deployment.aws.clock.advance(max(0.0, instant - deployment.aws.clock.now()))


def told(slack, text: str) -> bool:
    return any(isinstance(p.body, dict) and p.body.get("text") == text for p in slack.delivered)


EXAMPLE_RULES = [{"after_minutes": 0, "contact": "slack"}, {"after_minutes": 1, "contact": "mobile"},
                 {"after_minutes": 3, "contact": "mobile-call"}, {"after_minutes": 5, "contact": "work-mail"}]


def example_methods(number: str, mail: str) -> list[dict]:
    return [{"id": "mobile", "type": "sms", "address": number, "verified": True},
            {"id": "mobile-call", "type": "voice", "address": number, "verified": True},
            {"id": "work-mail", "type": "email", "address": mail, "verified": True}]


def test_the_issues_example_rules_post_at_once_text_at_1_call_at_3_and_mail_at_5(deployment, slack, alerts, people, phone, rules_fire):
    # Given: the issue's example person: slack at 0, text at 1, call at 3, e-mail at 5
    mail = verified_mail(deployment)
    member = people.put(_member(), example_methods(phone, mail), EXAMPLE_RULES)
    texts_before, calls_before = len(sent(deployment, phone, "sms")), len(sent(deployment, phone, "voice"))
    # When: a round notifies them
    alert_id, _, post = page(deployment, alerts, member)
    posted = float(post.ts)
    # Then: the channel post at once, nothing else until minute 1
    advance_to(deployment, posted + 59)
    assert len(sent(deployment, phone, "sms")) == texts_before and mails(mail) == []
    # ...a text within minute 1 (Scheduler fires within its minute), its code the person's first: 1
    advance_to(deployment, posted + 120)
    wait_for(lambda: len(sent(deployment, phone, "sms")) == texts_before + 1, "the text")
    text = sent(deployment, phone, "sms")[-1]
    assert text["body"] == f"{MESSAGE}\nreply 1a to acknowledge, 1r to resolve"
    assert posted + 60 <= text["at"] < posted + 120
    # ...and the code is kept on the person's item for the replies function: code -> alert and occurrence
    assert people.get(member)["reply_codes"] == {"1": {"alert_id": alert_id, "occurrence": ""}}
    # ...a call within minute 3, reading the alert and the same code
    advance_to(deployment, posted + 179)
    assert len(sent(deployment, phone, "voice")) == calls_before
    advance_to(deployment, posted + 240)
    wait_for(lambda: len(sent(deployment, phone, "voice")) == calls_before + 1, "the call")
    call = sent(deployment, phone, "voice")[-1]
    assert MESSAGE in call["body"] and "text back 1 a" in call["body"]
    assert posted + 180 <= call["at"] < posted + 240
    # ...an e-mail within minute 5, from the deployment's sender, with the signed links to the endpoint
    advance_to(deployment, posted + 299)
    assert mails(mail) == []
    advance_to(deployment, posted + 360)
    wait_for(lambda: len(mails(mail)) == 1, "the e-mail")
    [sent_mail] = mails(mail)
    actions_url = deployment.output(STACK, "AlertActionsUrl")
    assert sent_mail["from"] == "alerts@example.com" and alert_id in sent_mail["subject"]
    assert f"Acknowledge: {actions_url}?t=" in sent_mail["text"] and f"Resolve: {actions_url}?t=" in sent_mail["text"]
    # And: still one code for the alert (the call took the text's)
    assert people.get(member)["reply_codes"] == {"1": {"alert_id": alert_id, "occurrence": ""}}


def test_acknowledged_at_minute_2_by_the_posts_link_no_call_and_no_mail(deployment, slack, alerts, people, phone, rules_fire):
    # Given: the example person, paged, texted at minute 1
    mail = verified_mail(deployment)
    member = people.put(_member(), example_methods(phone, mail), EXAMPLE_RULES)
    calls_before, texts_before = len(sent(deployment, phone, "voice")), len(sent(deployment, phone, "sms"))
    alert_id, _, post = page(deployment, alerts, member)
    posted = float(post.ts)
    advance_to(deployment, posted + 120)
    wait_for(lambda: len(sent(deployment, phone, "sms")) == texts_before + 1, "the text at minute 1")
    # When: at minute 2 they press the post's Acknowledge button (its signed link; the page's form)
    url = post.body["blocks"][1]["elements"][0]["url"]
    status, _ = http(url, data=confirm(url))
    assert status == 200
    # Then: the rules at minutes 3 and 5 find the alert acknowledged just before sending: no call, no mail
    advance_to(deployment, posted + 420)
    assert len(sent(deployment, phone, "voice")) == calls_before
    assert mails(mail) == []


def test_a_person_without_an_item_gets_todays_post_and_nothing_else(deployment, slack, alerts, rules_fire):
    # Given: a member with no people item
    member = _member()
    phone_entries, schedules = len(deployment.aws.sms.phone_log), set(_contact_schedules(deployment))
    # When
    alert_id, _, _ = page(deployment, alerts, member)
    advance_to(deployment, deployment.aws.clock.now() + 6 * 60)
    # Then: exactly one post about the alert; nothing texted or called, no contact schedule armed
    assert len([p for p in slack.delivered if alert_id in str(p.body)]) == 1
    assert len(deployment.aws.sms.phone_log) == phone_entries
    assert set(_contact_schedules(deployment)) - schedules == set()


def _contact_schedules(deployment) -> list[str]:
    group = deployment.stack_resource(STACK, "AWS::Scheduler::ScheduleGroup", "ContactSchedules")
    return [s["Name"] for s in deployment.client("scheduler").list_schedules(GroupName=group)["Schedules"]]


def test_a_round_costs_the_machine_the_same_state_transitions_with_rules_as_without(
        deployment, slack, alerts, people, phone, rules_fire):
    # Given: one person with the example rules and one without an item
    with_rules = people.put(_member(), example_methods(phone, verified_mail(deployment)), EXAMPLE_RULES)
    # When: a one-round alert notifies each
    _, ruled, _ = page(deployment, alerts, with_rules)
    pass_the_slots_taken(deployment)
    _, plain, _ = page(deployment, alerts, _member())
    # Then: the same states entered, the same transitions (issue 39: a person without rules adds
    # nothing; a contact scheduled outside the machine adds none)
    print(f"\nstate transitions for one round of one person: with 3 contact rules {ruled.transitions} "
          f"({ruled.states_entered} states entered), without {plain.transitions} ({plain.states_entered})")
    assert ruled.states_entered == plain.states_entered
    assert ruled.transitions == plain.transitions
    # (the alerts deleted, the armed rules fire, find no alert, send nothing, and their schedules are gone)
    alerts.delete_all()
    calls = len(sent(deployment, phone, "voice"))
    advance_to(deployment, deployment.aws.clock.now() + 6 * 60)
    assert len(sent(deployment, phone, "voice")) == calls


# -- refusals: told to the channel, naming the person and why; the next rule still runs ------------------------------

NOT_VERIFIED = "AWS refused it: the number is not a verified destination, and the account is in the SMS and voice sandbox"
OPTED_OUT = "AWS refused it: the number has opted out (it replied STOP)"
SPEND_LIMIT = "AWS refused it: the account's monthly spend limit for texts is reached"


@pytest.fixture
def spend_restored(deployment) -> Iterator[None]:
    """The texts a test sends to reach the month's $1 spend limit are taken off the phone log after it: the
    deployment is shared for the session, and AWS offers no call that lowers a month's spend."""
    log = deployment.aws.sms.phone_log
    before = {e["message_id"] for e in log}
    yield
    log[:] = [e for e in log if e["message_id"] in before]


def _refused_then_next_rule_runs(deployment, slack, alerts, people, number: str, reason: str) -> None:
    # Given: a person whose text at minute 1 AWS refuses, with an e-mail rule at minute 2
    mail = verified_mail(deployment)
    member = people.put(
        _member(),
        [{"id": "mobile", "type": "sms", "address": number, "verified": True},
         {"id": "work-mail", "type": "email", "address": mail, "verified": True}],
        [{"after_minutes": 1, "contact": "mobile"}, {"after_minutes": 2, "contact": "work-mail"}],
    )
    texts_before = len(sent(deployment, number, "sms"))
    # When: a round notifies them and minute 1 comes
    alert_id, _, post = page(deployment, alerts, member)
    posted = float(post.ts)
    advance_to(deployment, posted + 120)
    # Then: nothing texted; the channel is told who, how, why, and that the next rule still runs
    expected = (f"<@{member}>'s text (mobile) about alert {alert_id} was not sent: {reason}. "
                "Their next rule still runs: an e-mail (work-mail) at minute 2.")
    wait_for(lambda: told(slack, expected), "the refusal in the channel")
    assert len(sent(deployment, number, "sms")) == texts_before
    # And: the e-mail at minute 2 is sent
    advance_to(deployment, posted + 180)
    wait_for(lambda: len(mails(mail)) == 1, "the next rule's e-mail")


def test_a_destination_not_verified_in_the_sandbox_is_told_and_the_next_rule_runs(deployment, slack, alerts, people, rules_fire):
    # (End User Messaging SMS User Guide, "SMS/MMS and Voice sandbox": only verified destinations
    # receive messages; API Reference, SendTextMessage: ConflictException DESTINATION_PHONE_NUMBER_NOT_VERIFIED)
    _refused_then_next_rule_runs(deployment, slack, alerts, people, _number(), NOT_VERIFIED)


def test_an_opted_out_number_is_told_and_the_next_rule_runs(deployment, slack, alerts, people, rules_fire):
    # Given: a verified number on the account's opt-out list (PutOptedOutNumber; User Guide, "Opt-out
    # lists"; SendTextMessage: ConflictException DESTINATION_PHONE_NUMBER_OPTED_OUT)
    number = _number()
    verify_destination(deployment.aws, number)
    deployment.client("pinpoint-sms-voice-v2").put_opted_out_number(OptOutListName="Default", OptedOutNumber=number)
    _refused_then_next_rule_runs(deployment, slack, alerts, people, number, OPTED_OUT)


def test_the_monthly_spend_limit_reached_is_told_and_the_next_rule_runs(deployment, slack, alerts, people, phone, rules_fire,
                                                                       spend_restored):
    # Given: the month's texts have spent the sandbox's $1.00 ("Set an SMS, MMS or voice spending limit";
    # SendTextMessage: ServiceQuotaExceededException MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT)
    sms = deployment.client("pinpoint-sms-voice-v2")
    for _ in range(1000):
        try:
            sms.send_text_message(DestinationPhoneNumber=phone, OriginationIdentity=PHONE_NUMBER, MessageBody="load")
        except ClientError as error:
            assert error.response.get("Reason") == "MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT"
            break
    else:
        pytest.fail("the spend limit was never reached")
    _refused_then_next_rule_runs(deployment, slack, alerts, people, phone, SPEND_LIMIT)

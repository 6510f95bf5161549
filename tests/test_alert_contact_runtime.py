"""Contact and the rules a post arms: the plain logic with no mocks, the handlers on moto where moto can.

moto has DynamoDB (the conditional writes of the reply codes), SES v2 and EventBridge Scheduler; it has
no End User Messaging SMS (``pinpoint-sms-voice-v2``), so a text or a call is checked on the request
the handler makes (botocore's Stubber validates it against the service model) and on the refusals AWS
documents; the emulator's own End User Messaging plays them end to end
(tests/test_alert_reaching_people_execution.py). Expected texts come from issue 39 and AWS's pages.
"""

from __future__ import annotations

import json
import math
import re
import time
from decimal import Decimal

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from botocore.stub import ANY, Stubber
from moto import mock_aws
from moto.ses.models import ses_backends

from patterns_common.alert_action_links import verify
from patterns_common.people import parse_person
from tests.lambda_loader import load_lambda_module
from tests.test_alert_notification_runtime import ACTIONS_URL, LINK_KEY, FakeLambdaContext

logic = load_lambda_module("alert_contact", "alert_contact_logic")
arming = load_lambda_module("alert_notifier", "contact_arming")

MEMBER = "U0AAAAAA1"
ANA_PHONE = "+4915112345678"
ORIGIN = "+12065550100"
SENDER = "alerts@example.com"
EXECUTION = "arn:aws:states:us-east-1:123456789012:execution:AlertMachine:run-1"
ANA = {
    "member": MEMBER, "name": "Ana",
    "contact_methods": [
        {"id": "mobile", "type": "sms", "address": ANA_PHONE, "verified": True},
        {"id": "mobile-call", "type": "voice", "address": ANA_PHONE, "verified": True},
        {"id": "work-mail", "type": "email", "address": "ana@example.com", "verified": True},
        {"id": "new-phone", "type": "sms", "address": "+4915100000000", "verified": False},
    ],
    "rules": [{"after_minutes": 0, "contact": "slack"}, {"after_minutes": 1, "contact": "mobile"},
              {"after_minutes": 3, "contact": "mobile-call"}, {"after_minutes": 5, "contact": "work-mail"},
              {"after_minutes": 2, "contact": "new-phone"}],
}


# -- whether to send, on which method -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("alert", "occurrence", "expected"),
    [
        (None, "", "the alert was deleted"),
        ({"alert_id": "a", "status": "acknowledged"}, "", "the alert is acknowledged"),
        ({"alert_id": "a", "status": "resolved"}, "", "the alert is resolved"),
        # raised again since the round: the item's raised_at is not the occurrence the page was about
        ({"alert_id": "a", "status": "active", "raised_at": "2026-11-28T10:05:00Z"}, "2026-11-28T09:00:00Z",
         "the alert was raised again since"),
        ({"alert_id": "a", "status": "active", "raised_at": "2026-11-28T10:05:00Z"}, "", "the alert was raised again since"),
        ({"alert_id": "a", "status": "active", "raised_at": "2026-11-28T10:05:00Z"}, "2026-11-28T10:05:00Z", None),
        ({"alert_id": "a"}, "", None),  # no status is active; never raised by an alarm: occurrence ""
    ],
)
def test_a_page_is_sent_only_while_the_alert_is_active_in_the_occurrence_it_was_about(alert, occurrence, expected):
    assert logic.why_not_page(alert, occurrence) == expected


def test_a_rule_uses_only_a_verified_method_the_person_still_has():
    person = parse_person(ANA)
    assert logic.usable_method(None, "mobile") == (None, "the person is no longer in the people table")
    assert logic.usable_method(person, "old-phone") == (None, "the person has no contact method 'old-phone' any more")
    assert logic.usable_method(person, "new-phone") == (None, "contact method 'new-phone' is not verified")
    method, why = logic.usable_method(person, "mobile")
    assert (method.address, why) == (ANA_PHONE, None)


def test_the_next_rule_is_the_first_later_verified_one():
    person = parse_person(ANA)  # the unverified minute-2 rule is never armed, so it is never "next"
    assert [(m, method.id) for m, method in [logic.next_page(person, 1)]] == [(3, "mobile-call")]
    assert logic.next_page(person, 3)[1].id == "work-mail"
    assert logic.next_page(person, 5) is None


def test_a_code_is_free_again_once_its_alert_is_resolved_deleted_or_raised_again_not_when_acknowledged():
    # (issue 39's design: a code is unique among the person's open alerts; an acknowledged alert is
    # open, and its holder may still resolve it with "<code>r")
    codes = {"1": {"alert_id": "acked", "occurrence": ""}, "2": {"alert_id": "done", "occurrence": ""},
             "3": {"alert_id": "gone", "occurrence": ""}, "4": {"alert_id": "again", "occurrence": "2026-11-01T00:00:00Z"},
             "5": {"alert_id": "open", "occurrence": "2026-11-02T00:00:00Z"}}
    alerts = {"acked": {"status": "acknowledged"}, "done": {"status": "resolved"},
              "again": {"status": "active", "raised_at": "2026-11-03T00:00:00Z"},
              "open": {"status": "active", "raised_at": "2026-11-02T00:00:00Z"}}
    assert logic.codes_to_free(codes, alerts) == ["2", "3", "4"]
    assert logic.code_held(codes, "open", "2026-11-02T00:00:00Z") == "5"
    assert logic.code_held(codes, "open", "") is None



def test_the_first_code_and_a_freed_code_retaken_are_claimed_on_the_item_as_read():
    # No map yet: the map is created holding code 1, only if the person exists and still has no map
    entry = {"alert_id": "disk-full", "occurrence": ""}
    assert logic.claim_code(MEMBER, None, "disk-full", "", []) == ("1", {
        "Key": {"member": MEMBER}, "UpdateExpression": "SET reply_codes = :codes",
        "ConditionExpression": "attribute_exists(#member) AND attribute_not_exists(reply_codes)",
        "ExpressionAttributeNames": {"#member": "member"}, "ExpressionAttributeValues": {":codes": {"1": entry}}})
    # Code 1 held by a resolved alert: freed and taken again, only while it still holds that alert
    held = {"1": {"alert_id": "done", "occurrence": ""}}
    assert logic.claim_code(MEMBER, held, "disk-full", "", ["1"]) == ("1", {
        "Key": {"member": MEMBER}, "UpdateExpression": "SET reply_codes.#code = :entry",
        "ConditionExpression": ("attribute_exists(#member) AND reply_codes.#code.alert_id = :alert0 "
                                "AND reply_codes.#code.occurrence = :occurrence0"),
        "ExpressionAttributeNames": {"#member": "member", "#code": "1"},
        "ExpressionAttributeValues": {":entry": entry, ":alert0": "done", ":occurrence0": ""}})


def test_two_codes_freed_for_a_lower_free_one_are_both_removed():
    # Codes 2 and 3 held by closed alerts, 1 free: 1 is taken, 2 and 3 removed, each only while it holds its alert
    held = {"2": {"alert_id": "done", "occurrence": ""}, "3": {"alert_id": "gone", "occurrence": ""}}
    code, update = logic.claim_code(MEMBER, held, "disk-full", "", ["2", "3"])
    assert code == "1"
    assert update["UpdateExpression"] == "SET reply_codes.#code = :entry REMOVE reply_codes.#freed0, reply_codes.#freed1"
    assert update["ConditionExpression"] == (
        "attribute_exists(#member) AND reply_codes.#freed0.alert_id = :alert0 AND reply_codes.#freed0.occurrence = :occurrence0 "
        "AND reply_codes.#freed1.alert_id = :alert1 AND reply_codes.#freed1.occurrence = :occurrence1 "
        "AND attribute_not_exists(reply_codes.#code)")
    assert update["ExpressionAttributeNames"] == {"#member": "member", "#code": "1", "#freed0": "2", "#freed1": "3"}


def test_a_cut_at_a_space_drops_the_space_before_the_dots():
    # 160 septets less the ending (39) and "..." (3) leave 118: the 118th character is a space, dropped
    text = logic.sms_text("a" * 117 + " " + "b" * 100, "1")
    assert text == "a" * 117 + "...\nreply 1a to acknowledge, 1r to resolve"

# -- the texts ------------------------------------------------------------------------------------------------------

def test_a_short_alert_text_is_the_message_then_the_reply_instruction():
    assert logic.sms_text("Disk above 90% on db-1", "12") == "Disk above 90% on db-1\nreply 12a to acknowledge, 12r to resolve"


def test_a_long_message_is_cut_to_one_160_character_part_keeping_the_instruction_whole():
    # One part holds 160 GSM-7 characters (End User Messaging SMS User Guide, "SMS character limits")
    text = logic.sms_text("Queue depth above 1000 on orders-" + "x" * 300, "9999")
    assert len(text) == 160
    assert text.endswith("...\nreply 9999a to acknowledge, 9999r to resolve")
    assert text.startswith("Queue depth above 1000 on orders-xxx")


def test_a_gsm_extension_character_counts_two_septets():
    # GSM 03.38: an extension character is the escape septet and its own
    assert (logic.septets("€"), logic.septets("a[]"), logic.septets("Ä")) == (2, 5, 1)
    # "€" is in GSM 03.38's extension table: two septets (escape + character)
    text = logic.sms_text("€" * 200, "1")
    assert logic.septets(text) <= 160 and logic.septets(text) >= 159
    assert text.endswith("...\nreply 1a to acknowledge, 1r to resolve")


def test_a_message_outside_gsm_7_is_cut_to_70_characters():
    # Any character outside GSM-7 makes the whole text UCS-2, 70 characters a part
    text = logic.sms_text("Диск заполнен на сервере базы данных номер один, срочно проверьте", "3")
    assert logic.septets(text) is None and len(text) <= 70
    assert text.endswith("...\nreply 3a to acknowledge, 3r to resolve")


def test_the_call_reads_the_alert_and_how_to_act_by_text():
    spoken = logic.voice_text("Disk above 90% on db-1", "12")
    # The message as a sentence of its own, then the instructions
    assert spoken.startswith("This is an alert. Disk above 90% on db-1. To acknowledge")
    assert logic.voice_text("Disk full!", "3").startswith("This is an alert. Disk full! To acknowledge")
    assert "To acknowledge, text back 12 a." in spoken and "To resolve, text back 12 r." in spoken


def test_the_email_has_a_text_and_an_html_part_with_both_links():
    links = {"acknowledge": f"{ACTIONS_URL}?t=ack", "resolve": f"{ACTIONS_URL}?t=res"}
    content = logic.email_content("disk-full", "Disk <above> 90%", links)["Simple"]
    assert content["Subject"]["Data"] == "Alert disk-full: Disk <above> 90%"
    assert f"Acknowledge: {ACTIONS_URL}?t=ack" in content["Body"]["Text"]["Data"]
    assert f"Resolve: {ACTIONS_URL}?t=res" in content["Body"]["Text"]["Data"]
    page = content["Body"]["Html"]["Data"]
    assert f'href="{ACTIONS_URL}?t=ack"' in page and f'href="{ACTIONS_URL}?t=res"' in page
    assert "Disk &lt;above&gt; 90%" in page  # the message is escaped in HTML


# -- refusals -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("kind", "code", "reason", "expected"),
    [
        # End User Messaging SMS API Reference: ConflictException / ServiceQuotaExceededException Reason values
        ("sms", "ConflictException", "DESTINATION_PHONE_NUMBER_NOT_VERIFIED",
         "AWS refused it: the number is not a verified destination, and the account is in the SMS and voice sandbox"),
        ("sms", "ConflictException", "DESTINATION_PHONE_NUMBER_OPTED_OUT", "AWS refused it: the number has opted out (it replied STOP)"),
        ("sms", "ServiceQuotaExceededException", "MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT",
         "AWS refused it: the account's monthly spend limit for texts is reached"),
        ("voice", "ServiceQuotaExceededException", "DAILY_DESTINATION_CALL_LIMIT",
         "AWS refused it: the daily limit of calls to this number is reached"),
        ("voice", "ThrottlingException", None, "AWS throttled it"),
        # SES API v2 Reference, SendEmail: MessageRejected
        ("email", "MessageRejected", None, "SES refused it (MessageRejected: not verified)"),
        # Not refusals: failures Lambda retries, then the failure queue records
        ("sms", "AccessDeniedException", None, None),
        ("sms", "InternalServerException", None, None),
        ("email", "InternalServerError", None, None),
    ],
)
def test_refusals_aws_documents_are_told_and_other_errors_are_retried(kind, code, reason, expected):
    assert logic.refusal_reason(kind, code, reason, "not verified") == expected


def test_the_channel_is_told_who_how_why_and_what_still_runs():
    person = parse_person(ANA)
    mobile = person.method("mobile")
    assert logic.refusal_text(MEMBER, "disk-full", mobile, "AWS throttled it", logic.next_page(person, 1)) == (
        "<@U0AAAAAA1>'s text (mobile) about alert disk-full was not sent: AWS throttled it. "
        "Their next rule still runs: a call (mobile-call) at minute 3.")
    assert logic.refusal_text(MEMBER, "disk-full", person.method("work-mail"), "e-mail is off", None) == (
        "<@U0AAAAAA1>'s e-mail (work-mail) about alert disk-full was not sent: e-mail is off. "
        "They have no later rule: only the channel post reached them.")



def test_a_long_message_is_read_to_200_characters_and_one_of_200_whole():
    # About 75 spoken words fit the sandbox's 30-second voice message (User Guide, "SMS/MMS and Voice sandbox")
    assert logic.voice_text("x" * 250, "1") == (
        "This is an alert. " + "x" * 200 + "... To acknowledge, text back 1 a. To resolve, text back 1 r.")
    assert logic.voice_text("y" * 200, "1") == (
        "This is an alert. " + "y" * 200 + ". To acknowledge, text back 1 a. To resolve, text back 1 r.")


def test_the_subject_is_the_first_line_cut_to_100_characters():
    links = {"acknowledge": "a", "resolve": "r"}
    assert logic.email_content("disk-full", "Disk full\non db-1", links)["Simple"]["Subject"]["Data"] == "Alert disk-full: Disk full"
    assert logic.email_content("disk-full", "z" * 100, links)["Simple"]["Subject"]["Data"] == "Alert disk-full: " + "z" * 100
    assert logic.email_content("disk-full", "z" * 101, links)["Simple"]["Subject"]["Data"] == "Alert disk-full: " + "z" * 100 + "..."
    content = logic.email_content("disk-full", "Disk full", links)["Simple"]
    assert content["Body"]["Text"]["Data"] == "Alert disk-full is active.\n\nDisk full\n\nAcknowledge: a\nResolve: r\n"
    assert {part["Charset"] for part in (content["Subject"], content["Body"]["Text"], content["Body"]["Html"])} == {"UTF-8"}


@pytest.mark.parametrize(("kind", "code", "reason", "expected"), [
    # A refusal AWS may add a Reason to later: told as it came, not retried (SMS API Reference, ConflictException)
    ("sms", "ConflictException", "SOMETHING_NEW", "AWS refused it (ConflictException SOMETHING_NEW: said so)"),
    ("voice", "ServiceQuotaExceededException", None, "AWS refused it (ServiceQuotaExceededException: said so)"),
    ("voice", "ServiceQuotaExceededException", "MONTHLY_SPEND_LIMIT_REACHED_FOR_VOICE",
     "AWS refused it: the account's monthly spend limit for voice is reached"),
    ("email", "SendingPausedException", None, "SES refused it (SendingPausedException: said so)"),
    ("email", "ConflictException", None, None),  # an SMS refusal is no SES refusal
])
def test_other_refusals_are_told_as_aws_gave_them(kind, code, reason, expected):
    assert logic.refusal_reason(kind, code, reason, "said so") == expected


def test_the_channel_off_reason_names_the_setting_to_give():
    assert logic.channel_off_reason("email") == "e-mail is off in this deployment (no alertEmailFrom)"
    assert logic.channel_off_reason("voice") == "texts and calls are off in this deployment (no smsOriginationIdentity)"


def test_codes_go_by_number_not_by_text():
    # "10" sorts before "9" as text; the codes are numbers, the lowest first
    codes = {"10": {"alert_id": "done", "occurrence": ""}, "9": {"alert_id": "done", "occurrence": ""}}
    assert logic.codes_to_free(codes, {"done": {"status": "resolved"}}) == ["9", "10"]
    assert logic.code_held(codes, "done", "") == "9"
    assert logic.occurrence_of({"raised_at": 7}) == ""


def test_a_ucs2_text_of_exactly_70_characters_is_sent_whole():
    # 31 Cyrillic letters and the 39-character ending: 70, one UCS-2 part ("SMS character limits")
    assert logic.sms_text("Д" * 31, "1") == "Д" * 31 + "\nreply 1a to acknowledge, 1r to resolve"


def test_cuts_drop_the_space_at_the_cut_and_a_question_is_a_sentence_already():
    assert logic.voice_text("x" * 199 + " " + "y" * 50, "1").startswith("This is an alert. " + "x" * 199 + "... To acknowledge")
    assert logic.voice_text("Is db-1 down?", "1").startswith("This is an alert. Is db-1 down? To acknowledge")
    links = {"acknowledge": "a", "resolve": "r"}
    subject = logic.email_content("disk-full", "z" * 99 + " " + "w" * 10, links)["Simple"]["Subject"]["Data"]
    assert subject == "Alert disk-full: " + "z" * 99 + "..."


def test_a_message_ending_in_whitespace_is_read_as_one_sentence_with_one_period():
    # An alarm's message may end in a newline: a sentence ended before it gets no second period, and a
    # period added goes right after the last word, so text-to-speech pauses once before the instructions
    assert logic.voice_text("Disk full.\n", "1").startswith("This is an alert. Disk full.")
    assert ".." not in logic.voice_text("Disk full.\n", "1")
    assert logic.voice_text("Disk full \n", "1").startswith("This is an alert. Disk full. To acknowledge")


def test_a_message_starting_with_spaces_is_still_cut_to_one_part():
    text = logic.sms_text(" " * 10 + "a" * 200, "1")
    assert text == " " * 10 + "a" * 108 + "...\nreply 1a to acknowledge, 1r to resolve" and len(text) == 160


@pytest.mark.parametrize("message", ["", "   "])
def test_an_empty_message_makes_a_subject_naming_only_the_alert(message):
    links = {"acknowledge": "a", "resolve": "r"}
    assert logic.email_content("disk-full", message, links)["Simple"]["Subject"]["Data"] == "Alert disk-full: "

# -- the rules a post arms ------------------------------------------------------------------------------------------

def test_a_post_arms_each_verified_rule_at_its_minute_with_a_name_of_its_own():
    notified_at = 1_800_000_000.25
    event = {"alert_id": "disk-full", "round": 2, "execution_id": EXECUTION, "occurrence": None, "actions_url": ACTIONS_URL}
    armed = arming.contact_armings(parse_person(ANA), event, notified_at)
    # Then: the text at minute 1, the call at 3, the e-mail at 5 (the unverified phone's rule never)
    assert [a.payload["contact"] for a in armed] == ["mobile", "mobile-call", "work-mail"]
    assert [a.at for a in armed] == [math.ceil(notified_at + 60), math.ceil(notified_at + 180), math.ceil(notified_at + 300)]
    # at() in UTC, whole seconds (EventBridge Scheduler API Reference, CreateSchedule ScheduleExpression)
    assert armed[0].expression == "at(2027-01-15T08:01:01)"
    assert armed[0].payload == {"alert_id": "disk-full", "occurrence": "", "member": MEMBER, "contact": "mobile",
                                "after_minutes": 1, "round": 2, "execution_id": EXECUTION, "notified_at": notified_at,
                                "actions_url": ACTIONS_URL}
    # Names: 1 to 64 of [0-9a-zA-Z-_.], the same for a retried notifier, another for another round
    again = arming.contact_armings(parse_person(ANA), event, notified_at + 7)
    later = arming.contact_armings(parse_person(ANA), {**event, "round": 3}, notified_at)
    assert [a.name for a in again] == [a.name for a in armed]
    assert not {a.name for a in later} & {a.name for a in armed}
    assert all(len(a.name) <= 64 and a.name.replace("-", "").isalnum() for a in armed)


def test_a_rule_at_minute_0_is_invoked_at_once():
    person = parse_person({**ANA, "rules": [{"after_minutes": 0, "contact": "mobile"}]})
    event = {"alert_id": "disk-full", "round": 1, "execution_id": EXECUTION, "occurrence": "2026-11-28T10:00:00Z"}
    [armed] = arming.contact_armings(person, event, 1_800_000_000.0)
    assert armed.at is None and armed.payload["occurrence"] == "2026-11-28T10:00:00Z"



def test_each_execution_member_and_method_arms_under_a_name_of_its_own():
    # A schedule's name is what makes a retried notifier arm nothing twice, so two different contacts must
    # never share one: another execution, another person, another method at the same minute
    both = {**ANA, "rules": [{"after_minutes": 2, "contact": "mobile"}, {"after_minutes": 2, "contact": "mobile-call"}]}
    event = {"alert_id": "disk-full", "round": 1, "execution_id": EXECUTION}
    text, call = arming.contact_armings(parse_person(both), event, 1_800_000_000.0)
    other_run = arming.contact_armings(parse_person(both), {**event, "execution_id": EXECUTION + "-2"}, 1_800_000_000.0)
    ben = arming.contact_armings(parse_person({**both, "member": "U0BBBBBB2"}), event, 1_800_000_000.0)
    names = [text.name, call.name, other_run[0].name, ben[0].name]
    assert len(set(names)) == 4
    # contact-<minute>m- and 32 hex digits of a SHA-256: 43 characters, within CreateSchedule's 64
    assert all(re.fullmatch(r"contact-2m-[0-9a-f]{32}", name) for name in names)


def test_the_channel_is_told_which_rules_were_not_started_or_that_none_could_be_read():
    person = parse_person(ANA)
    event = {"alert_id": "disk-full", "round": 1, "execution_id": EXECUTION}
    text, call, _ = arming.contact_armings(person, event, 1_800_000_000.0)
    assert arming.not_armed_text(MEMBER, "disk-full", [text, call], "AWS answered ThrottlingException") == (
        "<@U0AAAAAA1>'s rules about alert disk-full could not be started (AWS answered ThrottlingException): "
        "a text (mobile) at minute 1, a call (mobile-call) at minute 3 will not reach them.")
    assert arming.not_armed_text(MEMBER, "disk-full", [], "the people table could not be read") == (
        "<@U0AAAAAA1>'s rules about alert disk-full could not be started (the people table could not be read): "
        "their texts, calls and e-mails will not reach them.")

# -- Contact on moto: reply codes, SES, the channel told ------------------------------------------------------------

def _table(name: str, key: str) -> None:
    boto3.client("dynamodb").create_table(
        TableName=name, KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")


@pytest.fixture
def aws_tables(monkeypatch):
    monkeypatch.setenv("ALERT_TABLE_NAME", "alerts")
    monkeypatch.setenv("PEOPLE_TABLE_NAME", "people")
    with mock_aws():
        _table("alerts", "alert_id")
        _table("people", "member")
        yield boto3.resource("dynamodb")


@pytest.fixture
def contact(aws_tables, monkeypatch):
    monkeypatch.setenv("FOLLOW_UP_FUNCTION_NAME", "follow-up")
    monkeypatch.setenv("SMS_ORIGINATION_IDENTITY", ORIGIN)
    monkeypatch.setenv("ALERT_EMAIL_FROM", SENDER)
    secret = boto3.client("secretsmanager").create_secret(Name="link-key", SecretString=LINK_KEY.decode())
    monkeypatch.setenv("ACTION_LINK_KEY_SECRET_ARN", secret["ARN"])
    parameters.clear_caches()
    boto3.client("sesv2").create_email_identity(EmailIdentity=SENDER)
    boto3.client("sesv2").create_email_identity(EmailIdentity="ana@example.com")
    handler = load_lambda_module("alert_contact", "handler")
    with Stubber(handler.sms_voice) as sms, Stubber(handler.lambda_client) as lambda_:
        handler.stubs = sms, lambda_
        yield handler
    parameters.clear_caches()


def _event(contact: str, after_minutes: int, alert_id: str = "disk-full", occurrence: str = "") -> dict:
    return {"alert_id": alert_id, "occurrence": occurrence, "member": MEMBER, "contact": contact,
            "after_minutes": after_minutes, "round": 1, "execution_id": EXECUTION, "notified_at": 1_800_000_000.0,
            "actions_url": ACTIONS_URL}


def _alert(db, alert_id: str = "disk-full", **fields) -> None:
    db.Table("alerts").put_item(Item={"alert_id": alert_id, "message": "Disk above 90% on db-1", "status": "active", **fields})


def _told(text: str) -> dict:
    return {"FunctionName": "follow-up", "InvocationType": "Event", "Payload": json.dumps({"text": text}).encode()}


def test_a_text_takes_the_lowest_free_code_and_keeps_it_on_the_person(contact, aws_tables):
    # Given: Ana, with code 1 held by an open alert and code 2 by a resolved one
    _alert(aws_tables)
    _alert(aws_tables, "cpu-high")
    _alert(aws_tables, "old", status="resolved")
    codes = {"1": {"alert_id": "cpu-high", "occurrence": ""}, "2": {"alert_id": "old", "occurrence": ""},
             # raised again since its page: the code is of an earlier occurrence
             "3": {"alert_id": "disk-full", "occurrence": "2026-11-01T00:00:00Z"}}
    aws_tables.Table("people").put_item(Item={**ANA, "reply_codes": codes})
    sms, _ = contact.stubs
    sms.add_response("send_text_message", {"MessageId": "m-1"}, {
        "DestinationPhoneNumber": ANA_PHONE, "OriginationIdentity": ORIGIN, "MessageType": "TRANSACTIONAL",
        "MessageBody": "Disk above 90% on db-1\nreply 2a to acknowledge, 2r to resolve"})
    # When
    result = contact.lambda_handler(_event("mobile", 1), FakeLambdaContext())
    # Then: code 2 is freed (its alert resolved) and taken, code 3 freed (raised again), code 1 kept
    assert result == {"sent": True, "kind": "text"}
    sms.assert_no_pending_responses()
    assert aws_tables.Table("people").get_item(Key={"member": MEMBER})["Item"]["reply_codes"] == {
        "1": {"alert_id": "cpu-high", "occurrence": ""}, "2": {"alert_id": "disk-full", "occurrence": ""}}


def test_the_call_after_the_text_reads_the_same_code(contact, aws_tables):
    # Given: the text took code 1 for this alert and occurrence
    _alert(aws_tables, raised_at="2026-11-28T10:00:00Z")
    aws_tables.Table("people").put_item(Item={**ANA, "reply_codes": {"1": {"alert_id": "disk-full", "occurrence": "2026-11-28T10:00:00Z"}}})
    sms, _ = contact.stubs
    sms.add_response("send_voice_message", {"MessageId": "m-2"}, {
        "DestinationPhoneNumber": ANA_PHONE, "OriginationIdentity": ORIGIN, "MessageBodyTextType": "TEXT",
        "MessageBody": ANY})
    # When
    contact.lambda_handler(_event("mobile-call", 3, occurrence="2026-11-28T10:00:00Z"), FakeLambdaContext())
    # Then: the same code, no second one
    sms.assert_no_pending_responses()
    assert aws_tables.Table("people").get_item(Key={"member": MEMBER})["Item"]["reply_codes"] == {
        "1": {"alert_id": "disk-full", "occurrence": "2026-11-28T10:00:00Z"}}


def test_the_first_code_creates_the_map_and_a_code_taken_meanwhile_is_not_overwritten(aws_tables):
    # Given: a person with no codes yet
    people = aws_tables.Table("people")
    people.put_item(Item=dict(ANA))
    # When: the first code is taken
    code, update = logic.claim_code(MEMBER, None, "a", "", [])
    people.update_item(**update)
    # Then
    assert code == "1" and people.get_item(Key={"member": MEMBER})["Item"]["reply_codes"] == {"1": {"alert_id": "a", "occurrence": ""}}
    # When: two pages choose from the same read: the second's code is taken by the first
    first_code, first = logic.claim_code(MEMBER, {"1": {"alert_id": "a", "occurrence": ""}}, "b", "", [])
    second_code, second = logic.claim_code(MEMBER, {"1": {"alert_id": "a", "occurrence": ""}}, "c", "", [])
    people.update_item(**first)
    # Then: the second is refused by DynamoDB, and "b" keeps code 2
    with pytest.raises(people.meta.client.exceptions.ConditionalCheckFailedException):
        people.update_item(**second)
    assert first_code == second_code == "2"
    assert people.get_item(Key={"member": MEMBER})["Item"]["reply_codes"]["2"] == {"alert_id": "b", "occurrence": ""}
    # And: a page for a person deleted meanwhile creates no item
    _, gone = logic.claim_code("U0GONE001", None, "a", "", [])
    with pytest.raises(people.meta.client.exceptions.ConditionalCheckFailedException):
        people.update_item(**gone)


def test_a_code_freed_by_another_page_and_retaken_is_not_removed(aws_tables):
    # Given: code 1 was an old alert's when read, but another page has freed and retaken it since
    people = aws_tables.Table("people")
    people.put_item(Item={**ANA, "reply_codes": {"1": {"alert_id": "new", "occurrence": ""}}})
    code, update = logic.claim_code(MEMBER, {"1": {"alert_id": "old", "occurrence": ""}}, "mine", "", ["1"])
    # Then: the write that would reuse it is refused
    assert code == "1"
    with pytest.raises(people.meta.client.exceptions.ConditionalCheckFailedException):
        people.update_item(**update)


def test_an_acknowledged_alert_sends_nothing(contact, aws_tables):
    _alert(aws_tables, status="acknowledged")
    aws_tables.Table("people").put_item(Item=dict(ANA))
    assert contact.lambda_handler(_event("mobile", 1), FakeLambdaContext()) == {"sent": False, "reason": "the alert is acknowledged"}
    assert "reply_codes" not in aws_tables.Table("people").get_item(Key={"member": MEMBER})["Item"]


def test_a_refused_text_is_told_to_the_channel_and_takes_no_retry(contact, aws_tables):
    # Given: AWS refuses the text: the destination is not verified in the sandbox
    _alert(aws_tables)
    aws_tables.Table("people").put_item(Item=dict(ANA))
    sms, lambda_ = contact.stubs
    sms.add_client_error("send_text_message", service_error_code="ConflictException", service_message="not verified",
                         http_status_code=400, modeled_fields={"Message": "not verified", "Reason": "DESTINATION_PHONE_NUMBER_NOT_VERIFIED",
                                                               "ResourceType": "verified-destination-number", "ResourceId": ANA_PHONE})
    lambda_.add_response("invoke", {"StatusCode": 202}, _told(
        "<@U0AAAAAA1>'s text (mobile) about alert disk-full was not sent: AWS refused it: the number is not a verified "
        "destination, and the account is in the SMS and voice sandbox. Their next rule still runs: a call (mobile-call) at minute 3."))
    # When
    result = contact.lambda_handler(_event("mobile", 1), FakeLambdaContext())
    # Then: told (through the follow-up function), and the invocation succeeds: no retry texts again
    assert result["sent"] is False
    lambda_.assert_no_pending_responses()


def test_a_failure_that_is_no_refusal_fails_the_invocation_for_lambdas_retry(contact, aws_tables):
    _alert(aws_tables)
    aws_tables.Table("people").put_item(Item=dict(ANA))
    sms, _ = contact.stubs
    sms.add_client_error("send_text_message", service_error_code="InternalServerException", http_status_code=500)
    with pytest.raises(Exception, match="InternalServerException"):
        contact.lambda_handler(_event("mobile", 1), FakeLambdaContext())


def test_texts_off_in_the_deployment_are_told_to_the_channel(contact, aws_tables, monkeypatch):
    monkeypatch.delenv("SMS_ORIGINATION_IDENTITY")
    _alert(aws_tables)
    aws_tables.Table("people").put_item(Item=dict(ANA))
    _, lambda_ = contact.stubs
    lambda_.add_response("invoke", {"StatusCode": 202}, _told(
        "<@U0AAAAAA1>'s call (mobile-call) about alert disk-full was not sent: texts and calls are off in this deployment "
        "(no smsOriginationIdentity). Their next rule still runs: an e-mail (work-mail) at minute 5."))
    assert contact.lambda_handler(_event("mobile-call", 3), FakeLambdaContext())["sent"] is False
    lambda_.assert_no_pending_responses()


def test_the_email_goes_from_the_sender_with_links_signed_for_the_person_and_occurrence(contact, aws_tables):
    # Given
    _alert(aws_tables, raised_at="2026-11-28T10:00:00Z")
    aws_tables.Table("people").put_item(Item=dict(ANA))
    # When
    result = contact.lambda_handler(_event("work-mail", 5, occurrence="2026-11-28T10:00:00Z"), FakeLambdaContext())
    # Then: SES took it (moto refuses a sender that is not an identity); moto keeps the HTML part
    assert result == {"sent": True, "kind": "e-mail"}
    [message] = ses_backends["123456789012"]["us-east-1"].sent_messages
    assert message.source == SENDER and message.destinations["ToAddresses"] == ["ana@example.com"]
    links = {action: message.body.split(f'href="{ACTIONS_URL}?t=')[index + 1].split('"')[0]
             for index, action in enumerate(("acknowledge", "resolve"))}
    for action, token in links.items():
        claim = verify(LINK_KEY, token, now=time.time())
        assert (claim.alert_id, claim.user, claim.action, claim.occurrence) == ("disk-full", MEMBER, action, "2026-11-28T10:00:00Z")


# -- Notify User arms the rules on moto's Scheduler -----------------------------------------------------------------

def test_the_notifier_arms_later_rules_as_one_time_schedules_once_and_minute_0_at_once(monkeypatch):
    monkeypatch.setenv("IDEMPOTENCY_TABLE_NAME", "idempotency")
    monkeypatch.setenv("PEOPLE_TABLE_NAME", "people")
    monkeypatch.setenv("CONTACT_FUNCTION_ARN", "arn:aws:lambda:us-east-1:123456789012:function:contact")
    monkeypatch.setenv("CONTACT_SCHEDULE_GROUP", "contacts")
    monkeypatch.setenv("CONTACT_SCHEDULER_ROLE_ARN", "arn:aws:iam::123456789012:role/contact-scheduler")
    monkeypatch.setenv("CONTACT_FAILURE_QUEUE_ARN", "arn:aws:sqs:us-east-1:123456789012:contact-failures")
    with mock_aws():
        _table("idempotency", "id")
        _table("people", "member")
        boto3.client("scheduler").create_schedule_group(Name="contacts")
        person = {**ANA, "rules": [{"after_minutes": 0, "contact": "mobile"}, {"after_minutes": 3, "contact": "mobile-call"}]}
        boto3.resource("dynamodb").Table("people").put_item(Item=json.loads(json.dumps(person), parse_float=Decimal))
        notifier = load_lambda_module("alert_notifier", "handler")
        event = {"alert_id": "disk-full", "round": 1, "execution_id": EXECUTION, "user": MEMBER,
                 "occurrence": None, "actions_url": ACTIONS_URL}
        with Stubber(notifier.lambda_client) as lambda_:
            lambda_.add_response("invoke", {"StatusCode": 202}, {
                "FunctionName": "arn:aws:lambda:us-east-1:123456789012:function:contact", "InvocationType": "Event", "Payload": ANY})
            # When: the post is made (twice: a retried notifier)
            notifier.arm_contacts(event, 1_800_000_000.0)
            lambda_.assert_no_pending_responses()
            lambda_.add_response("invoke", {"StatusCode": 202}, None)
            notifier.arm_contacts(event, 1_800_000_004.0)
        # Then: one schedule, at minute 3 in UTC, deleted after it fires, invoking Contact with the payload
        scheduler = boto3.client("scheduler")
        [listed] = scheduler.list_schedules(GroupName="contacts")["Schedules"]
        armed = scheduler.get_schedule(GroupName="contacts", Name=listed["Name"])
        assert (armed["ScheduleExpression"], armed["ScheduleExpressionTimezone"]) == ("at(2027-01-15T08:03:00)", "UTC")
        assert armed["ActionAfterCompletion"] == "DELETE" and armed["FlexibleTimeWindow"] == {"Mode": "OFF"}
        assert armed["Target"]["Arn"].endswith(":function:contact") and armed["Target"]["RoleArn"].endswith("role/contact-scheduler")
        assert json.loads(armed["Target"]["Input"])["contact"] == "mobile-call"
        assert armed["Target"]["DeadLetterConfig"] == {"Arn": "arn:aws:sqs:us-east-1:123456789012:contact-failures"}


def test_a_member_without_an_item_arms_nothing(monkeypatch):
    monkeypatch.setenv("IDEMPOTENCY_TABLE_NAME", "idempotency")
    monkeypatch.setenv("PEOPLE_TABLE_NAME", "people")
    monkeypatch.setenv("CONTACT_SCHEDULE_GROUP", "contacts")
    with mock_aws():
        _table("idempotency", "id")
        _table("people", "member")
        boto3.client("scheduler").create_schedule_group(Name="contacts")
        notifier = load_lambda_module("alert_notifier", "handler")
        with Stubber(notifier.lambda_client) as lambda_:  # any invoke would fail: none is expected
            notifier.arm_contacts({"alert_id": "a", "round": 1, "execution_id": EXECUTION, "user": "U0NOBODY1"}, 1_800_000_000.0)
            lambda_.assert_no_pending_responses()
        assert boto3.client("scheduler").list_schedules(GroupName="contacts")["Schedules"] == []


def test_a_rule_the_notifier_cannot_arm_is_told_to_the_channel_and_the_post_stands(monkeypatch):
    # Given: Scheduler throttles every CreateSchedule past the SDK's retries (moto's Scheduler throttles
    # nothing, so its answer is stubbed: EventBridge Scheduler API Reference, ThrottlingException)
    monkeypatch.setenv("IDEMPOTENCY_TABLE_NAME", "idempotency")
    monkeypatch.setenv("PEOPLE_TABLE_NAME", "people")
    monkeypatch.setenv("FOLLOW_UP_FUNCTION_NAME", "follow-up")
    monkeypatch.setenv("CONTACT_FUNCTION_ARN", "arn:aws:lambda:us-east-1:123456789012:function:contact")
    monkeypatch.setenv("CONTACT_SCHEDULE_GROUP", "contacts")
    monkeypatch.setenv("CONTACT_SCHEDULER_ROLE_ARN", "arn:aws:iam::123456789012:role/contact-scheduler")
    monkeypatch.setenv("CONTACT_FAILURE_QUEUE_ARN", "arn:aws:sqs:us-east-1:123456789012:contact-failures")
    with mock_aws():
        _table("idempotency", "id")
        _table("people", "member")
        boto3.resource("dynamodb").Table("people").put_item(Item=json.loads(json.dumps(ANA), parse_float=Decimal))
        notifier = load_lambda_module("alert_notifier", "handler")
        with Stubber(notifier.lambda_client) as lambda_, Stubber(notifier.scheduler) as scheduler:
            for _ in range(3):
                scheduler.add_client_error("create_schedule", service_error_code="ThrottlingException", http_status_code=400)
            lambda_.add_response("invoke", {"StatusCode": 202}, _told(
                "<@U0AAAAAA1>'s rules about alert disk-full could not be started (AWS answered ThrottlingException): "
                "a text (mobile) at minute 1, a call (mobile-call) at minute 3, an e-mail (work-mail) at minute 5 "
                "will not reach them."))
            # When: no exception escapes (a retried post would be posted twice)
            notifier.arm_contacts({"alert_id": "disk-full", "round": 1, "execution_id": EXECUTION, "user": MEMBER},
                                  1_800_000_000.0)
            # Then
            scheduler.assert_no_pending_responses()
            lambda_.assert_no_pending_responses()


def test_a_person_deleted_while_their_code_is_chosen_gets_no_code_and_no_item(contact, aws_tables):
    # Given: the person as read a moment ago, deleted since
    read = {**ANA, "reply_codes": {}}
    # When / Then: the conditional write refuses, the re-read finds nobody, and no item is created
    with pytest.raises(contact.PersonGone):
        contact._reply_code(MEMBER, read, "disk-full", "")
    assert "Item" not in aws_tables.Table("people").get_item(Key={"member": MEMBER})


def test_two_codes_taken_by_other_pages_meanwhile_are_read_again_and_the_next_free_one_taken(contact, aws_tables):
    # Given: the person as read held no code; since then two other pages took 1 and 2
    _alert(aws_tables, "a")
    _alert(aws_tables, "b")
    people = aws_tables.Table("people")
    people.put_item(Item={**ANA, "reply_codes": {"1": {"alert_id": "a", "occurrence": ""}, "2": {"alert_id": "b", "occurrence": ""}}})
    # When
    code = contact._reply_code(MEMBER, {**ANA, "reply_codes": {}}, "disk-full", "")
    # Then: the lowest free code once read again
    assert code == "3"
    assert people.get_item(Key={"member": MEMBER})["Item"]["reply_codes"]["3"] == {"alert_id": "disk-full", "occurrence": ""}

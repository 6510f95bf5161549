"""Replies to the alert texts: what a text to the alert number means, and what its sender and the channel are told.

The logic runs with no mocks; where a reply's fate is the alert item's (a stale code, an alert resolved
since), the real conditional write runs on moto's DynamoDB against the item as the machine and the
alarm handler leave it. Expected values are worked out from:

- End User Messaging SMS User Guide, "Example of a two-way SMS message payload for Amazon SNS topics"
  (https://docs.aws.amazon.com/sms-voice/latest/userguide/two-way-sms-payload.html): its example payload
  and the meaning of each field.
- "Required opt-out keywords" (https://docs.aws.amazon.com/sms-voice/latest/userguide/keywords-required.html):
  ARRET, CANCEL, END, OPT-OUT, OPTOUT, QUIT, REMOVE, STOP, TD, UNSUBSCRIBE opt a number out; "For US
  toll-free numbers ... The only supported opt-out keyword for a US toll-free number is STOP".
- "Keywords" (https://docs.aws.amazon.com/sms-voice/latest/userguide/keywords.html): "When your number
  receives a message that begins with a keyword, AWS End User Messaging SMS responds with a
  customizable message"; HELP is one AWS expects every number to support; keywords are case insensitive.
- Issue 39: the reply ``<code>a`` / ``<code>r``; the people item's ``reply_codes`` (code -> {"alert_id",
  "occurrence"}); a reply acts as the person whose VERIFIED number sent it, under a Slack click's
  occurrence rules; any other number or an unknown code is refused and the sender texted why.
"""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from tests.lambda_loader import load_lambda_module

logic = load_lambda_module("alert_sms_replies", "alert_sms_replies_logic")

APP_NUMBER = "+12065550100"
ANA_NUMBER = "+4915112345678"
BEN_NUMBER = "+14255550182"
STRANGER_NUMBER = "+14255550199"
ANA, BEN = "U0AAAAAA1", "U0BBBBBB2"
ALERT = "disk-full-db-1"
RAISED_AT = "2026-11-28T03:00:00Z"

ANA_ITEM = {
    "member": ANA,
    "name": "Ana",
    "contact_methods": [
        {"id": "mobile", "type": "sms", "address": ANA_NUMBER, "verified": True},
        {"id": "mobile-call", "type": "voice", "address": ANA_NUMBER, "verified": True},
        {"id": "work-mail", "type": "email", "address": "ana@example.com", "verified": True},
    ],
    "rules": [{"after_minutes": 0, "contact": "slack"}, {"after_minutes": 1, "contact": "mobile"}],
    # As the Contact function keeps it: code -> the alert and occurrence its text was about.
    "reply_codes": {"12": {"alert_id": ALERT, "occurrence": RAISED_AT}, "3": {"alert_id": "cpu-web-2", "occurrence": ""}},
}
BEN_ITEM = {
    "member": BEN,
    "name": "Ben",
    "contact_methods": [{"id": "cell", "type": "voice", "address": BEN_NUMBER, "verified": True}],
    "rules": [{"after_minutes": 2, "contact": "cell"}],
}


def text(body: str, *, sender: str = ANA_NUMBER, keyword: str = "KEYWORD_123456789012") -> logic.Inbound:
    """A text to the app's number, as read from the payload End User Messaging publishes."""
    payload = {"originationNumber": sender, "destinationNumber": APP_NUMBER, "messageKeyword": keyword,
               "messageBody": body, "inboundMessageId": "cae173d2-66b9-564c-8309-21f858e9fb84"}
    return logic.read_inbound(json.dumps(payload))


def people(*items: dict) -> logic.People:
    return logic.read_people(items or (ANA_ITEM, BEN_ITEM))


# -- the payload ---------------------------------------------------------------------------------------

def test_aws_documented_example_payload_is_read_field_by_field():
    # Given: the User Guide's example payload, verbatim
    message = json.dumps({
        "originationNumber": "+14255550182",
        "destinationNumber": "+12125550101",
        "messageKeyword": "JOIN",
        "messageBody": "EXAMPLE",
        "inboundMessageId": "cae173d2-66b9-564c-8309-21f858e9fb84",
        "previousPublishedMessageId": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    })
    # When / Then: each field as the guide defines it
    assert logic.read_inbound(message) == logic.Inbound(
        origination_number="+14255550182",  # "The phone number that sent the incoming message"
        destination_number="+12125550101",  # "your dedicated phone number"
        keyword="JOIN",
        body="EXAMPLE",
        inbound_message_id="cae173d2-66b9-564c-8309-21f858e9fb84",
        previous_published_message_id="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    )


def test_a_payload_without_the_previous_message_id_is_read_with_none():
    # previousPublishedMessageId: "the message that the customer is responding to" - absent for a first text
    assert text("12a").previous_published_message_id is None


@pytest.mark.parametrize("message, problem", [
    ("not json", "not JSON"),
    ("[1, 2]", "not a JSON object"),
    (json.dumps({"destinationNumber": APP_NUMBER, "messageBody": "12a", "inboundMessageId": "m"}), "originationNumber"),
    (json.dumps({"originationNumber": ANA_NUMBER, "destinationNumber": APP_NUMBER, "messageBody": "", "inboundMessageId": "m"}),
     "messageBody"),
    (json.dumps({"originationNumber": ANA_NUMBER, "destinationNumber": APP_NUMBER, "messageBody": "1a"}), "inboundMessageId"),
])
def test_a_message_that_is_not_the_two_way_payload_is_refused_naming_what_is_wrong(message, problem):
    with pytest.raises(logic.BadPayload, match=problem):
        logic.read_inbound(message)


# -- a person's reply ------------------------------------------------------------------------------------

@pytest.mark.parametrize("body, action", [
    ("12a", "acknowledge"),
    ("12r", "resolve"),
    ("12 A", "acknowledge"),  # as a phone's keyboard capitalises and spaces it
    (" 12R ", "resolve"),
])
def test_a_reply_from_the_persons_verified_number_acts_as_them_on_the_alert_its_code_names(body, action):
    # When: Ana texts her code 12 with a or r
    decision = logic.decide(text(body), people())
    # Then: act as Ana on the alert and occurrence reply_codes hold under "12"; the answer waits for the outcome
    assert decision == logic.Decision(logic.ACT, member=ANA, action=action, code="12", alert_id=ALERT, occurrence=RAISED_AT)


def test_a_page_about_an_alert_with_no_occurrence_acts_with_the_empty_occurrence():
    # reply_codes hold "" when the page's alert had no raised_at: act_update then refuses a raised alert
    decision = logic.decide(text("3a"), people())
    assert (decision.alert_id, decision.occurrence) == ("cpu-web-2", "")


def test_a_reply_from_a_voice_method_number_acts_too():
    # Ben's only method is a verified voice number: he can text back the code a call read to him
    item = {**BEN_ITEM, "reply_codes": {"1": {"alert_id": ALERT, "occurrence": RAISED_AT}}}
    decision = logic.decide(text("1r", sender=BEN_NUMBER), people(ANA_ITEM, item))
    assert (decision.kind, decision.member, decision.action) == (logic.ACT, BEN, "resolve")


def test_an_unknown_code_is_refused_and_the_sender_told_which_code():
    decision = logic.decide(text("7a"), people())
    assert (decision.kind, decision.member, decision.action, decision.code, decision.alert_id) == (
        logic.UNKNOWN_CODE, ANA, "acknowledge", "7", None)
    assert decision.answer == "Not done: 7 is not the code of an open alert texted to you. Nothing was changed."


def test_a_code_another_person_holds_is_unknown_to_this_one():
    # Ben texts Ana's code 12: codes are per person
    decision = logic.decide(text("12a", sender=BEN_NUMBER), people())
    assert (decision.kind, decision.member) == (logic.UNKNOWN_CODE, BEN)


@pytest.mark.parametrize("entry", ["disk-full", {"occurrence": RAISED_AT}, {"alert_id": ALERT}, {"alert_id": "", "occurrence": ""}])
def test_a_malformed_code_entry_is_an_unknown_code_not_an_act(entry):
    item = {**ANA_ITEM, "reply_codes": {"12": entry}}
    assert logic.decide(text("12a"), people(item)).kind == logic.UNKNOWN_CODE


@pytest.mark.parametrize("body", ["yes", "12", "a12", "12x", "12345a", "ok thanks"])
def test_a_text_that_is_no_reply_code_is_answered_with_how_to_reply(body):
    decision = logic.decide(text(body), people())
    assert (decision.kind, decision.member) == (logic.NOT_A_REPLY, ANA)
    assert decision.answer == ("Not understood: answer an alert text with its code and a or r, such as 12a to "
                               "acknowledge or 12r to resolve.")


# -- who sent it -------------------------------------------------------------------------------------------

def test_a_stranger_is_refused_and_texted_why():
    decision = logic.decide(text("12a", sender=STRANGER_NUMBER), people())
    assert decision.kind == logic.STRANGER and decision.member is None
    assert decision.answer == "Not done: this number is not the verified number of anyone the alerts page. Nothing was changed."


def test_a_number_on_an_unverified_method_is_a_strangers():
    # An unverified method is never used: a reply from it acts for nobody
    unverified = {**ANA_ITEM, "contact_methods": [{**m, "verified": False} for m in ANA_ITEM["contact_methods"]]}
    assert logic.decide(text("12a"), people(unverified, BEN_ITEM)).kind == logic.STRANGER


def test_a_number_two_people_claim_acts_for_neither():
    # Given: Ben's item claims Ana's number too (verified)
    claimant = {**BEN_ITEM, "contact_methods": [{"id": "cell", "type": "sms", "address": ANA_NUMBER, "verified": True}]}
    decision = logic.decide(text("12a"), people(ANA_ITEM, claimant))
    assert decision.kind == logic.SHARED_NUMBER and decision.alert_id is None
    assert decision.answer == ("Not done: this number is the verified number of more than one person, so a reply "
                               "cannot say who acts. Ask an administrator to fix the people table.")


def test_an_unreadable_people_item_is_left_out_and_named():
    broken = {"member": "U0CCCCCC3", "rules": "all of them"}
    read = logic.read_people([ANA_ITEM, broken])
    assert [p.member for p in read.persons] == [ANA] and read.unreadable == ("U0CCCCCC3",)


# -- keywords End User Messaging handles -------------------------------------------------------------------

STOP_NOTICE = (f"<@{ANA}>'s number {ANA_NUMBER} opted out of texts from the alert number (STOP): "
               "End User Messaging sends it no more texts. Their next notification rule still runs.")


def test_stop_from_a_person_tells_the_channel_and_texts_nothing_back():
    decision = logic.decide(text("STOP", keyword="STOP"), people())
    assert (decision.kind, decision.answer, decision.channel) == (logic.OPTED_OUT, None, STOP_NOTICE)


@pytest.mark.parametrize("keyword", ["ARRET", "CANCEL", "END", "OPT-OUT", "OPTOUT", "QUIT", "REMOVE", "STOP", "TD", "UNSUBSCRIBE"])
def test_each_required_opt_out_keyword_aws_matched_is_an_opt_out(keyword):
    # On a long code every one of them is registered: AWS names it in messageKeyword, case aside
    decision = logic.decide(text(keyword.lower() + " please", keyword=keyword.capitalize()), people())
    assert decision.kind == logic.OPTED_OUT and decision.answer is None
    assert decision.channel == STOP_NOTICE.replace("(STOP)", f"({keyword})")


def test_quit_to_a_toll_free_number_matched_no_keyword_so_it_is_no_opt_out():
    # A US toll-free number takes STOP only: AWS matched nothing, the number is not opted out, so it can be answered
    decision = logic.decide(text("QUIT", keyword="KEYWORD_123456789012"), people())
    assert decision.kind == logic.NOT_A_REPLY and decision.channel is None


def test_stop_from_a_stranger_tells_nobody():
    decision = logic.decide(text("STOP", sender=STRANGER_NUMBER, keyword="STOP"), people())
    assert (decision.kind, decision.answer, decision.channel) == (logic.OPTED_OUT, None, None)


def test_stop_from_a_number_two_people_claim_names_both():
    claimant = {**BEN_ITEM, "contact_methods": [{"id": "cell", "type": "sms", "address": ANA_NUMBER, "verified": True}]}
    decision = logic.decide(text("STOP", keyword="STOP"), people(ANA_ITEM, claimant))
    assert decision.channel.startswith(f"<@{ANA}> and <@{BEN}>'s number {ANA_NUMBER} opted out")


def test_help_is_answered_by_aws_and_the_app_adds_nothing():
    decision = logic.decide(text("HELP", keyword="HELP"), people())
    assert (decision.kind, decision.answer, decision.channel) == (logic.AWS_ANSWERED, None, None)


# -- what the person is texted once the write ran (moto's DynamoDB, the real conditional write) -----------

@pytest.fixture
def alert_table(monkeypatch):
    """The alert table on moto and the handler loaded against it: its act() is what the tests run."""
    with mock_aws():
        for name, value in {"ALERT_TABLE_NAME": "alerts", "PEOPLE_TABLE_NAME": "people",
                            "FOLLOW_UP_FUNCTION_NAME": "alert-followup"}.items():
            monkeypatch.setenv(name, value)
        table = boto3.resource("dynamodb", region_name="us-east-1").create_table(
            TableName="alerts", KeySchema=[{"AttributeName": "alert_id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "alert_id", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
        yield table


def reply(table, body: str, item: dict | None) -> str:
    """Ana's text acted on by the handler against ``item`` (None: no alert); the answer she is texted."""
    if item is not None:
        table.put_item(Item={"alert_id": ALERT, **item})
    handler = load_lambda_module("alert_sms_replies")
    decision = logic.decide(text(body), people())
    return logic.answer_for(decision, handler.act(decision), people())


ACTIVE = {"status": "active", "raised_at": RAISED_AT, "message": "Disk full on db-1"}


def test_the_code_acknowledges_the_active_alert_and_the_answer_says_so(alert_table):
    answer = reply(alert_table, "12a", ACTIVE)
    stored = alert_table.get_item(Key={"alert_id": ALERT})["Item"]
    assert (stored["status"], stored["acknowledged_by"]) == ("acknowledged", ANA)
    assert answer == f"Done: you acknowledged alert {ALERT} at {stored['acknowledged_at']}. The channel is told."


def test_a_stale_code_whose_alert_was_raised_again_is_refused_naming_when(alert_table):
    # Given: the alarm raised the alert again at 04:00, after Ana's text about the 03:00 occurrence
    raised_again = {**ACTIVE, "raised_at": "2026-11-28T04:00:00Z"}
    assert reply(alert_table, "12a", raised_again) == (
        f"Not done: alert {ALERT} was raised again at 2026-11-28T04:00:00Z, after the text you answered. "
        "Answer the newest text about it.")
    assert alert_table.get_item(Key={"alert_id": ALERT})["Item"]["status"] == "active"


def test_a_reply_after_the_alert_was_resolved_is_texted_who_resolved_it(alert_table):
    resolved = {**ACTIVE, "status": "resolved", "resolved_by": BEN, "resolved_at": "2026-11-28T03:02:00Z"}
    assert reply(alert_table, "12a", resolved) == f"Not done: alert {ALERT} was already resolved by Ben at 2026-11-28T03:02:00Z."


def test_a_reply_after_the_alarm_resolved_it_names_the_alarm(alert_table):
    resolved = {**ACTIVE, "status": "resolved", "resolved_by": "CloudWatch alarm db-1-disk", "resolved_at": "2026-11-28T03:02:00Z"}
    assert reply(alert_table, "12r", resolved) == (
        f"Not done: alert {ALERT} was already resolved by CloudWatch alarm db-1-disk at 2026-11-28T03:02:00Z.")


def test_acknowledging_twice_says_it_was_already_acknowledged_by_you(alert_table):
    # A redelivered text (SNS delivers at least once) acts once; the second answer says who did it
    acknowledged = {**ACTIVE, "status": "acknowledged", "acknowledged_by": ANA, "acknowledged_at": "2026-11-28T03:01:00Z"}
    assert reply(alert_table, "12a", acknowledged) == f"Not done: alert {ALERT} was already acknowledged by you at 2026-11-28T03:01:00Z."


def test_resolving_an_acknowledged_alert_acts(alert_table):
    acknowledged = {**ACTIVE, "status": "acknowledged", "acknowledged_by": BEN, "acknowledged_at": "2026-11-28T03:01:00Z"}
    answer = reply(alert_table, "12r", acknowledged)
    stored = alert_table.get_item(Key={"alert_id": ALERT})["Item"]
    assert (stored["status"], stored["resolved_by"], stored["acknowledged_by"]) == ("resolved", ANA, BEN)
    assert answer == f"Done: you resolved alert {ALERT} at {stored['resolved_at']}. The channel is told."


def test_a_reply_about_a_deleted_alert_says_it_no_longer_exists(alert_table):
    assert reply(alert_table, "12a", None) == f"Not done: alert {ALERT} no longer exists."


# -- the remaining edges (each a change `make mutate` showed no test noticed) ------------------------------

@pytest.mark.parametrize("message, said", [
    ("not json", "the message is not JSON"),
    ("[1, 2]", "the message is not a JSON object"),
    (json.dumps({"originationNumber": 7}), "originationNumber must be a non-empty string"),
])
def test_a_bad_payload_says_exactly_what_is_wrong(message, said):
    with pytest.raises(logic.BadPayload) as bad:
        logic.read_inbound(message)
    assert str(bad.value) == said


def test_a_keyword_that_is_no_string_and_an_empty_previous_id_are_read_as_none_given():
    message = json.dumps({"originationNumber": ANA_NUMBER, "destinationNumber": APP_NUMBER, "messageKeyword": 5,
                          "messageBody": "12a", "inboundMessageId": "m-1", "previousPublishedMessageId": ""})
    inbound = logic.read_inbound(message)
    assert (inbound.keyword, inbound.previous_published_message_id) == ("", None)
    assert logic.decide(inbound, people()).kind == logic.ACT


def test_reply_codes_that_are_no_map_hold_no_code():
    item = {**ANA_ITEM, "reply_codes": ["12"]}
    assert people(item).reply_codes == {ANA: {}}
    assert logic.decide(text("12a"), people(item)).kind == logic.UNKNOWN_CODE


def test_the_answer_names_someone_without_a_name_by_their_account_and_leaves_out_an_unknown_time():
    decision = logic.decide(text("12a"), people())
    unnamed = {**BEN_ITEM, "name": None}
    unnamed.pop("name")
    by_ben = logic.Outcome("already", "acknowledged", BEN, None)
    assert logic.answer_for(decision, by_ben, people(ANA_ITEM, unnamed)) == (
        f"Not done: alert {ALERT} was already acknowledged by {BEN}.")
    by_nobody = logic.Outcome("already", "resolved", None, "2026-11-28T03:02:00Z")
    assert logic.answer_for(decision, by_nobody, people()) == (
        f"Not done: alert {ALERT} was already resolved by someone at 2026-11-28T03:02:00Z.")


def test_a_status_no_reply_can_change_is_named():
    decision = logic.decide(text("12a"), people())
    assert logic.answer_for(decision, logic.Outcome("not_actionable", "suppressed"), people()) == (
        f"Not done: alert {ALERT} is suppressed, which a reply cannot change.")


def test_an_unreadable_item_read_first_leaves_the_people_after_it():
    read = logic.read_people([{"member": "U0CCCCCC3", "rules": "all of them"}, ANA_ITEM, BEN_ITEM])
    assert [p.member for p in read.persons] == [ANA, BEN]


def test_a_person_the_people_hold_no_codes_for_has_no_code():
    # People as built from persons alone (no item's reply_codes): every code is unknown, nothing raises
    table = logic.People(people().persons, (), {})
    assert logic.decide(text("12a"), table).kind == logic.UNKNOWN_CODE

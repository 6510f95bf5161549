"""/oncall contact|rules|rule: a person adds, verifies and removes their own contact methods and sets their
rules from Slack (issue 39), signed as Slack signs a slash command.

The rules, as issue 39 and its design state them: a method is stored unverified with a pending code and
is never used for paging until verified; the code is 6 random digits, kept hashed, valid 10 minutes and
5 wrong tries, then a new add is needed; every change is checked as ``tools.people put`` checks a file
(E.164 numbers, at most 10 rules, minutes 0-60, ``slack`` only at 0) and changes only the caller's own item,
and never the fields the app keeps (reply codes). Expected answers are worked out from those rules.

The SMS and voice sends are End User Messaging's, which moto does not have: those are covered by
tests/test_alert_people_execution.py on the emulator; here the e-mail path runs on moto's SES v2.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses import ses_backends

from patterns_common.people import parse_person
from tests.lambda_loader import load_lambda_module
from tests.test_alert_actions_runtime import (
    FOLLOW_UP_FUNCTION,
    SIGNING_SECRET_VALUE,
    WEBHOOK_SECRET,
    AsynchronousInvokes,
)
from tests.test_alert_notification_runtime import FakeLambdaContext
from tests.test_alert_oncall_command_runtime import SLACK_SIGNING_SECRET, TEAM, WED_10H, ask, slash

people = load_lambda_module("alert_actions", "people_command")

A, B = "U0AAAAAA1", "U0BBBBBB2"
NOW = 1_800_000_000.0
NUMBER = "+4915112345678"
FROM = "alerts@example.com"
CODE = re.compile(r"[0-9]{6}")


def item_after(write) -> dict:
    return {"member": write.member, **write.after}


def added(kind: str = "sms", address: str = NUMBER, method_id: str = "mobile", item=None, now: float = NOW):
    write, delivery = people.add(item, A, kind, address, method_id, now)
    return item_after(write), delivery


# -- parsing ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "parsed"), [
    ("contact add sms +4915112345678", people.PeopleCommand("add", "mobile", kind="sms", address=NUMBER)),
    ("contact add voice +4915112345678", people.PeopleCommand("add", "mobile-call", kind="voice", address=NUMBER)),
    ("contact add email ana@example.com", people.PeopleCommand("add", "work-mail", kind="email", address="ana@example.com")),
    ("contact add sms +4915112345678 desk", people.PeopleCommand("add", "desk", kind="sms", address=NUMBER)),
    ("contact verify mobile 123456", people.PeopleCommand("verify", "mobile", code="123456")),
    ("contact remove mobile", people.PeopleCommand("remove", "mobile")),
    ("rules", people.PeopleCommand("rules")),
    ("rule mobile 2", people.PeopleCommand("rule", "mobile", minutes=2)),
    ("rule mobile 60", people.PeopleCommand("rule", "mobile", minutes=60)),
    ("rule mobile off", people.PeopleCommand("rule", "mobile")),
])
def test_the_commands_as_the_issue_writes_them(text, parsed):
    assert people.is_people_command(text)
    assert people.parse_command(text) == parsed


@pytest.mark.parametrize("text", ["contact", "contact add pager 123", "contact add sms", "contact verify mobile",
                                  "rule mobile", "rules mobile", "contact add sms +4915112345678 a b"])
def test_anything_else_is_answered_with_the_usage(text):
    with pytest.raises(people.PeopleRefused) as refused:
        people.parse_command(text)
    assert str(refused.value) == people.USAGE


@pytest.mark.parametrize("minutes", ["61", "-1", "1.5", "two"])
def test_minutes_outside_0_to_60_are_refused(minutes):
    with pytest.raises(people.PeopleRefused, match="minutes are a whole number from 0 to 60"):
        people.parse_command(f"rule mobile {minutes}")


@pytest.mark.parametrize("member", ["", "ana", "T0001ABCD"])
def test_a_request_naming_no_member_changes_no_item(member):
    with pytest.raises(people.PeopleRefused, match=r"^Your Slack member ID is not in the request: only a Slack member's "
                                                   r"own contact methods can be changed\.$"):
        people.check_member(member)
    people.check_member(A)


def test_cover_and_the_listing_are_not_people_commands():
    assert not any(people.is_people_command(text) for text in ("", "list", "cover primary", "uncover primary"))


# -- adding and verifying --------------------------------------------------------------------------------


def test_an_added_method_is_unverified_with_a_hashed_code_for_10_minutes():
    item, delivery = added()
    assert item["contact_methods"] == [{"id": "mobile", "type": "sms", "address": NUMBER, "verified": False}]
    assert (delivery.kind, delivery.address, delivery.method_id) == ("sms", NUMBER, "mobile")
    assert CODE.fullmatch(delivery.code)
    pending = item["verifications"]["mobile"]
    # The code itself is nowhere on the item
    assert delivery.code not in json.dumps(item)
    assert (pending["via"], pending["expires_at"], pending["wrong_tries"]) == ("app", NOW + 600, 0)
    # Not used for paging until verified
    assert parse_person(item).pages() == []


def test_codes_are_random():
    codes = {added()[1].code for _ in range(20)}
    assert len(codes) > 1  # 20 draws of 10^6 codes agreeing: chance 10^-114
    # drawn from all 10^6 six-digit codes: 20 draws all below 001000 would have a chance of 10^-60
    assert any(int(code) >= 1000 for code in codes)


def test_codes_are_drawn_from_the_six_digit_codes_and_no_more(monkeypatch):
    # The sent text says "a 6-digit code" (the answer of add): the draw's largest value is 999999
    bounds = []

    def largest_below(bound):
        bounds.append(bound)
        return bound - 1

    monkeypatch.setattr(people.secrets, "randbelow", largest_below)
    assert added()[1].code == "999999" and bounds == [10**6]


def test_each_code_is_hashed_under_a_salt_of_its_own_of_16_random_bytes():
    # 128 bits, the least NIST SP 800-132 (5.1) asks of a salt
    salts = {added()[0]["verifications"]["mobile"]["salt"] for _ in range(3)}
    assert len(salts) == 3 and all(re.fullmatch(r"[0-9a-f]{32}", salt) for salt in salts)


def test_the_right_code_verifies_and_the_answer_names_the_rules_that_use_it():
    item, delivery = added()
    item = item_after(people.rule(item, A, "mobile", 1))
    item = item_after(people.rule(item, A, "mobile", 9))
    pending = people.pending_of(item, A, "mobile", NOW + 599)
    assert people.code_matches(pending, delivery.code)
    write = people.verified(item, A, "mobile")
    assert write.answer == "mobile is verified. Your rules now use it at minute 1, 9 after a round notifies you."
    person = parse_person(item_after(write))
    assert person.method("mobile").verified
    assert "mobile" not in item_after(write)["verifications"]
    assert [minute for minute, _ in person.pages()] == [1, 9]


def test_a_verified_method_with_no_rule_says_how_to_add_one():
    item, _ = added("email", "ana@example.com", "work-mail")
    assert people.verified(item, A, "work-mail").answer == (
        "work-mail is verified. No rule uses it yet: `/oncall rule work-mail <minutes>` adds one.")


def test_a_code_expires_after_10_minutes():
    item, delivery = added()
    with pytest.raises(people.PeopleRefused, match="The code for mobile has expired"):
        people.pending_of(item, A, "mobile", NOW + 600)


def test_a_wrong_code_counts_and_the_fifth_voids_it():
    item, delivery = added()
    wrong = "000000" if delivery.code != "000000" else "111111"
    assert not people.code_matches(people.pending_of(item, A, "mobile", NOW), wrong)
    answers = []
    for _ in range(5):
        write = people.wrong_code(item, A, "mobile")
        answers.append(write.answer)
        item = item_after(write)
    assert answers[0] == "That code is wrong: mobile is not verified. 4 tries left."
    assert answers[3] == "That code is wrong: mobile is not verified. 1 try left."
    assert answers[4].startswith("That code is wrong, and that was the 5th wrong try: the code is void.")
    # Then even the right code has nothing to be checked against: a new add is needed
    with pytest.raises(people.PeopleRefused, match="mobile has no code waiting: `/oncall contact add sms "):
        people.pending_of(item, A, "mobile", NOW)
    assert not parse_person(item).method("mobile").verified


def test_adding_again_voids_the_old_code():
    item, first = added()
    item, second = added(item=item)
    assert len(item["contact_methods"]) == 1
    pending = people.pending_of(item, A, "mobile", NOW)
    assert people.code_matches(pending, second.code)
    assert first.code == second.code or not people.code_matches(pending, first.code)


def test_an_id_held_by_a_verified_method_is_refused():
    item, _ = added()
    item = item_after(people.verified(item, A, "mobile"))
    with pytest.raises(people.PeopleRefused, match="you already have a verified method 'mobile'"):
        people.add(item, A, "sms", "+4930123456", "mobile", NOW)


@pytest.mark.parametrize(("kind", "address"), [("sms", "015112345678"), ("voice", "+49 151 12345678"),
                                                ("email", "ana.example.com"), ("sms", "ana@example.com")])
def test_an_address_that_is_not_e164_or_email_is_refused_naming_the_field(kind, address):
    with pytest.raises(people.PeopleRefused) as refused:
        people.add(None, A, kind, address, "x", NOW)
    assert str(refused.value).startswith(f"Not added: person {A}: contact_methods[0].address must be ")


def test_the_sandbox_path_keeps_awss_destination_and_no_code_of_ours():
    write, delivery = people.add(None, A, "voice", NUMBER, "mobile-call", NOW)
    sandboxed = people.through_sandbox(write, "mobile-call", "verifieddestinationnumber-1", False)
    pending = sandboxed.after["verifications"]["mobile-call"]
    assert pending == {"via": "aws-sandbox", "destination_id": "verifieddestinationnumber-1",
                       "expires_at": NOW + 600, "wrong_tries": 0}
    assert sandboxed.answer == (
        "Added mobile-call (voice +4915112345678), not verified yet. This AWS account's End User Messaging is in its "
        "sandbox, where only numbers verified with AWS get texts and calls, so AWS called +4915112345678 with its own "
        "verification code. Type `/oncall contact verify mobile-call <code>` with AWS's code.")


# -- rules and removing ------------------------------------------------------------------------------------


def test_a_rule_on_an_unverified_method_is_kept_but_said_to_be_unused():
    item, _ = added()
    write = people.rule(item, A, "mobile", 2)
    assert write.after["rules"] == [{"after_minutes": 2, "contact": "mobile"}]
    assert {**write.before, "member": A} == item  # written only over the fields as read
    assert write.answer == ("Added: mobile (sms +4915112345678) 2 minute(s) after a round notifies you. mobile is not "
                            "verified yet: it is not used until `/oncall contact verify mobile <code>`.")


def test_slack_only_at_minute_0_and_a_rule_must_name_a_method():
    assert people.rule(None, A, "slack", 0).after["rules"] == [{"after_minutes": 0, "contact": "slack"}]
    with pytest.raises(people.PeopleRefused, match=r"^Not changed: person U0AAAAAA1: rules\[0\].after_minutes must be 0 for slack"):
        people.rule(None, A, "slack", 1)
    with pytest.raises(people.PeopleRefused, match=r"^Not changed: person U0AAAAAA1: rules\[0\].contact must be"):
        people.rule(None, A, "pager", 1)


def test_at_most_ten_rules():
    item, _ = added()
    for minute in range(10):
        item = item_after(people.rule(item, A, "mobile", minute))
    with pytest.raises(people.PeopleRefused, match=r"^Not changed: person U0AAAAAA1: rules must have at most 10 rules"):
        people.rule(item, A, "mobile", 10)


def test_off_removes_every_rule_of_the_method_and_only_those():
    item, _ = added()
    item, _ = added("email", "ana@example.com", "work-mail", item=item)
    for minute, method in ((1, "mobile"), (5, "work-mail"), (9, "mobile")):
        item = item_after(people.rule(item, A, method, minute))
    write = people.rule(item, A, "mobile", None)
    assert write.after["rules"] == [{"after_minutes": 5, "contact": "work-mail"}]
    # the caller's own item, written only over the rules as they were read
    assert (write.member, {**write.before, "member": A}) == (A, item)
    with pytest.raises(people.PeopleRefused, match="You have no rule using 'mobile'"):
        people.rule(item_after(write), A, "mobile", None)


def test_remove_takes_the_method_its_rules_and_its_code():
    item, _ = added()
    item = item_after(people.rule(item, A, "mobile", 1))
    write = people.remove(item, A, "mobile")
    assert write.after == {"contact_methods": [], "rules": [], "verifications": {}}
    assert write.answer == "Removed mobile and its 1 rule(s)."
    with pytest.raises(people.PeopleRefused, match="You have no contact method 'mobile'"):
        people.remove(item_after(write), A, "mobile")


def test_the_name_and_the_apps_reply_codes_are_never_in_a_write():
    item = {"member": A, "name": "Ana", "reply_codes": {"1": {"alert_id": "disk-full", "occurrence": ""}}}
    write, _ = people.add(item, A, "sms", NUMBER, "mobile", NOW)
    assert set(write.after) == {"contact_methods", "verifications"}
    assert write.before == {}


def test_rules_lists_methods_verified_or_not_and_rules_by_minute():
    item, _ = added()
    item = item_after(people.rule(item, A, "mobile", 3))
    item = item_after(people.rule(item, A, "slack", 0))
    assert people.rules(item, A) == "\n".join([
        "U0AAAAAA1",
        "Contact methods:",
        "  mobile: sms +4915112345678 (not verified: never used for paging)",
        "Rules, by minute after a round notifies you:",
        "  0 min: slack (the channel post, made for everyone notified)",
        "  3 min: mobile (sms +4915112345678) (not used until verified)",
    ])



def test_the_sandbox_path_for_a_text_says_aws_texted_and_that_an_earlier_code_is_void():
    write, _ = people.add(None, A, "sms", NUMBER, "mobile", NOW)
    sandboxed = people.through_sandbox(write, "mobile", "verifieddestinationnumber-2", True)
    assert sandboxed.answer == (
        "Added mobile (sms +4915112345678), not verified yet. This AWS account's End User Messaging is in its "
        "sandbox, where only numbers verified with AWS get texts and calls, so AWS texted its own verification "
        "code to +4915112345678 (the number was registered with AWS before: an earlier code is void). "
        "Type `/oncall contact verify mobile <code>` with AWS's code.")
    assert "salt" not in sandboxed.after["verifications"]["mobile"]


def test_verify_of_a_verified_method_or_one_with_no_code_waiting_says_so():
    item, _ = added()
    verified = item_after(people.verified(item, A, "mobile"))
    with pytest.raises(people.PeopleRefused, match=r"^mobile is verified already\.$"):
        people.pending_of(verified, A, "mobile", NOW)
    with pytest.raises(people.PeopleRefused, match=r"^You have no contact method 'desk'\. `/oncall rules` lists yours\.$"):
        people.pending_of(None, A, "desk", NOW)
    no_code = {**item, "verifications": {}}
    with pytest.raises(people.PeopleRefused) as refused:
        people.pending_of(no_code, A, "mobile", NOW)
    assert str(refused.value) == ("mobile has no code waiting: `/oncall contact add sms +4915112345678 mobile` sends one.")


def test_removing_a_method_no_rule_uses_says_only_that_it_was_removed():
    item, _ = added("email", "ana@example.com", "work-mail")
    assert people.remove(item, A, "work-mail").answer == "Removed work-mail."


def test_the_answers_for_a_slack_rule_and_a_rule_on_a_verified_method():
    assert people.rule(None, A, "slack", 0).answer == (
        "Added: slack at minute 0 (the channel post, which every round makes for everyone it notifies).")
    item, _ = added()
    item = item_after(people.verified(item, A, "mobile"))
    assert people.rule(item, A, "mobile", 4).answer == "Added: mobile (sms +4915112345678) 4 minute(s) after a round notifies you."
    assert people.rule(item_after(people.rule(item, A, "mobile", 4)), A, "mobile", None).answer == "Removed your rules using mobile."


def test_rules_of_someone_with_no_item_and_an_item_that_cannot_be_read():
    assert people.rules(None, A) == "You have no contact methods or rules: a round notifies you in the channel only. " + people.USAGE
    with pytest.raises(people.PeopleRefused) as refused:
        people.rules({"member": A, "rules": "all"}, A)
    assert str(refused.value) == ("Your people item cannot be read (person U0AAAAAA1: rules must be a list); ask an "
                                  "administrator to fix it with `python -m tools.people put`.")


def test_the_fifth_wrong_try_says_how_to_get_a_new_code():
    item, _ = added("voice", NUMBER, "mobile-call")
    for _ in range(4):
        item = item_after(people.wrong_code(item, A, "mobile-call"))
    write = people.wrong_code(item, A, "mobile-call")
    assert write.answer == ("That code is wrong, and that was the 5th wrong try: the code is void. "
                            "`/oncall contact add voice +4915112345678 mobile-call` sends a new one.")
    assert write.after["verifications"] == {}


@pytest.mark.parametrize(("kind", "address", "method_id", "sent"), [
    ("sms", NUMBER, "mobile", "texted a 6-digit code to it"),
    ("voice", NUMBER, "mobile-call", "called it with a 6-digit code"),
    ("email", "ana@example.com", "work-mail", "e-mailed a 6-digit code to it"),
])
def test_the_add_answer_says_how_the_code_went_and_how_to_verify(kind, address, method_id, sent):
    write, _ = people.add(None, A, kind, address, method_id, NOW)
    assert write.answer == (f"Added {method_id} ({kind} {address}), not verified yet: I {sent}. "
                            f"Type `/oncall contact verify {method_id} <code>` within 10 minutes.")


def test_verifying_one_method_leaves_the_others_as_they_were():
    item, _ = added()
    item, _ = added("email", "ana@example.com", "work-mail", item=item)
    write = people.verified(item, A, "work-mail")
    person = parse_person(item_after(write))
    assert (person.method("work-mail").verified, person.method("mobile").verified) == (True, False)
    # mobile's code still waits; the write is conditional on the fields as they were read
    assert list(write.after["verifications"]) == ["mobile"]
    assert ({**write.before, "member": A}, write.member) == (item, A)


def test_a_method_verified_with_no_verifications_field_leaves_none():
    item = {"member": A, "contact_methods": [{"id": "mobile", "type": "sms", "address": NUMBER, "verified": False}]}
    write = people.verified(item, A, "mobile")
    assert write.after == {"contact_methods": [{"id": "mobile", "type": "sms", "address": NUMBER, "verified": True}],
                           "verifications": {}}


def test_a_pending_code_missing_from_the_item_or_without_an_expiry_is_no_code_to_check():
    item, _ = added()
    no_field = {key: value for key, value in item.items() if key != "verifications"}
    with pytest.raises(people.PeopleRefused, match=r"^mobile has no code waiting"):
        people.pending_of(no_field, A, "mobile", NOW)
    pending = {key: value for key, value in item["verifications"]["mobile"].items() if key != "expires_at"}
    with pytest.raises(people.PeopleRefused, match=r"^The code for mobile has expired"):
        people.pending_of({**item, "verifications": {"mobile": pending}}, A, "mobile", NOW)


def test_removing_one_method_keeps_the_others_their_rules_and_their_codes():
    item, _ = added()
    item, _ = added("email", "ana@example.com", "work-mail", item=item)
    item = item_after(people.rule(item_after(people.rule(item, A, "mobile", 1)), A, "work-mail", 5))
    write = people.remove(item, A, "mobile")
    assert write.after["contact_methods"] == [{"id": "work-mail", "type": "email", "address": "ana@example.com", "verified": False}]
    assert write.after["rules"] == [{"after_minutes": 5, "contact": "work-mail"}]
    assert list(write.after["verifications"]) == ["work-mail"]
    assert write.answer == "Removed mobile and its 1 rule(s)."
    assert {**write.before, "member": A} == item
    # An item holding only the method (no rules, no codes): removed to nothing
    bare = {"member": A, "contact_methods": [{"id": "mobile", "type": "sms", "address": NUMBER, "verified": True}]}
    assert people.remove(bare, A, "mobile").after == {"contact_methods": [], "rules": [], "verifications": {}}


def test_a_wrong_try_on_a_code_with_no_count_is_the_first_and_writes_over_the_fields_as_read():
    item, _ = added()
    pending = {k: v for k, v in item["verifications"]["mobile"].items() if k != "wrong_tries"}
    item = {**item, "verifications": {"mobile": pending}}
    write = people.wrong_code(item, A, "mobile")
    assert write.answer == "That code is wrong: mobile is not verified. 4 tries left."
    assert {**write.before, "member": A} == item


def test_a_command_never_writes_over_an_item_whose_name_the_functions_could_not_read():
    with pytest.raises(people.PeopleRefused) as refused:
        people.add({"member": A, "name": "A" * 101}, A, "sms", NUMBER, "mobile", NOW)
    assert str(refused.value) == "Not added: person U0AAAAAA1: name must be a non-empty string of at most 100 characters."


@pytest.mark.parametrize("change", [
    pytest.param(lambda item: people.rule(item, A, "mobile", 5), id="rule"),
    pytest.param(lambda item: people.rule(item, A, "mobile", None), id="rule-off"),
    pytest.param(lambda item: people.verified(item, A, "mobile"), id="verify"),
])
def test_a_rule_or_a_verification_is_never_written_over_an_item_whose_name_the_functions_could_not_read(change):
    # Every change is checked as `tools.people put` checks the whole person, the administrator's name too
    # (module docstring): answering "Added" would hide that paging cannot read the item
    item, _ = added()
    item = {**item_after(people.rule(item, A, "mobile", 1)), "name": "A" * 101}
    with pytest.raises(people.PeopleRefused, match=r"person U0AAAAAA1: name must be a non-empty string of at most 100 characters\.$"):
        change(item)


def test_removing_from_someone_with_no_item_says_they_have_no_such_method():
    with pytest.raises(people.PeopleRefused) as refused:
        people.remove(None, A, "mobile")
    assert str(refused.value) == "You have no contact method 'mobile'. `/oncall rules` lists yours."

# -- the endpoint, on moto, signed as Slack signs ------------------------------------------------------------


@pytest.fixture(scope="module")
def module_endpoint():
    with pytest.MonkeyPatch.context() as env, mock_aws():
        env.setenv("ALERT_TABLE_NAME", "alerts")
        env.setenv("ON_CALL_TABLE_NAME", "on-call")
        env.setenv("PEOPLE_TABLE_NAME", "people")
        env.setenv("SLACK_SIGNING_SECRET_NAME", SLACK_SIGNING_SECRET)
        env.setenv("SLACK_WEBHOOK_SECRET_NAME", WEBHOOK_SECRET)
        env.setenv("FOLLOW_UP_FUNCTION_NAME", FOLLOW_UP_FUNCTION)
        env.setenv("SLACK_TEAM_ID", TEAM)
        env.setenv("ALERT_EMAIL_FROM", FROM)
        env.delenv("SMS_ORIGINATION_IDENTITY", raising=False)
        dynamodb = boto3.resource("dynamodb")
        for name, key in (("alerts", "alert_id"), ("on-call", "schedule_id"), ("people", "member")):
            dynamodb.create_table(TableName=name, KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
                                  AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
                                  BillingMode="PAY_PER_REQUEST")
        boto3.client("sesv2").create_email_identity(EmailIdentity=FROM)
        secrets = boto3.client("secretsmanager")
        env.setenv("SIGNING_KEY_SECRET_ARN", secrets.create_secret(Name="key", SecretString="k" * 64)["ARN"])
        secrets.create_secret(Name=SLACK_SIGNING_SECRET, SecretString=SIGNING_SECRET_VALUE)
        secrets.create_secret(Name=WEBHOOK_SECRET, SecretString="https://hooks.slack.invalid/none")
        parameters.clear_caches()
        handler = load_lambda_module("alert_actions", "handler")
        handler.lambda_client = AsynchronousInvokes(load_lambda_module("alert_followup", "handler"))
        slash_module = load_lambda_module("alert_actions", "people_slash")
        for made in (slash_module.people_table, slash_module.ses, slash_module.sms_voice):
            made.cache_clear()
        env.setattr(handler.time, "time", lambda: WED_10H)
        yield handler
    parameters.clear_caches()


@pytest.fixture
def endpoint(module_endpoint):
    table = boto3.resource("dynamodb").Table("people")
    for key in table.scan(ProjectionExpression="#m", ExpressionAttributeNames={"#m": "member"})["Items"]:
        table.delete_item(Key=key)
    ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages.clear()
    return module_endpoint


def person(member: str = A) -> dict | None:
    return boto3.resource("dynamodb").Table("people").get_item(Key={"member": member}).get("Item")


def mails() -> list:
    return ses_backends[DEFAULT_ACCOUNT_ID]["us-east-1"].sent_messages


def test_a_signed_email_add_mails_a_code_and_verify_with_it_verifies(endpoint):
    # When A adds an e-mail address
    answer = ask(endpoint, "contact add email ana@example.com", user_id=A)
    assert answer == ("Added work-mail (email ana@example.com), not verified yet: I e-mailed a 6-digit code to it. "
                      "Type `/oncall contact verify work-mail <code>` within 10 minutes.")
    # Then: one mail from the deployment's address to A's, carrying the code
    [mail] = mails()
    assert (mail.source, mail.destinations["ToAddresses"]) == (FROM, ["ana@example.com"])
    code = CODE.search(mail.body).group(0)
    assert person()["contact_methods"] == [{"id": "work-mail", "type": "email", "address": "ana@example.com", "verified": False}]
    # When A adds a rule and verifies with the mailed code
    ask(endpoint, "rule work-mail 5", user_id=A)
    answer = ask(endpoint, f"contact verify work-mail {code}", user_id=A)
    assert answer == "work-mail is verified. Your rules now use it at minute 5 after a round notifies you."
    assert person()["contact_methods"][0]["verified"] is True
    assert person()["verifications"] == {}
    assert "work-mail: email ana@example.com (verified)" in ask(endpoint, "rules", user_id=A)


def test_a_wrong_code_is_refused_and_counted(endpoint):
    ask(endpoint, "contact add email ana@example.com", user_id=A)
    code = CODE.search(mails()[0].body).group(0)
    wrong = "000000" if code != "000000" else "111111"
    assert ask(endpoint, f"contact verify work-mail {wrong}", user_id=A) == (
        "That code is wrong: work-mail is not verified. 4 tries left.")
    assert person()["verifications"]["work-mail"]["wrong_tries"] == Decimal(1)
    assert person()["contact_methods"][0]["verified"] is False


def test_an_email_ses_refuses_stores_nothing_and_says_an_administrator_verifies_it(endpoint, monkeypatch):
    # Given: the deployment's address is no SES identity, so SES answers MessageRejected
    monkeypatch.setenv("ALERT_EMAIL_FROM", "nobody@example.com")
    answer = ask(endpoint, "contact add email ana@example.com", user_id=A)
    assert answer.startswith("Not added: SES refused the e-mail to ana@example.com (MessageRejected")
    assert "an administrator verifies the address in SES, or moves the account out of the SES sandbox" in answer
    assert person() is None


def test_without_an_origination_identity_a_phone_is_not_added(endpoint):
    answer = ask(endpoint, "contact add sms +4915112345678", user_id=A)
    assert answer == ("Not added: this deployment sends no texts or calls (the context key smsOriginationIdentity "
                      "names no End User Messaging phone number).")
    assert person() is None


def test_a_command_changes_only_the_callers_item_and_keeps_the_apps_fields(endpoint):
    table = boto3.resource("dynamodb").Table("people")
    codes = {"1": {"alert_id": "disk-full", "occurrence": ""}}
    b_item = {"member": B, "name": "Bo", "contact_methods": [{"id": "mobile", "type": "sms", "address": "+12065550123", "verified": True}],
              "rules": [{"after_minutes": 1, "contact": "mobile"}]}
    table.put_item(Item=b_item)
    table.put_item(Item={"member": A, "name": "Ana", "reply_codes": codes})
    # When A sets a slack rule and B's mobile rule's id is named by A
    assert ask(endpoint, "rule slack 0", user_id=A).startswith("Added: slack at minute 0")
    assert ask(endpoint, "rule mobile off", user_id=A) == "You have no rule using 'mobile'. `/oncall rules` lists yours."
    # Then: B's item is as it was; A's keeps its name and reply codes
    assert person(B) == b_item
    assert person(A) == {"member": A, "name": "Ana", "reply_codes": codes, "rules": [{"after_minutes": 0, "contact": "slack"}]}


def test_rules_of_a_person_without_an_item(endpoint):
    assert ask(endpoint, "rules", user_id=A).startswith("You have no contact methods or rules: a round notifies you in the channel only.")


def test_a_change_worked_out_over_fields_changed_meanwhile_is_not_written(endpoint):
    table = boto3.resource("dynamodb").Table("people")
    table.put_item(Item={"member": A, "contact_methods": [], "rules": []})
    # A's rule is worked out over the item as read...
    write = people.rule(person(), A, "slack", 0)
    # ...then an administrator writes A's methods
    table.put_item(Item={"member": A, "contact_methods": [{"id": "desk", "type": "voice", "address": "+12065550123"}], "rules": []})
    with pytest.raises(people.PeopleRefused, match="Your contact methods changed while you typed"):
        load_lambda_module("alert_actions", "people_slash")._write(write)
    assert person()["rules"] == []


def test_a_bad_signature_changes_nothing(endpoint):
    event = slash("rule slack 0", user_id=A)
    event["headers"]["x-slack-signature"] = "v0=" + "0" * 64
    assert endpoint.lambda_handler(event, FakeLambdaContext())["statusCode"] == 401
    assert person() is None


def test_a_signed_request_without_a_member_id_is_answered_and_reads_no_item(endpoint):
    assert ask(endpoint, "rules", user_id="").startswith("Your Slack member ID is not in the request")

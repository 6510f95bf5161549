"""The people item (issue 39): a person's contact methods and notification rules, checked as written and as read.

The rules, as issue 39 states them: numbers in E.164 form, at most 10 rules, minutes 0-60, anything else
refused naming the field; an unverified method is never used for paging; ``contact: "slack"`` is the
round's channel post (made at once, so only at minute 0); the fields the app keeps on the item
(pending verifications, reply codes) are refused in a person's file and ignored when read. A reply code
is 1 to 4 digits; ``12a`` acknowledges, ``12r`` resolves. Every expected value below is worked out from
those rules, not from the parser's output.

E.164 (ITU-T Recommendation E.164): a plus, then at most 15 digits, the country code first (never 0).
"""

from __future__ import annotations

from decimal import Decimal

import boto3
import pytest
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws

from patterns_common.people import (
    ContactMethod,
    InvalidPerson,
    Rule,
    free_code,
    parse_person,
    parse_reply,
    person_update,
    reply_instruction,
    summary,
)
from tests.property_profiles import PROPERTY

# The issue's example, as a person writes it.
ANA = {"member": "U0AAAAAA1", "name": "Ana",
       "contact_methods": [
           {"id": "mobile", "type": "sms", "address": "+4915112345678", "verified": True},
           {"id": "mobile-call", "type": "voice", "address": "+4915112345678", "verified": True},
           {"id": "work-mail", "type": "email", "address": "ana@example.com", "verified": True}],
       "rules": [{"after_minutes": 0, "contact": "slack"}, {"after_minutes": 1, "contact": "mobile"},
                 {"after_minutes": 3, "contact": "mobile-call"}, {"after_minutes": 5, "contact": "work-mail"}]}
MOBILE = ContactMethod("mobile", "sms", "+4915112345678", True)
CALL = ContactMethod("mobile-call", "voice", "+4915112345678", True)
MAIL = ContactMethod("work-mail", "email", "ana@example.com", True)


def refused(item, *, written: bool = False) -> InvalidPerson:
    with pytest.raises(InvalidPerson) as error:
        parse_person(item, written=written)
    return error.value


def test_the_issues_example_parses_as_written_and_as_read():
    for written in (True, False):
        person = parse_person(ANA, written=written)
        assert person.member == "U0AAAAAA1"
        assert person.name == "Ana"
        assert person.contact_methods == (MOBILE, CALL, MAIL)
        assert person.rules == (Rule(0, "slack"), Rule(1, "mobile"), Rule(3, "mobile-call"), Rule(5, "work-mail"))
        # The channel post is not armed: minute 1 text, minute 3 call, minute 5 e-mail
        assert person.pages() == [(1, MOBILE), (3, CALL), (5, MAIL)]


def test_a_member_with_only_a_member_id_has_no_methods_and_no_rules():
    person = parse_person({"member": "U0BBBBBB2"}, written=True)
    assert (person.name, person.contact_methods, person.rules, person.pages()) == (None, (), (), [])


def test_minutes_read_from_dynamodb_are_decimals_and_parse_as_whole_minutes():
    item = {**ANA, "rules": [{"after_minutes": Decimal("2"), "contact": "mobile"}]}
    assert parse_person(item).rules == (Rule(2, "mobile"),)


@pytest.mark.parametrize("address", [
    "4915112345678",       # no plus
    "+49 151 12345678",    # spaces
    "+0915112345678",      # a country code never starts with 0
    "+4915112345678901",   # 16 digits: E.164 allows at most 15
    "+",                   # no digits at all
    "0151 12345678",       # a national number
])
@pytest.mark.parametrize("index", [0, 1])  # the sms method and the voice method
def test_phone_numbers_must_be_e164(address, index):
    methods = [dict(method) for method in ANA["contact_methods"]]
    methods[index]["address"] = address
    error = refused({**ANA, "contact_methods": methods}, written=True)
    assert (error.member, error.field) == ("U0AAAAAA1", f"contact_methods[{index}].address")


def test_the_longest_e164_number_fifteen_digits_is_taken():
    methods = [{"id": "mobile", "type": "sms", "address": "+491511234567890", "verified": False}]
    assert parse_person({"member": "U0AAAAAA1", "contact_methods": methods}).contact_methods[0].address == "+491511234567890"


def test_an_email_address_is_not_taken_for_a_phone_and_a_phone_number_not_for_email():
    sms_mail = [{"id": "mobile", "type": "sms", "address": "ana@example.com"}]
    assert refused({"member": "U0AAAAAA1", "contact_methods": sms_mail}).field == "contact_methods[0].address"
    mail_phone = [{"id": "work-mail", "type": "email", "address": "+4915112345678"}]
    assert refused({"member": "U0AAAAAA1", "contact_methods": mail_phone}).field == "contact_methods[0].address"


def test_at_most_ten_rules():
    # Ten rules, one a minute on the same method: taken; an eleventh: refused, naming rules
    ten = [{"after_minutes": minute, "contact": "mobile"} for minute in range(10)]
    assert len(parse_person({**ANA, "rules": ten}, written=True).rules) == 10
    eleven = ten + [{"after_minutes": 10, "contact": "mobile"}]
    assert refused({**ANA, "rules": eleven}, written=True).field == "rules"


@pytest.mark.parametrize("minutes", [61, -1, 1.5, True, "1", None])
def test_minutes_are_whole_numbers_from_0_to_60(minutes):
    item = {**ANA, "rules": [{"after_minutes": 1, "contact": "mobile"}, {"after_minutes": minutes, "contact": "mobile"}]}
    assert refused(item, written=True).field == "rules[1].after_minutes"


@pytest.mark.parametrize("minutes", [0, 60])
def test_the_edges_0_and_60_are_taken(minutes):
    assert parse_person({**ANA, "rules": [{"after_minutes": minutes, "contact": "mobile"}]}).rules == (Rule(minutes, "mobile"),)


@pytest.mark.parametrize(("item", "field"), [
    ({**ANA, "phone": "+4915112345678"}, "phone"),
    ({**ANA, "contact_methods": [{**ANA["contact_methods"][0], "label": "mine"}]}, "contact_methods[0].label"),
    ({**ANA, "rules": [{"after_minutes": 1, "contact": "mobile", "repeat": 2}]}, "rules[0].repeat"),
])
def test_an_unknown_field_is_refused_naming_it(item, field):
    for written in (True, False):
        assert refused(item, written=written).field == field


@pytest.mark.parametrize("field", ["verifications", "reply_codes"])
def test_fields_the_app_keeps_are_refused_when_written_and_ignored_when_read(field):
    kept = {"1": {"alert_id": "disk-full", "occurrence": ""}} if field == "reply_codes" else {"mobile": {"code": "x"}}
    item = {**ANA, field: kept}
    error = refused(item, written=True)
    assert error.field == field
    # Read from the table, the same item is the person the form describes
    assert parse_person(item) == parse_person(ANA)


def test_two_methods_with_one_id_are_refused():
    methods = [ANA["contact_methods"][0], {**ANA["contact_methods"][2], "id": "mobile"}]
    assert refused({**ANA, "contact_methods": methods, "rules": []}).field == "contact_methods[1].id"


def test_a_rule_naming_no_method_is_refused():
    item = {**ANA, "rules": [{"after_minutes": 2, "contact": "home-phone"}]}
    assert refused(item, written=True).field == "rules[0].contact"


def test_a_method_may_not_be_called_slack():
    methods = [{"id": "slack", "type": "email", "address": "ana@example.com"}]
    assert refused({"member": "U0AAAAAA1", "contact_methods": methods}).field == "contact_methods[0].id"


@pytest.mark.parametrize("minutes", [1, 60])
def test_slack_is_only_ever_at_minute_0(minutes):
    item = {**ANA, "rules": [{"after_minutes": minutes, "contact": "slack"}]}
    assert refused(item, written=True).field == "rules[0].after_minutes"


@pytest.mark.parametrize("member", ["", "ana", "u0aaaaaa1", "U0", None, 7])
def test_the_member_must_be_a_slack_member_id(member):
    assert refused({**ANA, "member": member}).field == "member"


def test_something_not_an_object_is_refused():
    assert refused(["U0AAAAAA1"]).field == "item"  # type: ignore[arg-type]


def test_pages_skip_unverified_methods_and_slack_and_go_by_minute():
    # Given rules written out of order, one on an unverified e-mail
    item = {"member": "U0AAAAAA1",
            "contact_methods": [{**ANA["contact_methods"][0]}, {**ANA["contact_methods"][1]},
                                {**ANA["contact_methods"][2], "verified": False}],
            "rules": [{"after_minutes": 9, "contact": "mobile"}, {"after_minutes": 2, "contact": "work-mail"},
                      {"after_minutes": 0, "contact": "slack"}, {"after_minutes": 4, "contact": "mobile-call"},
                      {"after_minutes": 1, "contact": "mobile"}]}
    # Then: the text at 1, the call at 4, the text again at 9; neither the e-mail nor the channel post
    assert parse_person(item).pages() == [(1, MOBILE), (4, CALL), (9, MOBILE)]


def test_a_method_written_without_verified_is_unverified():
    item = {"member": "U0AAAAAA1", "contact_methods": [{"id": "mobile", "type": "sms", "address": "+4915112345678"}],
            "rules": [{"after_minutes": 1, "contact": "mobile"}]}
    person = parse_person(item, written=True)
    assert person.contact_methods[0].verified is False
    assert person.pages() == []


def test_a_number_is_owned_only_through_a_verified_phone_method():
    item = {"member": "U0AAAAAA1",
            "contact_methods": [{"id": "mobile", "type": "sms", "address": "+4915112345678", "verified": True},
                                {"id": "desk", "type": "voice", "address": "+493012345678", "verified": False},
                                {"id": "work-mail", "type": "email", "address": "ana@example.com", "verified": True}]}
    person = parse_person(item)
    assert person.owns_number("+4915112345678")
    assert not person.owns_number("+493012345678")   # unverified
    assert not person.owns_number("ana@example.com")  # not a phone
    assert not person.owns_number("+4915100000000")   # nobody's


def test_the_method_lookup_by_id():
    person = parse_person(ANA)
    assert person.method("mobile-call") == CALL
    assert person.method("pager") is None


def test_a_text_ends_with_the_reply_instruction():
    assert reply_instruction("12") == "reply 12a to acknowledge, 12r to resolve"


@pytest.mark.parametrize(("body", "parsed"), [
    ("12a", ("acknowledge", "12")),
    ("12 A", ("acknowledge", "12")),
    (" 7r ", ("resolve", "7")),
    ("9999R", ("resolve", "9999")),
    ("12", None),       # no action
    ("12x", None),      # no such action
    ("12345a", None),   # five digits: a code is at most 4
    ("a12", None),      # the letter after the code
    ("STOP", None),     # AWS's opt-out keyword, not a code
    ("", None),
])
def test_a_reply_is_a_code_and_a_or_r(body, parsed):
    assert parse_reply(body) == parsed


def test_the_free_code_is_the_lowest_no_open_alert_holds():
    assert free_code({}) == "1"
    assert free_code({"1": {}, "2": {}}) == "3"
    assert free_code({"1": {}, "3": {}}) == "2"  # a freed code is taken again
    assert free_code({"2": {}}) == "1"


def test_with_every_code_held_none_is_free():
    with pytest.raises(ValueError):
        free_code({str(number): {} for number in range(1, 10000)})


# -- properties over generated items (Hypothesis; how many: tests/property_profiles.py) ---------------

junk = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.decimals() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
ids = st.sampled_from(["mobile", "mobile-call", "work-mail", "slack", "Mobile", ""]) | junk
methods = st.fixed_dictionaries(
    {"id": ids, "type": st.sampled_from(["sms", "voice", "email", "pager"]) | junk,
     "address": st.sampled_from(["+4915112345678", "+12065550100", "ana@example.com", "4915112345678", ""]) | junk},
    optional={"verified": st.booleans() | junk, "label": junk})
rules = st.fixed_dictionaries(
    {"after_minutes": st.integers(-2, 62) | st.decimals() | st.floats() | junk, "contact": ids},
    optional={"repeat": junk})
items = st.fixed_dictionaries(
    {"member": st.sampled_from(["U0AAAAAA1", "W0BBBBBB2", "u0", ""]) | junk},
    optional={"name": st.text(max_size=120) | junk,
              "contact_methods": st.lists(methods | junk, max_size=11) | junk,
              "rules": st.lists(rules | junk, max_size=11) | junk,
              "verifications": junk, "reply_codes": junk, "phone": junk},
) | junk


@PROPERTY
@given(items, st.booleans())
def test_nothing_given_to_the_parser_raises_but_invalid_person(item, written):
    try:
        parse_person(item, written=written)
    except InvalidPerson:
        pass


# Items that parse, so the property below is never vacuous (a parser refusing everything would pass it).
valid_items = st.lists(
    st.tuples(st.sampled_from(["mobile", "mobile-call", "work-mail", "desk"]),
              st.sampled_from([("sms", "+4915112345678"), ("voice", "+12065550100"), ("email", "ana@example.com")]),
              st.booleans()),
    max_size=4, unique_by=lambda method: method[0],
).flatmap(lambda chosen: st.fixed_dictionaries({
    "member": st.just("U0AAAAAA1"),
    "contact_methods": st.just([{"id": i, "type": kind, "address": address, "verified": verified}
                                for i, (kind, address), verified in chosen]),
    "rules": st.lists(st.builds(lambda minute, contact: {"after_minutes": minute, "contact": contact},
                                st.integers(0, 60), st.sampled_from([i for i, _, _ in chosen]))
                      | st.just({"after_minutes": 0, "contact": "slack"}), max_size=10, unique_by=str),
}) if chosen else st.just({"member": "U0AAAAAA1"}))


@PROPERTY
@given(items | valid_items)
def test_every_parsed_persons_pages_use_only_their_verified_methods_by_minute(item):
    try:
        person = parse_person(item)
    except InvalidPerson:
        return
    pages = person.pages()
    assert all(method.verified and method in person.contact_methods for _, method in pages)
    assert all(0 <= minute <= 60 for minute, _ in pages)
    assert [minute for minute, _ in pages] == sorted(minute for minute, _ in pages)


@PROPERTY
@given(valid_items)
def test_each_rule_on_a_verified_method_is_paged_and_no_other(item):
    person = parse_person(item, written=True)
    verified = {m["id"] for m in item.get("contact_methods", []) if m["verified"]}
    expected = sorted((r["after_minutes"], r["contact"]) for r in item.get("rules", []) if r["contact"] in verified)
    assert sorted((minute, method.id) for minute, method in person.pages()) == expected


# -- what a refusal says, and the rules' remaining edges (each a change `make mutate` showed no test noticed) --

@pytest.mark.parametrize("field", ["contact_methods", "rules"])
def test_methods_or_rules_that_are_no_list_are_refused_naming_the_field(field):
    error = refused({"member": "U0AAAAAA1", field: {"mobile": "+4915112345678"}})
    assert str(error) == f"person U0AAAAAA1: {field} must be a list"


def test_a_rule_that_is_no_object_is_refused_naming_its_index():
    error = refused({**ANA, "rules": [{"after_minutes": 1, "contact": "mobile"}, "mobile at 2"]})
    assert str(error) == "person U0AAAAAA1: rules[1] must be an object"


def test_an_unknown_rule_field_is_refused_listing_the_fields_a_rule_has():
    error = refused({**ANA, "rules": [{"after_minutes": 1, "contact": "mobile", "repeat": 2}]})
    assert str(error) == "person U0AAAAAA1: rules[0].repeat is not a field (fields: after_minutes, contact)"


def test_minutes_out_of_range_are_refused_quoting_what_was_written():
    error = refused({**ANA, "rules": [{"after_minutes": 61, "contact": "mobile"}]})
    assert str(error) == "person U0AAAAAA1: rules[0].after_minutes must be a whole number of minutes from 0 to 60, got 61"


def test_a_rule_naming_no_method_lists_the_ids_there_are_or_says_none_are_defined():
    error = refused({**ANA, "rules": [{"after_minutes": 2, "contact": "pager"}]})
    assert error.problem == "must be 'slack' or a contact method's id (mobile, mobile-call, work-mail), got 'pager'"
    error = refused({"member": "U0AAAAAA1", "rules": [{"after_minutes": 2, "contact": "pager"}]})
    assert error.problem == "must be 'slack' or a contact method's id (none defined), got 'pager'"


def test_the_same_rule_twice_is_refused_naming_the_second():
    # One method at one minute is one contact: written twice it would page twice
    error = refused({**ANA, "rules": [{"after_minutes": 1, "contact": "mobile"}, {"after_minutes": 1, "contact": "mobile"}]})
    assert str(error) == "person U0AAAAAA1: rules[1] repeats 'mobile' at minute 1"


def test_two_rules_at_one_minute_both_page_in_the_order_written():
    # A text and a call both at minute 2: both armed, the text first as written (the methods themselves
    # have no order, so pages are ordered by minute alone)
    item = {**ANA, "rules": [{"after_minutes": 2, "contact": "mobile"}, {"after_minutes": 2, "contact": "mobile-call"}]}
    assert parse_person(item).pages() == [(2, MOBILE), (2, CALL)]


def test_the_last_code_9999_is_given_when_every_other_is_held():
    assert free_code({str(number): {} for number in range(1, 9999)}) == "9999"


def test_with_every_code_held_the_error_says_so():
    with pytest.raises(ValueError, match=r"^every reply code 1-9999 is held$"):
        free_code({str(number): {} for number in range(1, 10000)})


def test_the_summary_of_a_person_with_nothing_says_none_twice():
    assert summary(parse_person({"member": "U0BBBBBB2", "name": "Ben"})) == [
        "U0BBBBBB2 (Ben)", "Contact methods: none", "Rules: none (only the channel post)"]


def test_an_update_of_fields_all_absent_only_removes_them_and_keeps_the_apps_fields():
    # A person's file with no name and no rules: those fields leave the item, the reply codes stay
    # (DynamoDB UpdateExpression: "REMOVE action1, action2"; API Reference, UpdateItem)
    update = person_update("U0AAAAAA1", {}, ("name", "rules"))
    assert update == {"Key": {"member": "U0AAAAAA1"}, "UpdateExpression": "REMOVE #f0, #f1",
                      "ExpressionAttributeNames": {"#f0": "name", "#f1": "rules"}}
    with mock_aws():
        table = boto3.resource("dynamodb", region_name="us-east-1").create_table(
            TableName="people", KeySchema=[{"AttributeName": "member", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "member", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
        table.put_item(Item={"member": "U0AAAAAA1", "name": "Ana", "rules": [], "reply_codes": {"1": "x"}})
        table.update_item(**update)
        assert table.get_item(Key={"member": "U0AAAAAA1"})["Item"] == {"member": "U0AAAAAA1", "reply_codes": {"1": "x"}}


def test_an_update_over_fields_as_read_is_conditional_on_each_of_them():
    # Read with rules and no name: written only while the rules are those and there is still no name
    update = person_update("U0AAAAAA1", {"rules": []}, ("name", "rules"), before={"rules": [{"after_minutes": 0, "contact": "slack"}]})
    assert update["UpdateExpression"] == "SET #f1 = :a1 REMOVE #f0"
    assert update["ConditionExpression"] == "attribute_not_exists(#f0) AND #f1 = :b1"
    assert update["ExpressionAttributeValues"] == {":a1": [], ":b1": [{"after_minutes": 0, "contact": "slack"}]}


@pytest.mark.parametrize("name", ["", "   ", "A" * 101, 7])
def test_a_name_is_a_non_empty_string_of_at_most_100_characters(name):
    error = refused({**ANA, "name": name}, written=True)
    assert str(error) == "person U0AAAAAA1: name must be a non-empty string of at most 100 characters"


def test_a_name_of_100_characters_is_taken():
    assert parse_person({**ANA, "name": "A" * 100}).name == "A" * 100


def test_an_item_or_member_that_cannot_name_anyone_is_shown_as_a_question_mark():
    assert str(refused(["U0AAAAAA1"])) == "person ?: item must be an object"  # type: ignore[arg-type]
    assert str(refused({**ANA, "member": 7})) == "person ?: member must be a Slack member ID such as U0AAAAAA1, got 7"
    assert str(refused({**ANA, "member": "ana"})) == "person ana: member must be a Slack member ID such as U0AAAAAA1, got 'ana'"


def test_a_field_refused_in_a_file_says_whether_the_app_keeps_it_or_what_the_fields_are():
    assert str(refused({**ANA, "reply_codes": {}}, written=True)) == "person U0AAAAAA1: reply_codes is kept by the app; leave it out"
    assert str(refused({**ANA, "phone": "+4915112345678"})) == (
        "person U0AAAAAA1: phone is not a field (fields: member, name, contact_methods, rules)")


def test_at_most_ten_contact_methods():
    ten = [{"id": f"phone-{n}", "type": "sms", "address": f"+49151123456{n:02d}"} for n in range(10)]
    assert len(parse_person({"member": "U0AAAAAA1", "contact_methods": ten}).contact_methods) == 10
    eleven = ten + [{"id": "phone-10", "type": "sms", "address": "+4915112345610"}]
    assert str(refused({"member": "U0AAAAAA1", "contact_methods": eleven})) == (
        "person U0AAAAAA1: contact_methods must have at most 10 methods, got 11")


def test_a_method_that_is_no_object_or_has_an_unknown_field_is_refused_naming_it():
    assert str(refused({"member": "U0AAAAAA1", "contact_methods": ["+4915112345678"]})) == (
        "person U0AAAAAA1: contact_methods[0] must be an object")
    methods = [{**ANA["contact_methods"][0], "label": "mine"}]
    assert str(refused({"member": "U0AAAAAA1", "contact_methods": methods})) == (
        "person U0AAAAAA1: contact_methods[0].label is not a field (fields: id, type, address, verified)")


@pytest.mark.parametrize("method_id", [7, None, "Mobile", "-mobile", "m" * 33])
def test_a_method_id_is_1_to_32_lower_case_letters_digits_or_dashes(method_id):
    methods = [{"id": method_id, "type": "sms", "address": "+4915112345678"}]
    error = refused({"member": "U0AAAAAA1", "contact_methods": methods})
    assert str(error) == ("person U0AAAAAA1: contact_methods[0].id must be 1-32 lower-case letters, digits or dashes, "
                          f"not 'slack', got {method_id!r}")


def test_an_id_used_twice_and_an_unknown_type_are_refused_saying_which():
    methods = [ANA["contact_methods"][0], {**ANA["contact_methods"][1], "id": "mobile"}]
    assert refused({"member": "U0AAAAAA1", "contact_methods": methods}).problem == "'mobile' is used twice"
    pager = [{"id": "pager", "type": "pager", "address": "+4915112345678"}]
    assert str(refused({"member": "U0AAAAAA1", "contact_methods": pager})) == (
        "person U0AAAAAA1: contact_methods[0].type must be one of sms, voice, email, got 'pager'")


def test_verified_is_true_or_false_and_an_address_refusal_quotes_the_address():
    methods = [{**ANA["contact_methods"][0], "verified": "yes"}]
    assert str(refused({"member": "U0AAAAAA1", "contact_methods": methods})) == (
        "person U0AAAAAA1: contact_methods[0].verified must be true or false, got 'yes'")
    mail = [{"id": "work-mail", "type": "email", "address": "ana.example.com"}]
    assert refused({"member": "U0AAAAAA1", "contact_methods": mail}).problem == (
        "must be an e-mail address such as ana@example.com, got 'ana.example.com'")
    phone = [{"id": "mobile", "type": "sms", "address": "015112345678"}]
    assert refused({"member": "U0AAAAAA1", "contact_methods": phone}).problem == (
        "must be a phone number in E.164 form such as +4915112345678, got '015112345678'")


def test_an_email_address_of_254_characters_is_taken_and_255_refused():
    # 254 characters is the longest address a mail path carries (RFC 5321, 4.5.3.1.3: a path of 256 octets
    # including its angle brackets)
    longest = "a" * 242 + "@example.com"
    mail = [{"id": "work-mail", "type": "email", "address": longest}]
    assert parse_person({"member": "U0AAAAAA1", "contact_methods": mail}).contact_methods[0].address == longest
    mail = [{"id": "work-mail", "type": "email", "address": "a" + longest}]
    assert refused({"member": "U0AAAAAA1", "contact_methods": mail}).field == "contact_methods[0].address"

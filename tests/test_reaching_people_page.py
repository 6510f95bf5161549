"""docs/reaching-people.md against the code it describes: the item's limits, the refusal it quotes, how a
text ends and the replies it says count, so the page cannot drift from patterns_common/people.py."""

from __future__ import annotations

import json
import re

import pytest

from patterns_common import people
from patterns_common.people import InvalidPerson, parse_person, parse_reply, reply_instruction
from tests.conftest import ROOT
from tests.lambda_loader import load_lambda_module

PAGE = (ROOT / "docs" / "reaching-people.md").read_text()


def test_the_pages_example_item_is_one_the_app_accepts_as_written():
    # Given: the page's item, the form
    [example] = re.findall(r"```json\n(.*?)```", PAGE, re.DOTALL)
    # When
    person = parse_person(json.loads(example), written=True)
    # Then: the rules it arms are the issue's: a text at 1, a call at 3, an e-mail at 5 (slack is the post)
    assert [(minute, method.id) for minute, method in person.pages()] == [(1, "mobile"), (3, "mobile-call"), (5, "work-mail")]


@pytest.mark.parametrize(("phrase", "limit"), [
    ("| `name` | How the person is called | Optional; 1 to {} characters |", people.MAX_NAME_LENGTH),
    ("| `contact_methods` | Where the person can be reached | At most {} |", people.MAX_METHODS),
    ("| `rules` | Which method is tried, how many minutes after a round notifies the person | At most {} |", people.MAX_RULES),
    ("| `rules[].after_minutes` | The minute | A whole number from 0 to {} |", people.MAX_AFTER_MINUTES),
    ("an e-mail address of at most {} characters", people.MAX_EMAIL_LENGTH),
])
def test_the_limits_the_page_gives_are_the_ones_the_app_checks(phrase, limit):
    assert phrase.format(limit) in " ".join(PAGE.split())


def test_the_refusal_the_page_quotes_is_the_one_a_slack_rule_past_minute_0_gets():
    # Given: a slack rule at minute 1, refused by the rule (the channel post is made at once)
    item = {"member": "U0AAAAAA1", "rules": [{"after_minutes": 0, "contact": "slack"}, {"after_minutes": 1, "contact": "slack"}]}
    # When
    with pytest.raises(InvalidPerson) as refused:
        parse_person(item, written=True)
    # Then
    assert str(refused.value) in " ".join(PAGE.split())


def test_a_text_ends_as_the_page_says_and_the_replies_it_shows_count():
    # The ending, with the page's code 12
    assert reply_instruction("12") == "reply 12a to acknowledge, 12r to resolve"
    # The page's example text is the one Contact sends for its message and code 12
    example = "Disk above 90% on db-1"
    assert load_lambda_module("alert_contact", "alert_contact_logic").sms_text(example, "12") == f"{example}\n{reply_instruction('12')}"
    assert f"```text\n  {example}\n  {reply_instruction('12')}\n  ```" in PAGE
    # "`12a`, `12 A` and ` 12r ` all count"
    assert [parse_reply(body) for body in ("12a", "12 A", " 12r ")] == [
        ("acknowledge", "12"), ("acknowledge", "12"), ("resolve", "12")]

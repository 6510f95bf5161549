"""/oncall contact add's sends against the emulator's End User Messaging and SES, each refusal AWS documents
(issue 39): moto has no End User Messaging, so these run people_slash on an emulator of their own.

What AWS does, as tests/test_emulator_sms.py cites it: in the SMS sandbox a send to a number not verified
is ``ConflictException`` ``DESTINATION_PHONE_NUMBER_NOT_VERIFIED``, to an opted-out number
``ConflictException`` ``DESTINATION_PHONE_NUMBER_OPTED_OUT``, past the $1.00 monthly limit
``ServiceQuotaExceededException`` ``MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT``; ``CreateVerifiedDestinationNumber``
of a number already added is ``ConflictException`` ``RESOURCE_ALREADY_EXISTS``, and a new code sent replaces
the last. SES in its sandbox refuses mail to an address that is no verified identity (``MessageRejected``).
What the person is told, and that nothing is stored on a refusal, are issue 39's rules.
"""

from __future__ import annotations

import json
import re

import pytest

from emulator.server import ACCOUNT_ID, LocalAws
from emulator.ses.patches import mail_log
from emulator.sms import PHONE_NUMBER, verify_destination
from tests.lambda_loader import load_lambda_module
from tests.test_emulator_sms import texts_to

pytestmark = pytest.mark.emulator

A = "U0AAAAAA1"
FROM = "alerts@example.com"
CODE = re.compile(r"\b([0-9]{6})\b")


@pytest.fixture
def aws(monkeypatch):
    slash = load_lambda_module("alert_actions", "people_slash")
    made = (slash.people_table, slash.sms_voice, slash.ses)
    with LocalAws(enforce_iam=False) as running:
        monkeypatch.setenv("AWS_ENDPOINT_URL", running.endpoint_url)
        monkeypatch.setenv("PEOPLE_TABLE_NAME", "people")
        monkeypatch.setenv("SMS_ORIGINATION_IDENTITY", PHONE_NUMBER)
        monkeypatch.setenv("ALERT_EMAIL_FROM", FROM)
        running.client("dynamodb").create_table(
            TableName="people", KeySchema=[{"AttributeName": "member", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "member", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")
        running.client("sesv2").create_email_identity(EmailIdentity=FROM)
        for client in made:
            client.cache_clear()
        yield running
        for client in made:  # bound to this emulator's endpoint
            client.cache_clear()


def ask(aws, text: str) -> str:
    slash = load_lambda_module("alert_actions", "people_slash")
    return json.loads(slash.answer({"user_id": A, "text": text}, aws.clock.now())["body"])["text"]


def stored(aws) -> dict | None:
    return aws.client("dynamodb").get_item(TableName="people", Key={"member": {"S": A}}).get("Item")


def test_adding_a_number_again_in_the_sandbox_has_aws_send_a_new_code_that_replaces_the_first(aws):
    number = "+14255550101"
    ask(aws, f"contact add sms {number}")
    first = CODE.search(texts_to(aws, number)[-1]).group(1)
    again = ask(aws, f"contact add sms {number}")
    assert "(the number was registered with AWS before: an earlier code is void)" in again
    second = CODE.search(texts_to(aws, number)[-1]).group(1)
    # The app's own texts never reached the number: only AWS's two codes did
    assert texts_to(aws, number) == [f"Your verification code is {first}", f"Your verification code is {second}"]
    if first != second:
        assert ask(aws, f"contact verify mobile {first}") == "That code is wrong: mobile is not verified. 4 tries left."
    assert ask(aws, f"contact verify mobile {second}").startswith("mobile is verified.")


def test_a_number_verified_with_aws_gets_the_apps_own_code_by_text(aws):
    number = "+14255550102"
    verify_destination(aws, number)
    assert ask(aws, f"contact add sms {number}").endswith(
        "I texted a 6-digit code to it. Type `/oncall contact verify mobile <code>` within 10 minutes.")
    body = texts_to(aws, number)[-1]
    code = CODE.search(body).group(1)
    assert body == f"Your alert paging code is {code}. In Slack: /oncall contact verify mobile {code} (valid 10 minutes)"
    assert ask(aws, f"contact verify mobile {code}").startswith("mobile is verified.")


def test_an_opted_out_number_is_refused_with_awss_reason_and_nothing_is_stored(aws):
    number = "+14255550103"
    verify_destination(aws, number)
    aws.client("pinpoint-sms-voice-v2").put_opted_out_number(OptOutListName="Default", OptedOutNumber=number)
    answer = ask(aws, f"contact add sms {number}")
    assert answer.startswith(f"Not added: AWS refused the text to {number}: ConflictException DESTINATION_PHONE_NUMBER_OPTED_OUT: ")
    assert stored(aws) is None


def test_the_spend_limit_reached_is_refused_with_awss_reason_and_nothing_is_stored(aws):
    number = "+14255550104"
    verify_destination(aws, number)
    aws.sms.sms_part_usd = 1.01  # one text costs more than the sandbox's $1.00 a month
    answer = ask(aws, f"contact add sms {number}")
    assert answer.startswith(
        f"Not added: AWS refused the text to {number}: ServiceQuotaExceededException MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT: ")
    assert stored(aws) is None


def test_a_call_in_the_sandbox_has_aws_call_its_code(aws):
    number = "+14255550105"
    answer = ask(aws, f"contact add voice {number}")
    assert f"AWS called {number} with its own verification code" in answer
    [called] = [e for e in aws.sms.phone_log if e["to"] == number]
    assert called["kind"] == "voice"
    assert ask(aws, f"contact verify mobile-call {CODE.search(called['body']).group(1)}").startswith("mobile-call is verified.")


def test_an_email_the_ses_sandbox_refuses_stores_nothing_and_one_it_takes_carries_the_code(aws):
    answer = ask(aws, "contact add email ana@example.org")
    assert answer.startswith("Not added: SES refused the e-mail to ana@example.org (MessageRejected")
    assert "an administrator verifies the address in SES, or moves the account out of the SES sandbox" in answer
    assert stored(aws) is None
    # Once an administrator verifies the address, the code is mailed
    aws.client("sesv2").create_email_identity(EmailIdentity="ana@example.org")
    assert ask(aws, "contact add email ana@example.org").startswith("Added work-mail (email ana@example.org), not verified yet")
    [mail] = [m for m in mail_log("us-east-1", ACCOUNT_ID) if m["to"] == "ana@example.org"]
    assert (mail["from"], mail["subject"]) == (FROM, "Your alert paging code")
    assert ask(aws, f"contact verify work-mail {CODE.search(mail['text']).group(1)}").startswith("work-mail is verified.")

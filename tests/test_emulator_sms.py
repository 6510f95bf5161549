"""End User Messaging SMS and voice, and SES v2, in the emulator: as strict as a new AWS account.

Each test starts its own emulator (no app deployed: these are the services the phone channel will
call) and talks to it with boto3. Expected values come from AWS's documentation:

- End User Messaging SMS User Guide, "SMS/MMS and Voice sandbox"
  (https://docs.aws.amazon.com/sms-voice/latest/userguide/sandbox.html): new accounts are in the
  sandbox; "a monthly SMS spending limit of $1.00 (USD)"; SMS "only to verified destination phone
  numbers. You can add up to 10 verified numbers"; the voice sandbox: "a daily limit of 20 voice
  messages", "a maximum of five voice messages to a single recipient during a 24-hour period", "a
  maximum of five calls per minute", "voice messages only to verified destination phone numbers".
- "Example of a two-way SMS message payload for Amazon SNS topics"
  (https://docs.aws.amazon.com/sms-voice/latest/userguide/two-way-sms-payload.html): the fields
  originationNumber, destinationNumber, messageKeyword, messageBody, inboundMessageId and
  previousPublishedMessageId ("The unique identifier of the message that the customer is responding to").
- API Reference (https://docs.aws.amazon.com/pinpoint/latest/apireference_smsvoicev2/), whose error
  shapes botocore models: ``ConflictException`` Reason ``DESTINATION_PHONE_NUMBER_NOT_VERIFIED``,
  ``DESTINATION_PHONE_NUMBER_OPTED_OUT``, ``VERIFICATION_ALREADY_COMPLETE``;
  ``ServiceQuotaExceededException`` Reason ``MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT``,
  ``VERIFIED_DESTINATION_NUMBERS_PER_ACCOUNT``, ``DAILY_DESTINATION_CALL_LIMIT``; ``ValidationException``
  Reason ``VERIFICATION_CODE_MISMATCH``, ``TWO_WAY_CHANNEL_NOT_PRESENT``; ``VerifyDestinationNumber``'s
  Status ``PENDING`` | ``VERIFIED``; ``SpendLimit`` named ``TEXT_MESSAGE_MONTHLY_SPEND_LIMIT``.
- SMS character limits (AWS re:Post, "Why did I incur higher than expected SMS charges"): a text of
  GSM 7-bit characters holds 160 characters, any other 70; a longer one is sent as several parts, each
  charged (153 and 67 characters a part once split, the concatenation header taking the rest).
- SES Developer Guide, "Verified identities in Amazon SES": a sender must be a verified identity, and
  "If your account is still in the Amazon SES sandbox, you also need to verify any email addresses
  which you plan on sending email to, unless you're sending to test inboxes provided by the Amazon SES
  mailbox simulator"; the refusal, AWS re:Post "ses-554-400-message-rejected-error": "400 Message
  rejected" with "Email address is not verified. The following identities failed the check in region
  <REGION>: identity0, identity1".
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone

import pytest
from botocore.exceptions import ClientError

from emulator.server import LocalAws
from emulator.sms import PHONE_NUMBER, PHONE_NUMBER_ID, verify_destination

# These tests start emulators of their own, whose patches to moto are process-wide: they run with the
# tests on the deployment (conftest.py), not beside the handler tests on moto.
pytestmark = pytest.mark.emulator

ANA = "+4915112345678"
BEN = "+14255550182"


@pytest.fixture
def aws():
    """A fresh emulator per test: a new account, with nothing verified and nothing spent."""
    with LocalAws(enforce_iam=False) as running:
        yield running


def texts_to(aws, number: str) -> list[str]:
    return [e["body"] for e in aws.sms.phone_log if e["to"] == number and e["kind"] == "sms"]


def refusal(call) -> tuple[str, str | None]:
    """The error code and Reason AWS's answer carries."""
    with pytest.raises(ClientError) as refused:
        call()
    return refused.value.response["Error"]["Code"], refused.value.response.get("Reason")


def text(aws, number: str, body: str = "Disk full on db-1") -> dict:
    return aws.client("pinpoint-sms-voice-v2").send_text_message(
        DestinationPhoneNumber=number, OriginationIdentity=PHONE_NUMBER_ID, MessageBody=body)


def call(aws, number: str) -> dict:
    return aws.client("pinpoint-sms-voice-v2").send_voice_message(
        DestinationPhoneNumber=number, OriginationIdentity=PHONE_NUMBER, MessageBody="Disk full on db-1", VoiceId="JOANNA")


def next_utc_day(aws, hour: int = 1) -> None:
    """Move the simulated clock to ``hour`` o'clock UTC tomorrow: a day's limits start afresh."""
    now = datetime.fromtimestamp(aws.clock.now(), timezone.utc)
    target = datetime(now.year, now.month, now.day, hour, tzinfo=timezone.utc) + timedelta(days=1)
    aws.clock.advance(target.timestamp() - aws.clock.now())


# -- the phone number -------------------------------------------------------------------------------

def test_the_account_owns_one_number_whose_two_way_channel_is_an_sns_topic_set_by_update_phone_number(aws):
    sms = aws.client("pinpoint-sms-voice-v2")
    # Given: the account's number, as DescribePhoneNumbers lists it: two-way SMS not yet enabled
    [number] = sms.describe_phone_numbers()["PhoneNumbers"]
    assert (number["PhoneNumber"], number["PhoneNumberId"], number["TwoWayEnabled"]) == (PHONE_NUMBER, PHONE_NUMBER_ID, False)
    assert set(number["NumberCapabilities"]) == {"SMS", "VOICE"} and number["OptOutListName"] == "Default"
    # When: two-way is enabled without a channel
    # Then: refused, the channel being required
    assert refusal(lambda: sms.update_phone_number(PhoneNumberId=PHONE_NUMBER_ID, TwoWayEnabled=True)) == (
        "ValidationException", "TWO_WAY_CHANNEL_NOT_PRESENT")
    # When: enabled with an SNS topic as the channel
    topic = aws.client("sns").create_topic(Name="sms-replies")["TopicArn"]
    updated = sms.update_phone_number(PhoneNumberId=PHONE_NUMBER_ID, TwoWayEnabled=True, TwoWayChannelArn=topic)
    # Then: the number says so, in the answer and when described again
    assert (updated["TwoWayEnabled"], updated["TwoWayChannelArn"]) == (True, topic)
    [again] = sms.describe_phone_numbers(PhoneNumberIds=[PHONE_NUMBER_ID])["PhoneNumbers"]
    assert (again["TwoWayEnabled"], again["TwoWayChannelArn"]) == (True, topic)
    # And: a number the account does not own is not found
    assert refusal(lambda: sms.describe_phone_numbers(PhoneNumberIds=["phone-ffffffffffffffffffffffffffffffff"]))[0] == (
        "ResourceNotFoundException")


# -- the sandbox --------------------------------------------------------------------------------------

def test_a_new_account_is_in_the_sandbox_and_texts_and_calls_only_verified_numbers(aws):
    sms = aws.client("pinpoint-sms-voice-v2")
    # Given: a new account
    assert sms.describe_account_attributes()["AccountAttributes"] == [{"Name": "ACCOUNT_TIER", "Value": "SANDBOXED"}]
    # When: it texts and calls a number nobody verified
    # Then: both are refused as AWS refuses them, and nothing reaches the phone
    assert refusal(lambda: text(aws, ANA)) == ("ConflictException", "DESTINATION_PHONE_NUMBER_NOT_VERIFIED")
    assert refusal(lambda: call(aws, ANA)) == ("ConflictException", "DESTINATION_PHONE_NUMBER_NOT_VERIFIED")
    assert aws.sms.phone_log == []
    # When: the account leaves the sandbox (production access granted)
    aws.sms.sandbox = False
    # Then: the same text is sent
    message_id = text(aws, ANA)["MessageId"]
    assert [(e["to"], e["from"], e["kind"], e["message_id"]) for e in aws.sms.phone_log] == [(ANA, PHONE_NUMBER, "sms", message_id)]


def test_a_destination_is_verified_with_the_code_texted_to_it(aws):
    sms = aws.client("pinpoint-sms-voice-v2")
    # Given: Ana's number added as a verified destination
    created = sms.create_verified_destination_number(DestinationPhoneNumber=ANA)
    number_id = created["VerifiedDestinationNumberId"]
    # Then: it is pending, and not yet texted
    assert (created["DestinationPhoneNumber"], created["Status"]) == (ANA, "PENDING")
    assert refusal(lambda: text(aws, ANA)) == ("ConflictException", "DESTINATION_PHONE_NUMBER_NOT_VERIFIED")
    # When: the code is asked for
    sms.send_destination_number_verification_code(VerifiedDestinationNumberId=number_id, VerificationChannel="TEXT")
    # Then: it is texted to her number, from the account's
    [sent] = [e for e in aws.sms.phone_log if e["to"] == ANA]
    assert sent["from"] == PHONE_NUMBER and sent["kind"] == "sms"
    code = sent["body"].rsplit(" ", 1)[1]
    assert code.isdigit()
    # When: a wrong code is typed
    wrong = "1" + code[1:] if code[0] != "1" else "2" + code[1:]
    # Then: refused, and still pending
    assert refusal(lambda: sms.verify_destination_number(VerifiedDestinationNumberId=number_id, VerificationCode=wrong)) == (
        "ValidationException", "VERIFICATION_CODE_MISMATCH")
    # When: the code texted is typed
    verified = sms.verify_destination_number(VerifiedDestinationNumberId=number_id, VerificationCode=code)
    # Then: verified, as DescribeVerifiedDestinationNumbers says too; verifying again is refused
    assert verified["Status"] == "VERIFIED"
    [listed] = sms.describe_verified_destination_numbers(DestinationPhoneNumbers=[ANA])["VerifiedDestinationNumbers"]
    assert (listed["VerifiedDestinationNumberId"], listed["Status"]) == (number_id, "VERIFIED")
    assert refusal(lambda: sms.verify_destination_number(VerifiedDestinationNumberId=number_id, VerificationCode=code)) == (
        "ConflictException", "VERIFICATION_ALREADY_COMPLETE")
    # And: she is texted and called now
    text(aws, ANA, "Disk full on db-1")
    call(aws, ANA)
    assert [(e["kind"], e["body"]) for e in aws.sms.phone_log[1:]] == [("sms", "Disk full on db-1"), ("voice", "Disk full on db-1")]


def test_the_sandbox_holds_at_most_10_verified_destination_numbers(aws):
    sms = aws.client("pinpoint-sms-voice-v2")
    # Given: ten numbers added
    for n in range(10):
        sms.create_verified_destination_number(DestinationPhoneNumber=f"+4930555{n:04d}")
    assert len(sms.describe_verified_destination_numbers()["VerifiedDestinationNumbers"]) == 10
    # When: an eleventh is added
    # Then: refused for the account's quota
    assert refusal(lambda: sms.create_verified_destination_number(DestinationPhoneNumber=ANA)) == (
        "ServiceQuotaExceededException", "VERIFIED_DESTINATION_NUMBERS_PER_ACCOUNT")


# -- opt-outs -------------------------------------------------------------------------------------------

def test_a_number_on_the_opt_out_list_is_not_texted_or_called(aws):
    sms = aws.client("pinpoint-sms-voice-v2")
    # Given: Ana verified, then put on the account's Default opt-out list
    verify_destination(aws, ANA)
    put = sms.put_opted_out_number(OptOutListName="Default", OptedOutNumber=ANA)
    assert (put["OptedOutNumber"], put["EndUserOptedOut"]) == (ANA, False)
    # When: she is texted and called
    # Then: both refused as AWS refuses a send to an opted-out number
    assert refusal(lambda: text(aws, ANA)) == ("ConflictException", "DESTINATION_PHONE_NUMBER_OPTED_OUT")
    assert refusal(lambda: call(aws, ANA)) == ("ConflictException", "DESTINATION_PHONE_NUMBER_OPTED_OUT")
    assert [e["OptedOutNumber"] for e in sms.describe_opted_out_numbers(OptOutListName="Default")["OptedOutNumbers"]] == [ANA]
    # And: a list the account does not have is not found
    assert refusal(lambda: sms.put_opted_out_number(OptOutListName="Other", OptedOutNumber=ANA))[0] == "ResourceNotFoundException"


def test_a_reply_stop_opts_its_sender_out(aws):
    sms = aws.client("pinpoint-sms-voice-v2")
    # Given: Ana verified and texted
    verify_destination(aws, ANA)
    text(aws, ANA)
    # When: she replies STOP
    aws.sms.receive(ANA, "STOP")
    # Then: she is on the opt-out list, opted out by herself, and is not texted again
    [entry] = sms.describe_opted_out_numbers(OptOutListName="Default")["OptedOutNumbers"]
    assert (entry["OptedOutNumber"], entry["EndUserOptedOut"]) == (ANA, True)
    assert refusal(lambda: text(aws, ANA)) == ("ConflictException", "DESTINATION_PHONE_NUMBER_OPTED_OUT")


# -- the spend limit --------------------------------------------------------------------------------------

def test_a_text_that_would_pass_the_monthly_spend_limit_of_1_dollar_is_refused(aws):
    sms = aws.client("pinpoint-sms-voice-v2")
    # Given: the new account's limit, and (for round sums) texts at $0.25 a message part
    assert sms.describe_spend_limits()["SpendLimits"] == [
        {"Name": "TEXT_MESSAGE_MONTHLY_SPEND_LIMIT", "EnforcedLimit": 1, "MaxLimit": 1, "Overridden": False}]
    verify_destination(aws, ANA)  # the verification code is not charged: AWS waives the first one
    aws.sms.sms_part_usd = 0.25
    # When: three one-part texts are sent ($0.75)
    for n in range(3):
        text(aws, ANA, f"alert {n}")
    # Then: a 161-character GSM text (two parts, $0.50) would pass $1.00: refused
    assert refusal(lambda: text(aws, ANA, "x" * 161)) == ("ServiceQuotaExceededException", "MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT")
    # And: so would a 71-character text outside GSM's alphabet (two parts of 67)
    assert refusal(lambda: text(aws, ANA, "Ж" * 71)) == ("ServiceQuotaExceededException", "MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT")
    # When: a 160-character GSM text (one part, $0.25) is sent: exactly $1.00
    text(aws, ANA, "x" * 160)
    # Then: the next one-part text is refused
    assert refusal(lambda: text(aws, ANA, "one more")) == ("ServiceQuotaExceededException", "MONTHLY_SPEND_LIMIT_REACHED_FOR_TEXT")
    # When: the simulated clock reaches the next month
    now = datetime.fromtimestamp(aws.clock.now(), timezone.utc)
    first = datetime(now.year + now.month // 12, now.month % 12 + 1, 1, 0, 0, 1, tzinfo=timezone.utc)
    aws.clock.advance(first.timestamp() - aws.clock.now())
    # Then: the month's limit starts afresh
    assert text(aws, ANA, "one more")["MessageId"]


# -- the voice sandbox --------------------------------------------------------------------------------------

def test_the_voice_sandbox_calls_one_recipient_at_most_5_times_in_24_hours(aws):
    # Given: Ana verified, called five times an hour apart
    verify_destination(aws, ANA)
    next_utc_day(aws)
    for _ in range(5):
        call(aws, ANA)
        aws.clock.advance(3600)
    # When: she is called a sixth time within 24 hours of the first
    # Then: refused for the recipient's daily call limit
    assert refusal(lambda: call(aws, ANA)) == ("ServiceQuotaExceededException", "DAILY_DESTINATION_CALL_LIMIT")
    # When: 24 hours have passed since the first call
    aws.clock.advance(24 * 3600 - 5 * 3600)
    # Then: she is called again
    assert call(aws, ANA)["MessageId"]


def test_the_voice_sandbox_makes_at_most_5_calls_a_minute_and_20_a_day(aws):
    numbers = [f"+4915112345{n:03d}" for n in range(5)]
    for number in numbers:
        verify_destination(aws, number)
    next_utc_day(aws)
    # When: five calls are made within a minute
    for number in numbers:
        call(aws, number)
    # Then: a sixth is throttled; a minute later it goes through
    assert refusal(lambda: call(aws, numbers[0]))[0] == "ThrottlingException"
    aws.clock.advance(61)
    call(aws, numbers[0])
    # When: the day's calls reach 20 (four to each of five numbers, at most four a minute)
    for n in range(14):
        aws.clock.advance(15)
        call(aws, numbers[1 + n % 4])
    assert sum(1 for e in aws.sms.phone_log if e["kind"] == "voice") == 20
    # Then: the 21st that day is refused, though its recipient had fewer than five
    aws.clock.advance(60)
    assert refusal(lambda: call(aws, numbers[0]))[0] == "ServiceQuotaExceededException"
    # And: the next day calls are made again
    next_utc_day(aws)
    assert call(aws, numbers[0])["MessageId"]


# -- replies -------------------------------------------------------------------------------------------------

def test_a_reply_is_published_to_the_two_way_topic_in_the_documented_payload(aws):
    sms, sns, sqs = (aws.client(s) for s in ("pinpoint-sms-voice-v2", "sns", "sqs"))
    # Given: the number's two-way channel is a topic, which a queue reads
    topic = sns.create_topic(Name="sms-replies")["TopicArn"]
    queue = sqs.create_queue(QueueName="sms-replies")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "true"})
    sms.update_phone_number(PhoneNumberId=PHONE_NUMBER_ID, TwoWayEnabled=True, TwoWayChannelArn=topic)
    # Given: Ana was texted an alert
    verify_destination(aws, ANA)
    alert_id = text(aws, ANA, "Disk full on db-1: reply 12a to acknowledge, 12r to resolve")["MessageId"]
    # When: she replies
    reply = aws.sms.receive(ANA, "12a")
    # Then: the topic got the documented payload: her number, the account's, her text, the message she answers
    [message] = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1)["Messages"]
    payload = json.loads(message["Body"])
    assert set(payload) == {"originationNumber", "destinationNumber", "messageKeyword", "messageBody",
                            "inboundMessageId", "previousPublishedMessageId"}
    assert payload["originationNumber"] == ANA and payload["destinationNumber"] == PHONE_NUMBER
    assert payload["messageBody"] == "12a" and payload["previousPublishedMessageId"] == alert_id
    assert payload["inboundMessageId"] == reply["message_id"] and reply["published"]
    # And: her reply is in the phone log, from her number to the account's
    assert (aws.sms.phone_log[-1]["from"], aws.sms.phone_log[-1]["to"], aws.sms.phone_log[-1]["body"]) == (ANA, PHONE_NUMBER, "12a")


def test_a_reply_to_a_number_without_two_way_sms_reaches_no_topic(aws):
    # Given: the number's two-way SMS is not enabled
    # When: Ben texts it
    reply = aws.sms.receive(BEN, "hello")
    # Then: logged, published nowhere
    assert reply["published"] is None and aws.sms.phone_log[-1]["from"] == BEN


# -- the console's API --------------------------------------------------------------------------------------------

@pytest.fixture
def console(aws):
    from emulator.console import Console
    from emulator.session import Deployment

    # The console over an emulator with no app deployed: its Phone and E-mail pages need none.
    with Console(Deployment(aws=aws, slack=None, outputs={})) as running:
        yield running


def _get(console, path: str):
    with urllib.request.urlopen(console.url + path, timeout=30) as response:
        return json.loads(response.read())


def _post(console, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(console.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


# -- SES v2 -----------------------------------------------------------------------------------------------------

def _mail(aws, to: str, sender: str = "alerts@example.com") -> dict:
    return aws.client("sesv2").send_email(
        FromEmailAddress=sender, Destination={"ToAddresses": [to]},
        Content={"Simple": {"Subject": {"Data": "Disk full on db-1"},
                            "Body": {"Text": {"Data": "Acknowledge: https://example.com/ack"},
                                     "Html": {"Data": "<a href='https://example.com/ack'>Acknowledge</a>"}}}})


def test_ses_refuses_an_unverified_sender_and_in_the_sandbox_an_unverified_recipient(aws, console):
    ses = aws.client("sesv2")
    # Given: nothing verified
    # When: a mail is sent
    with pytest.raises(ClientError) as refused:
        _mail(aws, "ana@example.org")
    # Then: refused, naming both identities that failed
    assert refused.value.response["Error"]["Code"] == "MessageRejected"
    assert refused.value.response["Error"]["Message"] == (
        "Email address is not verified. The following identities failed the check in region US-EAST-1: "
        "alerts@example.com, ana@example.org")
    # When: the sender's domain is created as an identity
    created = ses.create_email_identity(EmailIdentity="example.com")
    # Then: verified at once (the emulator mails no link and sees no DNS)
    assert created["VerifiedForSendingStatus"] is True
    assert ses.get_email_identity(EmailIdentity="example.com")["VerificationStatus"] == "SUCCESS"
    # Then: still refused while the recipient is not verified, naming her only
    with pytest.raises(ClientError) as refused:
        _mail(aws, "ana@example.org")
    assert refused.value.response["Error"]["Message"].endswith("in region US-EAST-1: ana@example.org")
    # When: she is verified, or the mailbox simulator is written to
    ses.create_email_identity(EmailIdentity="ana@example.org")
    _mail(aws, "ana@example.org")
    _mail(aws, "success@simulator.amazonses.com")
    # Then: both sent; and out of the sandbox anyone receives mail
    aws.email_sandbox = False
    _mail(aws, "ben@example.net")
    assert [m["to"] for m in _get(console, "api/email")] == ["ana@example.org", "success@simulator.amazonses.com", "ben@example.net"]


def test_the_console_api_lists_texts_calls_and_mail_and_sends_a_reply(aws, console):
    topic = aws.client("sns").create_topic(Name="sms-replies")["TopicArn"]
    aws.client("pinpoint-sms-voice-v2").update_phone_number(PhoneNumberId=PHONE_NUMBER_ID, TwoWayEnabled=True,
                                                            TwoWayChannelArn=topic)
    verify_destination(aws, ANA)
    text(aws, ANA, "Disk full on db-1: reply 12a to acknowledge, 12r to resolve")
    call(aws, ANA)
    # When: a person replies from Ana's phone through the console
    status, sent = _post(console, "api/phone/reply", {"from": ANA, "body": "12a"})
    # Then: GET /api/phone lists every text and call in the order sent, each {"to", "from", "kind", "body"}
    assert status == 201 and sent["published"]
    listed = _get(console, "api/phone")
    assert all(set(entry) == {"to", "from", "kind", "body"} for entry in listed)
    assert [(e["to"], e["from"], e["kind"]) for e in listed] == [
        (ANA, PHONE_NUMBER, "sms"), (ANA, PHONE_NUMBER, "sms"), (ANA, PHONE_NUMBER, "voice"), (PHONE_NUMBER, ANA, "sms")]
    assert listed[-1]["body"] == "12a"
    # And: a reply from something that is not a phone number is refused, saying why
    status, refused = _post(console, "api/phone/reply", {"from": "Ana", "body": "12a"})
    assert status == 400 and "E.164" in refused["error"]
    # And: GET /api/email lists each mail {"to", "from", "subject", "text"}, the text body
    aws.client("sesv2").create_email_identity(EmailIdentity="example.com")
    _mail(aws, "ana@example.com")
    assert _get(console, "api/email") == [{"to": "ana@example.com", "from": "alerts@example.com", "subject": "Disk full on db-1",
                                       "text": "Acknowledge: https://example.com/ack"}]


# -- the console's pages, in a real headless Chromium ---------------------------------------------------------------

def test_the_phone_page_shows_texts_and_calls_per_phone_and_its_reply_box_texts_the_account(aws, console, browser):
    from selenium.webdriver.common.by import By

    from tests.browser import until

    # Given: two-way SMS to a queue-read topic, Ana texted and called, Ben texted
    sns, sqs = aws.client("sns"), aws.client("sqs")
    topic = sns.create_topic(Name="sms-replies")["TopicArn"]
    queue = sqs.create_queue(QueueName="sms-replies")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn, Attributes={"RawMessageDelivery": "true"})
    aws.client("pinpoint-sms-voice-v2").update_phone_number(PhoneNumberId=PHONE_NUMBER_ID, TwoWayEnabled=True,
                                                            TwoWayChannelArn=topic)
    verify_destination(aws, ANA)
    verify_destination(aws, BEN)
    text(aws, ANA, "Disk full on db-1: reply 12a to acknowledge, 12r to resolve")
    call(aws, ANA)
    # When: the Phone page is open
    browser.get(console.url + "#/phone")
    ana = f'section[data-phone="{ANA}"]'
    until(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, f"{ana} .phone-log li")) == 3, "Ana's texts and call drawn")
    # Then: each phone has its own card: Ana's code, alert and call; Ben's code
    items = browser.find_elements(By.CSS_SELECTOR, f"{ana} .phone-log li")
    assert [i.get_attribute("data-kind") for i in items] == ["sms", "sms", "voice"]
    assert "reply 12a to acknowledge" in items[1].text and items[2].find_element(By.CSS_SELECTOR, ".badge").text == "call"
    assert len(browser.find_elements(By.CSS_SELECTOR, f'section[data-phone="{BEN}"] .phone-log li')) == 1
    # When: a person types a reply in Ana's box
    box = browser.find_element(By.CSS_SELECTOR, f"{ana} .reply-text")
    box.send_keys("12a")
    browser.find_element(By.CSS_SELECTOR, f"{ana} .reply-form button").click()
    # Then: her card shows it, sent from her phone, and the page says it was published
    until(browser, lambda: len(browser.find_elements(By.CSS_SELECTOR, f"{ana} .phone-log li.from-phone")) == 1, "reply drawn")
    assert browser.find_element(By.CSS_SELECTOR, f"{ana} .phone-log li.from-phone .phone-body").text == "12a"
    until(browser, lambda: "published to the number's two-way topic" in browser.find_element(By.ID, "reply-outcome").text,
          "outcome shown")
    browser.save_screenshot("/tmp/console-phone.png")
    # And: the topic's reader got her reply
    [message] = sqs.receive_message(QueueUrl=queue, WaitTimeSeconds=1)["Messages"]
    assert json.loads(message["Body"])["originationNumber"] == ANA
    # When: a mail is sent and the E-mail page is open
    aws.client("sesv2").create_email_identity(EmailIdentity="example.com")
    _mail(aws, "ana@example.com")
    browser.get(console.url + "#/email")
    until(browser, lambda: browser.find_elements(By.CSS_SELECTOR, '#email tr[data-to="ana@example.com"]'), "mail drawn")
    # Then: its recipient, subject and text body are shown
    row = browser.find_element(By.CSS_SELECTOR, '#email tr[data-to="ana@example.com"]')
    assert row.find_element(By.CSS_SELECTOR, ".subject").text == "Disk full on db-1"
    assert "Acknowledge: https://example.com/ack" in row.text
    browser.save_screenshot("/tmp/console-email.png")


# -- IAM -----------------------------------------------------------------------------------------------------------

def test_a_role_texts_only_from_a_phone_number_its_policy_allows():
    """IAM User Guide, "Policy evaluation logic": a role's session may act only as its policies allow;
    the denial reads "User: <session ARN> is not authorized to perform: <action> on resource: <ARN> because
    no identity-based policy allows the <action> action" (docs facts: "What a real account refuses")."""
    import boto3

    with LocalAws() as aws:
        # Given: a role allowed to text from the account's number only, and Ana verified (by the administrator)
        number_arn = f"arn:aws:sms-voice:us-east-1:123456789012:phone-number/{PHONE_NUMBER_ID}"
        iam = aws.client("iam")
        role = iam.create_role(RoleName="pager", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]
        iam.put_role_policy(RoleName="pager", PolicyName="text", PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "sms-voice:SendTextMessage", "Resource": number_arn}]}))
        verify_destination(aws, ANA)
        keys = aws.iam.credentials(role, "pager")
        sms = boto3.client("pinpoint-sms-voice-v2", endpoint_url=aws.endpoint_url, region_name="us-east-1",
                           aws_access_key_id=keys["AWS_ACCESS_KEY_ID"], aws_secret_access_key=keys["AWS_SECRET_ACCESS_KEY"],
                           aws_session_token=keys["AWS_SESSION_TOKEN"])
        # When: its session texts Ana from the number, by number
        # Then: sent
        assert sms.send_text_message(DestinationPhoneNumber=ANA, OriginationIdentity=PHONE_NUMBER, MessageBody="hi")["MessageId"]
        # When: it calls her, which no policy allows
        with pytest.raises(ClientError) as refused:
            sms.send_voice_message(DestinationPhoneNumber=ANA, OriginationIdentity=PHONE_NUMBER_ID, MessageBody="hi")
        # Then: refused as AWS words it, and nothing is called
        assert refused.value.response["Error"]["Code"] == "AccessDeniedException"
        assert refused.value.response["Error"]["Message"] == (
            "User: arn:aws:sts::123456789012:assumed-role/pager/pager is not authorized to perform: "
            f"sms-voice:SendVoiceMessage on resource: {number_arn} because no identity-based policy allows the "
            "sms-voice:SendVoiceMessage action")
        assert [e["kind"] for e in aws.sms.phone_log if e["to"] == ANA] == ["sms", "sms"]


def test_a_reply_reaches_the_topic_only_if_its_policy_or_the_channel_role_lets_end_user_messaging_publish():
    """End User Messaging SMS User Guide, "Topic policies for Amazon SNS topics": the topic needs a policy
    statement allowing the service principal sms-voice.amazonaws.com sns:Publish "if they are not provided in
    the TwoChannelWayRole parameter"; "IAM policies for Amazon SNS topics": such a role trusts
    sms-voice.amazonaws.com and allows sns:Publish on the topic."""
    with LocalAws() as aws:
        sms, sns, iam = aws.client("pinpoint-sms-voice-v2"), aws.client("sns"), aws.client("iam")
        topic = sns.create_topic(Name="sms-replies")["TopicArn"]
        sms.update_phone_number(PhoneNumberId=PHONE_NUMBER_ID, TwoWayEnabled=True, TwoWayChannelArn=topic)
        # Given: a topic whose policy does not name End User Messaging
        # When: Ana replies
        first = aws.sms.receive(ANA, "12a")
        # Then: not published, and why is said
        assert first["published"] is None
        assert first["refused"] == f"sms-voice.amazonaws.com is not authorized to perform: sns:Publish on resource: {topic}"
        # When: the topic's policy allows the service to publish, and she replies again
        sns.set_topic_attributes(TopicArn=topic, AttributeName="Policy", AttributeValue=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "sms-voice.amazonaws.com"},
                                                    "Action": "sns:Publish", "Resource": topic}]}))
        # Then: published
        assert aws.sms.receive(ANA, "12a")["published"]
        # When: the number names a channel role instead, which does not trust the service
        role = iam.create_role(RoleName="sms-replies", AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]
        iam.put_role_policy(RoleName="sms-replies", PolicyName="publish", PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "sns:Publish", "Resource": topic}]}))
        sms.update_phone_number(PhoneNumberId=PHONE_NUMBER_ID, TwoWayChannelRole=role)
        # Then: the reply is refused, though the topic's policy would allow it: the role is used
        assert aws.sms.receive(ANA, "12a")["refused"] == (
            f"sms-voice.amazonaws.com is not authorized to perform: sts:AssumeRole on resource: {role}")
        # When: the role trusts End User Messaging
        iam.update_assume_role_policy(RoleName="sms-replies", PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "sms-voice.amazonaws.com"}, "Action": "sts:AssumeRole"}]}))
        # Then: published
        assert aws.sms.receive(ANA, "12a")["published"]

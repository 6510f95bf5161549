"""What /oncall contact|rules|rule is granted (issue 39): the action endpoint reads and updates the people table,
sends from the deployment's origination identity and SES identity only, and verifies destination numbers
through End User Messaging's sandbox API; each channel only when its context key names it.

Each template is synthesized with cdk-nag (``synthesize``), so every wildcard here is acknowledged with a reason.
IAM resource types (Service Authorization Reference, "Actions, resources, and condition keys for AWS End
User Messaging SMS and Voice V2"): ``phone-number``, ``pool``, ``verified-destination-number``; for SES
(Amazon SES v2): ``identity``.
"""

from __future__ import annotations

import json

import pytest

from tests.app_config import app_config
from tests.test_alert_notification_infrastructure import function_id, policy_statements, statements_for, synthesize

SANDBOX = {"sms-voice:CreateVerifiedDestinationNumber", "sms-voice:SendDestinationNumberVerificationCode",
           "sms-voice:VerifyDestinationNumber", "sms-voice:DescribeVerifiedDestinationNumbers"}


def arn_text(resource) -> str:
    """An ARN CloudFormation joins from the partition, region and account, as text to compare."""
    if isinstance(resource, str):
        return resource
    separator, parts = resource["Fn::Join"]
    return separator.join(part if isinstance(part, str) else "<" + part["Ref"] + ">" for part in parts)


def granted_on(template, action: str) -> list[str]:
    return sorted(arn_text(resource)
                  for statement in policy_statements(template, "ActionsEndpointRole")
                  if action in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
                  for resource in (statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]))


def environment(template) -> dict:
    return template.to_json()["Resources"][function_id(template, "ActionsEndpoint")]["Properties"]["Environment"]["Variables"]


@pytest.fixture(scope="module")
def channels_on():
    return synthesize(app_config(sms_origination_identity="phone-0123456789abcdef0123456789abcdef",
                                 alert_email_from="alerts@example.com"))


@pytest.fixture(scope="module")
def channels_off():
    return synthesize(app_config(sms_origination_identity=None, alert_email_from=None))


def test_the_endpoint_reads_and_updates_the_people_table_and_is_told_its_name(channels_off):
    granted = statements_for(channels_off, "ActionsEndpointRole", table="PeopleTable")
    assert granted == {"dynamodb:GetItem": [{"Fn::GetAtt": ["PeopleTable", "Arn"]}],
                       "dynamodb:UpdateItem": [{"Fn::GetAtt": ["PeopleTable", "Arn"]}]}
    assert environment(channels_off)["PEOPLE_TABLE_NAME"] == {"Ref": "PeopleTable"}


def test_with_the_channels_off_nothing_can_be_sent(channels_off):
    text = json.dumps(policy_statements(channels_off, "ActionsEndpointRole"))
    assert "sms-voice:" not in text and "ses:" not in text
    assert not {"SMS_ORIGINATION_IDENTITY", "ALERT_EMAIL_FROM"} & set(environment(channels_off))


def test_texts_and_calls_go_only_from_the_named_phone_number(channels_on):
    number = "arn:<AWS::Partition>:sms-voice:<AWS::Region>:<AWS::AccountId>:phone-number/phone-0123456789abcdef0123456789abcdef"
    assert granted_on(channels_on, "sms-voice:SendTextMessage") == [number]
    assert granted_on(channels_on, "sms-voice:SendVoiceMessage") == [number]
    assert environment(channels_on)["SMS_ORIGINATION_IDENTITY"] == "phone-0123456789abcdef0123456789abcdef"


def test_the_sandbox_verification_is_on_the_accounts_verified_destination_numbers_only(channels_on):
    destinations = "arn:<AWS::Partition>:sms-voice:<AWS::Region>:<AWS::AccountId>:verified-destination-number/*"
    number = "arn:<AWS::Partition>:sms-voice:<AWS::Region>:<AWS::AccountId>:phone-number/phone-0123456789abcdef0123456789abcdef"
    for action in SANDBOX:
        assert granted_on(channels_on, action) == sorted([destinations, number])


def test_email_goes_only_from_the_named_identity_or_its_domain(channels_on):
    assert granted_on(channels_on, "ses:SendEmail") == [
        "arn:<AWS::Partition>:ses:<AWS::Region>:<AWS::AccountId>:identity/alerts@example.com",
        "arn:<AWS::Partition>:ses:<AWS::Region>:<AWS::AccountId>:identity/example.com",
    ]
    assert environment(channels_on)["ALERT_EMAIL_FROM"] == "alerts@example.com"


def test_a_number_named_by_its_number_is_granted_as_any_phone_number_of_the_account():
    template = synthesize(app_config(sms_origination_identity="+12065550100"))
    assert granted_on(template, "sms-voice:SendTextMessage") == [
        "arn:<AWS::Partition>:sms-voice:<AWS::Region>:<AWS::AccountId>:phone-number/*"]

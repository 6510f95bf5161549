"""People of the alert pattern: their table (contact methods and notification rules) and the topic their
text replies arrive on (docs/reaching-people.md).

The stack never buys a phone number: a deployer requests one with two-way SMS in AWS End User
Messaging, names it (or its pool) with the context key ``smsOriginationIdentity`` and points the
number's two-way channel at ``replies_topic`` (stack output ``SmsRepliesTopicArn``).
"""

from __future__ import annotations

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from stacks.common.kept_table import kept_table
from stacks.common.nag import acknowledge_wildcard_resource

# End User Messaging publishes a number's replies as this service principal (End User Messaging SMS
# User Guide, "Two-way SMS messaging": the SNS topic's policy and, for an encrypted topic, the key's).
SMS_VOICE_PRINCIPAL = "sms-voice.amazonaws.com"


class People(Construct):
    """The people table (one item per person, key ``member``; ``existing_table`` to use one that exists)
    and the encrypted topic a number's two-way channel publishes replies to."""

    def __init__(
        self, scope: Construct, id_: str, *, table_logical_id: str, existing_table: dynamodb.ITable | None = None
    ) -> None:
        super().__init__(scope, id_)
        self.table: dynamodb.ITable = existing_table or kept_table(
            self,
            "PeopleTable",
            partition_key=dynamodb.Attribute(name="member", type=dynamodb.AttributeType.STRING),
            logical_id=table_logical_id,
        )
        stack = Stack.of(self)
        key = kms.Key(
            self,
            "RepliesKey",
            description="Encrypts the SMS replies topic (people's texts: who replied, with what)",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        # Named, so the key policy can name the topic without the two referencing each other.
        topic_name = f"{stack.stack_name}-sms-replies"
        self.replies_topic = sns.Topic(
            self,
            "SmsReplies",
            topic_name=topic_name,
            display_name="Replies to the alert texts",
            master_key=key,
            enforce_ssl=True,
        )
        topic_arn = stack.format_arn(service="sns", resource=topic_name, arn_format=ArnFormat.NO_RESOURCE_NAME)
        same_account = {"StringEquals": {"aws:SourceAccount": stack.account}}
        self.replies_topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="EndUserMessagingPublishesReplies",
                principals=[iam.ServicePrincipal(SMS_VOICE_PRINCIPAL)],
                actions=["sns:Publish"],
                resources=[self.replies_topic.topic_arn],
                conditions=same_account,
            )
        )
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="EndUserMessagingEncryptsForTheRepliesTopicOnly",
                principals=[iam.ServicePrincipal(SMS_VOICE_PRINCIPAL)],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={"StringEquals": {"kms:EncryptionContext:aws:sns:topicArn": topic_arn}},
            )
        )

    def let_people_manage_their_own(
        self, function: lambda_.IFunction, *, sms_origination_identity: str | None, email_from: str | None
    ) -> None:
        """What /oncall contact|rules|rule needs on ``function`` (the action endpoint): the caller's item, and a
        verification code sent from the deployment's number or address, each channel only when it is on."""
        self.table.grant(function, "dynamodb:GetItem", "dynamodb:UpdateItem")
        function.add_environment("PEOPLE_TABLE_NAME", self.table.table_name)
        stack = Stack.of(self)
        if sms_origination_identity:
            function.add_environment("SMS_ORIGINATION_IDENTITY", sms_origination_identity)
            identity = origination_identity_arn(stack, sms_origination_identity)
            function.add_to_role_policy(iam.PolicyStatement(
                actions=["sms-voice:SendTextMessage", "sms-voice:SendVoiceMessage"], resources=[identity]))
            # In the sandbox (a new account) only verified destinations get texts: a person verifies their
            # number through AWS's own verification (End User Messaging SMS User Guide, "SMS/MMS and Voice
            # sandbox"). Their ids are AWS's, made at run time.
            destinations = stack.format_arn(service="sms-voice", resource="verified-destination-number", resource_name="*")
            function.add_to_role_policy(iam.PolicyStatement(
                actions=["sms-voice:CreateVerifiedDestinationNumber", "sms-voice:SendDestinationNumberVerificationCode",
                         "sms-voice:VerifyDestinationNumber", "sms-voice:DescribeVerifiedDestinationNumbers"],
                resources=[destinations, identity]))
            # The grants are in the role's default policy, where cdk-nag looks for an acknowledgement.
            acknowledge_wildcard_resource(
                function.role, destinations,
                "The sandbox's verified destination numbers get ids AWS makes when a person adds their number "
                "(/oncall contact add); only this account's, in this region, and only to verify them.")
            if identity.endswith("/*"):
                acknowledge_wildcard_resource(
                    function.role, identity,
                    "smsOriginationIdentity names the phone number by its number, not its id, so its ARN is not "
                    "known at synth: name it by id or ARN (docs/reaching-people.md) and the grant names that number.")
        if email_from:
            function.add_environment("ALERT_EMAIL_FROM", email_from)
            domain = email_from.rpartition("@")[2]
            # SES authorizes a send on the identity it is sent as: the address, or its verified domain.
            function.add_to_role_policy(iam.PolicyStatement(
                actions=["ses:SendEmail"],
                resources=[stack.format_arn(service="ses", resource="identity", resource_name=name)
                           for name in dict.fromkeys((email_from, domain))]))


def origination_identity_arn(stack: Stack, identity: str) -> str:
    """The ARN an End User Messaging send is authorized on, from the identity as the context key names it:
    an ARN, a phone number id (phone-...), a pool id (pool-...), or a number (+1..., its id unknown: any
    phone number of the account)."""
    if identity.startswith("arn:"):
        return identity
    if identity.startswith("pool-"):
        return stack.format_arn(service="sms-voice", resource="pool", resource_name=identity)
    name = identity if identity.startswith("phone-") else "*"
    return stack.format_arn(service="sms-voice", resource="phone-number", resource_name=name)

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
from aws_cdk import aws_sns as sns
from constructs import Construct

from stacks.common.kept_table import kept_table

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

"""Replies to the alert texts: the function subscribed to the replies topic, acting as the person who texted.

End User Messaging publishes each text the number receives to the topic (the number's two-way
channel, stack output ``SmsRepliesTopicArn``); SNS invokes the function asynchronously with it.
Lambda retries a failed invocation twice, then records it on a failure queue watched by an alarm
(where SNS also puts a text it could not hand to the function): a retry acts at most once (the write
is conditional) and may text the answer again.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from stacks.alert_notification.people import origination_identity_arn
from stacks.common.failure_queue import FailureQueue, failure_queue
from stacks.common.grants import invoke_statement
from stacks.common.nag import acknowledge_wildcard_resource
from stacks.common.python_function import PythonFunction
from stacks.common.scanners import acknowledge_lint

REPLY_RETRY_ATTEMPTS = 2
# A reply older than this is about a page long past: it goes to the failure queue, not to the alert.
REPLY_MAX_EVENT_AGE = Duration.hours(1)


class SmsReplies(Construct):
    """The replies function (``function``) on ``topic``, and its failure queue (``failure_queue``)."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        topic: sns.ITopic,
        people_table: dynamodb.ITable,
        alert_table: dynamodb.ITable,
        follow_up: lambda_.IFunction,
        origination_identity: str | None,
    ) -> None:
        super().__init__(scope, id_)
        replies = PythonFunction(
            self,
            "Function",
            source="alert_sms_replies",
            description="Acts on a text to the alert number as the person who sent it and texts them the result",
            # One Scan of a small table, one write, an invoke and a text.
            timeout=Duration.seconds(15),
            environment={
                "ALERT_TABLE_NAME": alert_table.table_name,
                "PEOPLE_TABLE_NAME": people_table.table_name,
                "FOLLOW_UP_FUNCTION_NAME": follow_up.function_name,
                # Absent: the channel is off, replies still act and nobody is texted an answer.
                **({"SMS_ORIGINATION_IDENTITY": origination_identity} if origination_identity else {}),
            },
        )
        function = replies.function
        # Scan: who owns the number and the codes they hold (teams are small); UpdateItem: the conditional act,
        # whose refusal returns the item (ReturnValuesOnConditionCheckFailure), so no read is needed.
        people_table.grant(function, "dynamodb:Scan")
        alert_table.grant(function, "dynamodb:UpdateItem")
        function.add_to_role_policy(invoke_statement(follow_up))
        if origination_identity:
            arn = origination_identity_arn(Stack.of(self), origination_identity)
            function.add_to_role_policy(iam.PolicyStatement(actions=["sms-voice:SendTextMessage"], resources=[arn]))
            if arn.endswith("/*"):
                acknowledge_wildcard_resource(
                    replies,
                    arn,
                    "SendTextMessage from this account's phone numbers in this region: smsOriginationIdentity "
                    "names a number, whose phone-number id the ARN needs is not known at synth. Name the "
                    "number's id or ARN in smsOriginationIdentity to narrow it to that number.",
                )
        failures = failure_queue(self, "FailureQueue")
        function.configure_async_invoke(
            retry_attempts=REPLY_RETRY_ATTEMPTS,
            max_event_age=REPLY_MAX_EVENT_AGE,
            on_failure=destinations.SqsDestination(failures),
        )
        # SNS delivers to Lambda decrypted: the topic's key is for its publishers only, the function gets no
        # kms grant (SNS Developer Guide, "Encryption at rest", docs.aws.amazon.com/sns/latest/dg/
        # sns-server-side-encryption.html: messages "are stored in encrypted form, and only decrypted when they are sent").
        # A text SNS cannot hand to the function at all (the function deleted, its permission gone) goes to
        # the same queue: either way a text was not handled, and one alarm says so.
        topic.add_subscription(subscriptions.LambdaSubscription(function, dead_letter_queue=failures))
        [permission] = [c for c in function.node.find_all() if isinstance(c, lambda_.CfnPermission)]
        acknowledge_lint(
            permission,
            {
                "ES1007": "SNS invokes the replies function asynchronously and it has an EventInvokeConfig "
                "with an on-failure destination (test_alert_sms_replies_infrastructure); the rule compares "
                "FunctionName literally and this permission names the function by ARN, the config by Ref.",
            },
        )
        self.function = function
        self.failure_queue = FailureQueue(
            failures,
            "SmsReplyFailed",
            "A text to the alert number was not handled: the replies function failed after Lambda's retries "
            "(the function's logs name the error), or SNS could not invoke it at all. The reply may not have "
            "acted and its sender got no answer. The record, with the text's payload, waits in the replies "
            "failure queue (14 days).",
        )

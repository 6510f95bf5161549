"""Reaching people beyond the channel: the Contact function that texts, calls and e-mails a person by their
rules, the schedule group their later rules are armed in, and the queue of attempts that failed
(docs/reaching-people.md).

The stack never buys a phone number nor verifies an e-mail identity: ``sms_origination_identity`` names
the deployer's End User Messaging phone number or pool (an E.164 number, an id or an ARN) and
``email_from`` their verified SES identity; without one, that kind of rule is told to the channel as
not sent.
"""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from stacks.common.failure_queue import FailureQueue, failure_queue
from stacks.common.grants import invoke_statement
from stacks.common.nag import acknowledge_wildcard_resource
from stacks.common.python_function import PythonFunction


class Contact(Construct):
    """The Contact function (``function``), its schedule group and scheduler role, and ``failure_queue``."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        alert_table: dynamodb.ITable,
        people_table: dynamodb.ITable,
        signing_key: secretsmanager.ISecret,
        follow_up: lambda_.IFunction,
        sms_origination_identity: str | None,
        email_from: str | None,
    ) -> None:
        super().__init__(scope, id_)
        stack = Stack.of(self)
        contact = PythonFunction(
            self,
            "Contact",
            source="alert_contact",
            description="Texts, calls or e-mails a person about an alert by one of their rules, checked just before sending",
            # Three reads, a conditional write and one send: seconds at most, never a wait.
            timeout=Duration.seconds(30),
            environment={
                "ALERT_TABLE_NAME": alert_table.table_name,
                "PEOPLE_TABLE_NAME": people_table.table_name,
                "FOLLOW_UP_FUNCTION_NAME": follow_up.function_name,
                "ACTION_LINK_KEY_SECRET_ARN": signing_key.secret_arn,
                # Absent: that kind of rule is told to the channel as not sent.
                **({"SMS_ORIGINATION_IDENTITY": sms_origination_identity} if sms_origination_identity else {}),
                **({"ALERT_EMAIL_FROM": email_from} if email_from else {}),
            },
        )
        function = self.function = contact.function
        self.follow_up = follow_up
        failures = failure_queue(self, "ContactFailureQueue")
        # Two retries (1 and 2 minutes later), each checking the alert again before sending; a page an
        # hour late is no page.
        function.configure_async_invoke(
            retry_attempts=2, max_event_age=Duration.hours(1), on_failure=destinations.SqsDestination(failures)
        )
        # GetItem: the alert just before sending; BatchGetItem: the alerts a person's reply codes are for.
        alert_table.grant(function, "dynamodb:GetItem", "dynamodb:BatchGetItem")
        # GetItem: the person; UpdateItem: their reply codes (conditional, the reply_codes field only).
        people_table.grant(function, "dynamodb:GetItem", "dynamodb:UpdateItem")
        signing_key.grant_read(function)  # it signs the e-mail's Acknowledge and Resolve links
        function.add_to_role_policy(invoke_statement(follow_up))  # refusals are told to the channel
        if sms_origination_identity:
            resources = _origination_arns(stack, sms_origination_identity)
            function.add_to_role_policy(iam.PolicyStatement(
                actions=["sms-voice:SendTextMessage", "sms-voice:SendVoiceMessage"], resources=resources))
            for resource in resources:
                if resource.endswith("/*"):
                    acknowledge_wildcard_resource(
                        contact, resource,
                        "SendTextMessage/SendVoiceMessage from the account's phone numbers and pools: the context key "
                        "smsOriginationIdentity names the number as a phone number (E.164), and IAM authorizes a send "
                        "on the number's ARN, which ends with its id (phone-...), not known at synth. Give its id or ARN "
                        "to grant that one only.",
                    )
        if email_from:
            function.add_to_role_policy(iam.PolicyStatement(actions=["ses:SendEmail"], resources=_email_identity_arns(stack, email_from)))
        # Its own group: Notify User may create schedules in it only, and deleting the stack deletes the
        # group with every schedule in it (EventBridge Scheduler API Reference, DeleteScheduleGroup).
        self.schedule_group = scheduler.CfnScheduleGroup(self, "ContactSchedules")
        self.scheduler_role = iam.Role(
            self,
            "ContactSchedulerRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": stack.account}}
            ),
            description="Lets a person's later rules invoke Contact, and dead-letter what they could not",
        )
        self.scheduler_role.add_to_policy(invoke_statement(function))
        # A schedule's dead-letter queue (EventBridge Scheduler User Guide, "Configuring a dead-letter queue").
        self.scheduler_role.add_to_policy(iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[failures.queue_arn]))
        self.failures = failures
        self.failure_queue = FailureQueue(
            failures,
            "ContactAttemptFailed",
            "A contact attempt (a person's text, call or e-mail about an alert) failed after Lambda's retries, or "
            "its schedule could not invoke Contact: that person was not reached that way. The record (its "
            "requestPayload names the alert and the person) waits in the contact failure queue (14 days).",
        )

    def let_arm(self, notifier: lambda_.Function, people_table: dynamodb.ITable) -> None:
        """``notifier`` reads a notified person's rules and arms them: Contact at once, or a one-time schedule."""
        people_table.grant(notifier, "dynamodb:GetItem")
        notifier.add_environment("PEOPLE_TABLE_NAME", people_table.table_name)
        notifier.add_environment("CONTACT_FUNCTION_ARN", self.function.function_arn)
        notifier.add_environment("CONTACT_SCHEDULE_GROUP", self.schedule_group.ref)
        notifier.add_environment("CONTACT_SCHEDULER_ROLE_ARN", self.scheduler_role.role_arn)
        notifier.add_environment("CONTACT_FAILURE_QUEUE_ARN", self.failures.queue_arn)
        # Contact for a rule at minute 0; the follow-up to tell the channel of a rule it could not arm.
        notifier.add_environment("FOLLOW_UP_FUNCTION_NAME", self.follow_up.function_name)
        notifier.add_to_role_policy(invoke_statement(self.function, self.follow_up))
        schedules = Stack.of(self).format_arn(
            service="scheduler", resource="schedule", resource_name=f"{self.schedule_group.ref}/*")
        notifier.add_to_role_policy(iam.PolicyStatement(actions=["scheduler:CreateSchedule"], resources=[schedules]))
        acknowledge_wildcard_resource(
            notifier.node.scope,  # the PythonFunction, whose role is beside the function
            schedules,
            "CreateSchedule in the contact rules' own schedule group only: one schedule per person, round and "
            "rule, named from the execution, not known in advance.",
        )
        self.scheduler_role.grant_pass_role(notifier)


def _origination_arns(stack: Stack, identity: str) -> list[str]:
    """What a send from ``identity`` is authorized on (Service Authorization Reference, End User Messaging
    SMS: SendTextMessage and SendVoiceMessage on the phone-number or pool the message goes from)."""
    if identity.startswith("arn:"):
        return [identity]
    if identity.startswith("pool-"):
        return [stack.format_arn(service="sms-voice", resource="pool", resource_name=identity)]
    if identity.startswith("phone-"):
        return [stack.format_arn(service="sms-voice", resource="phone-number", resource_name=identity)]
    return [stack.format_arn(service="sms-voice", resource="phone-number", resource_name="*")]


def _email_identity_arns(stack: Stack, sender: str) -> list[str]:
    """The SES identities ``sender`` may be verified as: the address, or its domain. SendEmail is
    authorized on the identity the mail is sent as (AWS re:Post, "How do I resolve a 554 'Access denied'
    error when I send an email from my IAM user in Amazon SES?": ``identity/example.com``)."""
    domain = sender.rpartition("@")[2]
    return [stack.format_arn(service="ses", resource="identity", resource_name=name) for name in (sender, domain)]

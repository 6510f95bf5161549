"""Alert notification pattern (seeds 000/001): nested-loop machine, its table, its functions, its schedule."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.alert_notification.actions import AlertActions
from stacks.alert_notification.alarms import AlarmRaisedAlerts
from stacks.alert_notification.contact import Contact
from stacks.alert_notification.on_call import OnCallSchedules
from stacks.alert_notification.people import People
from stacks.alert_notification.replies import SmsReplies
from stacks.alert_notification.slack_webhook import let_post_to_slack, take_turns_on_pace
from stacks.common.failure_queue import FailureQueue, failure_queue
from stacks.common.grants import invoke_statement
from stacks.common.kept_table import kept_table
from stacks.common.nag import acknowledge, acknowledge_wildcard_resource
from stacks.common.python_function import PythonFunction
from stacks.common.scanners import acknowledge_rule_permission
from stacks.common.short_lived_table import short_lived_table
from stacks.common.state_machine import StandardStateMachine
from stacks.common.team_function import InvalidProp, check_timeout_within, task_timeout_seconds

# EventBridge retries an undeliverable schedule event (throttled or failed Invoke) with back-off for
# this long, then moves it to the schedule's dead-letter queue.
SCHEDULE_RETRY_ATTEMPTS = 8
SCHEDULE_MAX_EVENT_AGE = Duration.hours(1)
# Lambda retries a failed asynchronous dispatch twice (1 and 2 minutes later), then records it on the
# dispatch failure queue; an older event is stale, the next schedule slot will dispatch anyway.
DISPATCH_RETRY_ATTEMPTS = 2
DISPATCH_MAX_EVENT_AGE = Duration.hours(1)
ALARM_INDEX_NAME = "AlarmName"


class AlertNotification(Construct):
    """The alert machine, its table, its functions, its schedule and the action endpoint.

    Each notification goes to Slack (``slack_webhook_secret_name``: the secret holding the incoming
    webhook URL) or to a team's ``notifier`` function; give exactly one. The notifier gets one
    notification, ``{"execution_id", "alert_id", "message", "round", "user", "links", "occurrence",
    "actions_url", "post_at", "attempt"}`` (``links``: the user's signed ``acknowledge`` and ``resolve`` URLs), returns when it
    delivered it and raises to report a failure (the error's name is what ``notifications_failed``
    records). ``actions_reserved_concurrency``: concurrency reserved for the public action endpoint
    (None: none, see ``actions.py``). ``slack_team_id``: the Slack workspace whose ``/oncall`` the
    endpoint takes (None: it refuses every workspace's). ``schedules``: on-call schedule items (docs/on-call-schedules.md)
    an escalation names as ``schedule:<id>``, validated at synth. Exposes ``on_call`` (its ``table``),
    ``state_machine``, ``log_group``, ``notifier`` (the function used), ``table``, ``functions``, the
    functions this construct made, by name, and ``failure_queues`` and ``watched_metrics``, what a
    monitoring construct should alarm on.

    ``sms_origination_identity``: the End User Messaging phone number or pool (number, id or ARN) texts
    and calls go from, ``email_from``: the SES identity e-mails go from; without one, a person's rules
    naming that kind of method are told to the channel as not sent (docs/reaching-people.md). With the
    Slack notifier, ``contact`` is the Contact construct (its function, schedule group and failure queue).

    ``existing_alert_table``, ``existing_on_call_table``, ``existing_people_table``: a table to use instead of creating one, such
    as the retained table of a deleted deployment (docs/deploying.md); it must have the key (and the
    alert table its ``AlarmName`` index) of the table this construct creates. It gets the same grants
    and environment variables, and the stack never creates, changes nor deletes it.

    Several may share a stack: the first keeps its tables' logical ids ``AlertTable`` and
    ``OnCallTable``, each later one's are its construct id followed by those.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        schedule: str,
        slack_webhook_secret_name: str | None = None,
        slack_signing_secret_name: str | None = None,
        slack_team_id: str | None = None,
        notifier: lambda_.IFunction | None = None,
        actions_reserved_concurrency: int | None = None,
        schedules: Sequence[Mapping[str, Any]] = (),
        existing_alert_table: dynamodb.ITable | None = None,
        existing_on_call_table: dynamodb.ITable | None = None,
        existing_people_table: dynamodb.ITable | None = None,
        sms_origination_identity: str | None = None,
        email_from: str | None = None,
    ) -> None:
        super().__init__(scope, id_)
        if (notifier is None) == (slack_webhook_secret_name is None):
            raise InvalidProp(
                "notifier: give exactly one of notifier (your function) or slack_webhook_secret_name (the "
                "Slack notifier's webhook secret)"
            )
        self.table: dynamodb.ITable = existing_alert_table or self._alert_table()

        # The secret is created by whoever deploys (it holds a credential), so it is only referenced.
        webhook_secret = (
            secretsmanager.Secret.from_secret_name_v2(self, "SlackWebhook", slack_webhook_secret_name)
            if slack_webhook_secret_name is not None
            else None
        )
        self.actions = AlertActions(
            self,
            "Actions",
            table=self.table,
            webhook_secret=webhook_secret,
            slack_signing_secret_name=slack_signing_secret_name,
            slack_team_id=slack_team_id,
            reserved_concurrency=actions_reserved_concurrency,
        )
        self.watched_metrics = self.actions.watched_metrics

        self.on_call = OnCallSchedules(
            self,
            "OnCall",
            schedules=schedules,
            signing_key=self.actions.signing_key,
            webhook_secret=webhook_secret,
            table_logical_id=self._table_logical_id("OnCallTable"),
            existing_table=existing_on_call_table,
        )
        self.people = People(
            self,
            "People",
            table_logical_id=self._table_logical_id("PeopleTable"),
            existing_table=existing_people_table,
        )
        self.sms_origination_identity, self.email_from = sms_origination_identity, email_from
        # /oncall contact|rules|rule: a person's own methods, their codes sent from the deployment's number and address.
        self.people.let_people_manage_their_own(
            self.actions.function, sms_origination_identity=sms_origination_identity, email_from=email_from)
        # /oncall: the endpoint lists the schedules (Scan) and writes a person's cover (UpdateItem).
        self.on_call.table.grant(self.actions.function, "dynamodb:Scan", "dynamodb:GetItem", "dynamodb:UpdateItem")
        self.actions.function.add_environment("ON_CALL_TABLE_NAME", self.on_call.table.table_name)
        fetch_config = PythonFunction(
            self,
            "FetchAlertConfig",
            source="alert_config",
            description="Reads and validates an alert's notification config, claims the alert, signs its action links",
            timeout=Duration.seconds(10),
            environment={
                "ALERT_TABLE_NAME": self.table.table_name,
                # The links are signed with the action endpoint's key; its URL comes in the task's payload
                # (a Lambda environment naming a function URL makes checkov's JSON report crash).
                "ACTION_LINK_KEY_SECRET_ARN": self.actions.signing_key.secret_arn,
            },
        )
        # UpdateItem: the conditional write that claims the alert for the execution.
        self.table.grant(fetch_config.function, "dynamodb:GetItem", "dynamodb:UpdateItem")
        self.actions.signing_key.grant_read(fetch_config.function)
        self.functions: dict[str, lambda_.Function] = {
            "FetchAlertConfig": fetch_config.function,
            "ActionsEndpoint": self.actions.function,
            "ActionsFollowUp": self.actions.follow_up,
            "FindWhoIsOnCall": self.on_call.function,
            "DeclaredOnCallSchedules": self.on_call.writer,
        }
        # Texts to the number act as their sender; answers go from the origination identity.
        self.replies = SmsReplies(
            self,
            "SmsReplies",
            topic=self.people.replies_topic,
            people_table=self.people.table,
            alert_table=self.table,
            follow_up=self.actions.follow_up,
            origination_identity=sms_origination_identity,
        )
        self.functions["SmsReplies"] = self.replies.function
        if self.on_call.handoff is not None:
            self.functions["HandoffNotice"] = self.on_call.handoff
            # /oncall cover asks Handoff Notice to re-arm: the cover may move the next handoff.
            self.actions.function.add_environment("HANDOFF_FUNCTION_NAME", self.on_call.handoff.function_name)
            self.actions.function.add_to_role_policy(invoke_statement(self.on_call.handoff))

        if webhook_secret is not None:  # and so no notifier of the team's (exactly one, checked above)
            notifier = self._slack_notifier(webhook_secret)
            self.on_call.post_on_shared_pace(self.idempotency_table)  # Handoff Notice's posts take their turn
            # After its post, the notifier starts the person's own rules (texts, calls, e-mails).
            self.contact = Contact(
                self,
                "Contact",
                alert_table=self.table,
                people_table=self.people.table,
                signing_key=self.actions.signing_key,
                follow_up=self.actions.follow_up,
                sms_origination_identity=sms_origination_identity,
                email_from=email_from,
            )
            self.contact.let_arm(notifier, self.people.table)
            self.functions["Contact"] = self.contact.function
        else:
            check_timeout_within(
                notifier,
                "notifier",
                task_timeout_seconds("alert_notification", "Notify User"),
                "the TimeoutSeconds of the machine's Notify User task, so Lambda's own timeout ends an attempt first",
            )
        self.notifier = notifier

        machine = StandardStateMachine(
            self,
            "Machine",
            machine="alert_notification",
            substitutions={
                "FetchAlertConfigFunctionArn": fetch_config.function.function_arn,
                "NotifyUserFunctionArn": notifier.function_arn,
                "FindWhoIsOnCallFunctionArn": self.on_call.function.function_arn,
                "AlertTableName": self.table.table_name,
                "AlertActionsUrl": self.actions.url,
            },
            comment="Notifies an alert's users on Slack, round after round, while the alert is active",
        )
        machine.allow_invoke(fetch_config.function, notifier, self.on_call.function)
        # GetItem: the status before each round; UpdateItem: releasing the alert's claim at the end.
        self.table.grant(machine.state_machine, "dynamodb:GetItem", "dynamodb:UpdateItem")
        self.state_machine = machine.state_machine
        self.log_group: logs.ILogGroup = machine.log_group
        self.state_machines: list[sfn.IStateMachine] = [self.state_machine]
        executions = machine.execution_arns()
        # Fetch Alert Config asks whether the execution holding an alert's claim still runs. A policy
        # of its own: the function's default policy cannot name the machine, which names the function.
        claim_check = iam.Policy(
            self,
            "FetchAlertConfigClaimCheck",
            statements=[iam.PolicyStatement(actions=["states:DescribeExecution"], resources=[executions])],
        )
        claim_check.attach_to_role(fetch_config.function.role)
        acknowledge_wildcard_resource(
            claim_check,
            executions,
            "DescribeExecution on this machine's executions only (to learn whether the execution holding an "
            "alert's claim still runs); their names are not known in advance.",
        )

        self.alarms = AlarmRaisedAlerts(
            self,
            "Alarms",
            table=self.table,
            alarm_index_name=ALARM_INDEX_NAME,
            state_machine=self.state_machine,
            executions=executions,
            webhook_secret=webhook_secret,
        )
        if webhook_secret is not None:  # every post to the webhook takes its turn on the shared pace
            for follow_up in (self.actions.follow_up, self.alarms.function):
                take_turns_on_pace(follow_up, self.idempotency_table)

        dispatcher = PythonFunction(
            self,
            "DispatchAlerts",
            source="alert_dispatcher",
            description="Starts one alert-notification execution per active alert on a schedule",
            timeout=Duration.minutes(2),
            environment={
                "ALERT_TABLE_NAME": self.table.table_name,
                "STATE_MACHINE_ARN": self.state_machine.state_machine_arn,
            },
        )
        self.functions["DispatchAlerts"] = dispatcher.function
        self.table.grant(dispatcher.function, "dynamodb:Scan")
        dispatcher.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["states:StartExecution", "states:ListExecutions"],
                resources=[self.state_machine.state_machine_arn],
            )
        )
        dispatcher.function.add_to_role_policy(
            iam.PolicyStatement(actions=["states:DescribeExecution"], resources=[executions])
        )
        acknowledge_wildcard_resource(
            dispatcher,
            executions,
            "DescribeExecution on this machine's executions only (to read which alert an execution "
            "started by hand is for); their names are not known in advance.",
        )
        # An alert whose alarm is OK is not dispatched. Alerts name any alarm of the account, metric
        # or composite, and DescribeAlarms answers for composite alarms only to a permission scoped to
        # "*" (CloudWatch API Reference, DescribeAlarms): the read is the only thing granted on "*".
        dispatcher.function.add_to_role_policy(iam.PolicyStatement(actions=["cloudwatch:DescribeAlarms"], resources=["*"]))
        acknowledge(
            dispatcher,
            {
                "AwsSolutions::AwsSolutions-IAM5[Resource::*]": "Besides X-Ray's (every PythonFunction): "
                "cloudwatch:DescribeAlarms reads composite alarms only when scoped to '*' (CloudWatch "
                "API Reference, DescribeAlarms), and an alert may name any alarm of the account.",
            },
        )

        schedule_dead_letters = failure_queue(self, "ScheduleDeadLetterQueue")
        dispatch_failures = failure_queue(self, "DispatchFailureQueue")
        dispatcher.function.configure_async_invoke(
            retry_attempts=DISPATCH_RETRY_ATTEMPTS,
            max_event_age=DISPATCH_MAX_EVENT_AGE,
            on_failure=destinations.SqsDestination(dispatch_failures),
        )
        rule = events.Rule(
            self,
            "Schedule",
            description="Starts an alert-notification execution for every active alert",
            schedule=events.Schedule.expression(schedule),
            targets=[
                targets.LambdaFunction(
                    dispatcher.function,
                    retry_attempts=SCHEDULE_RETRY_ATTEMPTS,
                    max_event_age=SCHEDULE_MAX_EVENT_AGE,
                    dead_letter_queue=schedule_dead_letters,
                )
            ],
        )
        acknowledge_rule_permission(rule, "dispatcher")
        self.failure_queues = [
            FailureQueue(
                schedule_dead_letters,
                "AlertScheduleDeadLettered",
                "The alert schedule could not invoke the dispatcher (throttled or failed Invoke after "
                "retries for an hour): no alert was dispatched for that slot. The event waits in the "
                "schedule dead-letter queue (14 days).",
            ),
            FailureQueue(
                dispatch_failures,
                "AlertDispatchFailed",
                "A scheduled dispatch failed after Lambda's retries: some alerts (named in the record's "
                "responsePayload.errorMessage) got no execution. The record waits in the dispatch "
                "failure queue (14 days).",
            ),
            self.alarms.failure_queue,
            self.replies.failure_queue,
            self.actions.follow_up_failures,
        ]
        if self.on_call.handoff is not None:
            self.failure_queues.append(self.on_call.handoff_failures)
        if webhook_secret is not None:
            self.failure_queues.append(self.contact.failure_queue)

    def _alert_table(self) -> dynamodb.Table:
        table = kept_table(
            self,
            "AlertTable",
            partition_key=dynamodb.Attribute(name="alert_id", type=dynamodb.AttributeType.STRING),
            logical_id=self._table_logical_id("AlertTable"),
        )
        # Alerts by the alarm that raises them (KEYS_ONLY: the alarm handler updates each item by key).
        # Written on the CloudFormation resource: an index CDK knows of widens every Table.grant to
        # <table>/index/*, and only the alarm handler may query it.
        table_resource = table.node.default_child
        table_resource.add_property_override(
            "AttributeDefinitions.1", {"AttributeName": "alarm_name", "AttributeType": "S"}
        )
        table_resource.add_property_override(
            "GlobalSecondaryIndexes",
            [
                {
                    "IndexName": ALARM_INDEX_NAME,
                    "KeySchema": [{"AttributeName": "alarm_name", "KeyType": "HASH"}],
                    "Projection": {"ProjectionType": "KEYS_ONLY"},
                }
            ],
        )
        return table

    def _table_logical_id(self, name: str) -> str:
        """``name`` (``AlertTable``, ``OnCallTable``, ``PeopleTable``) for the stack's first alert setup (the id every
        deployed table has); a later one's is derived from its own construct id, so adding one never
        renames another's table."""
        stack = Stack.of(self)
        earlier = [c for c in stack.node.find_all() if isinstance(c, AlertNotification) and c is not self]
        if not earlier:
            return name
        within_stack = self.node.path[len(stack.node.path) + 1 :]
        return re.sub(r"[^A-Za-z0-9]", "", within_stack) + name

    def _slack_notifier(self, webhook_secret: secretsmanager.ISecret) -> lambda_.Function:
        """The default notifier: one Slack post per notification, idempotent on (execution, round, user)."""
        # Powertools idempotency records of the notifier: short-lived, removed by TTL.
        self.idempotency_table = short_lived_table(
            self,
            "IdempotencyTable",
            partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            expiry_attribute="expiration",
        )
        notify_user = PythonFunction(
            self,
            "NotifyUser",
            source="alert_notifier",
            description="Posts one alert notification to the Slack incoming webhook",
            # One 5 s request to Slack, the secret and the pace's few DynamoDB calls fit: it never waits
            # for Slack's pace or a Retry-After (the machine does, where a Wait holds no concurrency).
            timeout=Duration.seconds(15),
            environment={
                "IDEMPOTENCY_TABLE_NAME": self.idempotency_table.table_name,
            },
        )
        let_post_to_slack(notify_user.function, webhook_secret)
        self.idempotency_table.grant(
            notify_user.function, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"
        )
        self.functions["NotifyUser"] = notify_user.function
        return notify_user.function

"""On-call schedules of the alert pattern: their table, the function that finds who is on call for a round,
the custom resource that writes the declared schedules at deploy, and the handoff notices.

Schedules declared with the app (``AlertNotification(schedules=[...])``) are validated at synth by
the module the functions use at runtime (``patterns_common.oncall``), so a schedule the app
declares cannot be refused after deployment.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from aws_cdk import CustomResource, Duration, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as destinations
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from stacks.alert_notification.slack_webhook import let_post_to_slack
from stacks.common.failure_queue import FailureQueue, failure_queue
from stacks.common.grants import invoke_statement
from stacks.common.kept_table import kept_table
from stacks.common.nag import acknowledge_wildcard_resource
from stacks.common.python_function import LAMBDAS_DIR, PythonFunction
from stacks.common.team_function import InvalidProp
from stacks.common.zone_data import zones_as_the_functions_read_them

_ONCALL_MODULE = LAMBDAS_DIR / "shared_layer" / "python" / "patterns_common" / "oncall.py"
# Handoff Notice re-arms this often (EventBridge Scheduler User Guide, "Schedule types": rate()); it
# arms two days ahead (alert_oncall_handoff_logic.ARM_AHEAD), so a handoff is armed many times over.
REARM_EVERY = "rate(1 hour)"


def oncall_module() -> ModuleType:
    """patterns_common.oncall as the functions import it (loaded from the layer's source, standard library only)."""
    name = "patterns_common.oncall"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _ONCALL_MODULE)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up by name
        spec.loader.exec_module(module)
    return sys.modules[name]


def check_schedules(schedules: Sequence[Mapping[str, Any]]) -> None:
    """Refuse, at synth, a declared schedule the runtime would refuse, or two with one id; zones are read
    from the tzdata the shared layer ships, as the functions read them."""
    oncall = oncall_module()
    seen: set[str] = set()
    for index, item in enumerate(schedules):
        try:
            with zones_as_the_functions_read_them():
                parsed = oncall.parse_schedule(item)
        except oncall.InvalidSchedule as invalid:
            raise InvalidProp(f"schedules[{index}]: {invalid}") from invalid
        if parsed.schedule_id in seen:
            raise InvalidProp(f"schedules[{index}]: schedule {parsed.schedule_id!r} is declared twice")
        seen.add(parsed.schedule_id)


class OnCallSchedules(Construct):
    """The on-call table (one item per schedule, key ``schedule_id``; ``existing_table`` to use one that
    exists, such as a deleted deployment's), Find Who Is On Call, the declared schedules' custom resource
    and, with a Slack webhook, the handoff notices."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        schedules: Sequence[Mapping[str, Any]],
        signing_key: secretsmanager.ISecret,
        webhook_secret: secretsmanager.ISecret | None,
        table_logical_id: str,
        existing_table: dynamodb.ITable | None = None,
    ) -> None:
        super().__init__(scope, id_)
        check_schedules(schedules)
        self.schedules = list(schedules)
        self.table: dynamodb.ITable = existing_table or kept_table(
            self,
            "OnCallTable",
            partition_key=dynamodb.Attribute(name="schedule_id", type=dynamodb.AttributeType.STRING),
            logical_id=table_logical_id,
        )
        find = PythonFunction(
            self,
            "FindWhoIsOnCall",
            source="alert_on_call",
            description="Finds who an alert round pages: the people its on-call schedules have on call now",
            timeout=Duration.seconds(10),
            environment={
                "ON_CALL_TABLE_NAME": self.table.table_name,
                "ACTION_LINK_KEY_SECRET_ARN": signing_key.secret_arn,
            },
        )
        self.table.grant(find.function, "dynamodb:GetItem")
        signing_key.grant_read(find.function)  # it signs the action links of the people it finds
        self.function = find.function

        # The declared schedules are written at deploy by a custom resource of a Python function: it
        # puts the new and changed items (read first: a put keeps the covers added at runtime), deletes
        # the ones no longer declared, and on stack deletion the ones it wrote.
        writer = PythonFunction(
            self,
            "DeclaredSchedules",
            source="alert_oncall_declared",
            description="Writes the on-call schedules declared with the app into the on-call table (custom resource)",
            timeout=Duration.seconds(30),
            environment={"ON_CALL_TABLE_NAME": self.table.table_name},
        )
        self.table.grant(writer.function, "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem")
        self.declared = CustomResource(
            self,
            "Declared",
            service_token=writer.function.function_arn,
            resource_type="Custom::DeclaredOnCallSchedules",
            # A function that fails before answering is retried by Lambda twice (1 and 2 minutes
            # later); after that the deployment should fail, not wait CloudFormation's default hour.
            service_timeout=Duration.minutes(5),
            # JSON text: CloudFormation hands the items to the function exactly as declared. The table's
            # name too: adopting another table (docs/deploying.md) is an Update that writes them all there.
            properties={
                "Schedules": json.dumps(self.schedules, sort_keys=True, separators=(",", ":")),
                "TableName": self.table.table_name,
            },
        )
        self.writer = writer.function
        self.handoff = self._handoff_notices(webhook_secret, writer.function) if webhook_secret is not None else None

    def _handoff_notices(self, webhook_secret: secretsmanager.ISecret, writer: lambda_.Function) -> lambda_.Function:
        """Handoff Notice, the schedule group of its one-time schedules, its hourly re-arm, its failure queue."""
        handoff = PythonFunction(
            self,
            "HandoffNotice",
            source="alert_oncall_handoff",
            description="Arms a one-time schedule per on-call handoff and tells the incoming person in Slack, once",
            # A scan, a few dozen CreateSchedule calls or one post (1.5 s at most): never a wait for Slack.
            timeout=Duration.seconds(30),
            environment={"ON_CALL_TABLE_NAME": self.table.table_name},
        )
        function = handoff.function
        # Its own group: the function may create schedules in it only, and deleting the stack deletes
        # the group with every schedule in it (EventBridge Scheduler API Reference, DeleteScheduleGroup).
        group = scheduler.CfnScheduleGroup(self, "HandoffSchedules")
        failures = failure_queue(self, "HandoffFailureQueue")
        # Two retries (1 and 2 minutes later), then the record waits for a person; a notice an hour
        # late is no longer news.
        function.configure_async_invoke(
            retry_attempts=2, max_event_age=Duration.hours(1), on_failure=destinations.SqsDestination(failures)
        )
        invoker = iam.Role(
            self,
            "HandoffSchedulerRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}}
            ),
            description="Lets the handoff schedules invoke Handoff Notice, and dead-letter what they could not",
        )
        invoke = invoke_statement(function)
        invoker.add_to_policy(invoke)
        # A schedule's dead-letter queue (EventBridge Scheduler User Guide, "Configuring a dead-letter queue").
        invoker.add_to_policy(iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[failures.queue_arn]))
        function.add_environment("HANDOFF_SCHEDULER_ROLE_ARN", invoker.role_arn)
        function.add_environment("HANDOFF_SCHEDULE_GROUP", group.ref)
        function.add_environment("HANDOFF_FAILURE_QUEUE_ARN", failures.queue_arn)
        schedules = Stack.of(self).format_arn(service="scheduler", resource="schedule", resource_name=f"{group.ref}/*")
        function.add_to_role_policy(iam.PolicyStatement(actions=["scheduler:CreateSchedule"], resources=[schedules]))
        acknowledge_wildcard_resource(
            handoff,
            schedules,
            "CreateSchedule in the handoff notices' own schedule group only: one schedule per handoff, "
            "named from the schedule and the instant, not known in advance.",
        )
        invoker.grant_pass_role(function)
        self.table.grant(function, "dynamodb:Scan", "dynamodb:GetItem")
        let_post_to_slack(function, webhook_secret)
        scheduler.CfnSchedule(
            self,
            "HandoffRearm",
            description="Arms the handoff notices of the next two days, for schedules written by any means",
            group_name=group.ref,
            schedule_expression=REARM_EVERY,
            schedule_expression_timezone="UTC",
            flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
            target=scheduler.CfnSchedule.TargetProperty(
                arn=function.function_arn,
                role_arn=invoker.role_arn,
                input="{}",
                dead_letter_config=scheduler.CfnSchedule.DeadLetterConfigProperty(arn=failures.queue_arn),
            ),
        )
        # Arms the first notices once the declared schedules are written.
        writer.add_to_role_policy(invoke)
        writer.add_environment("HANDOFF_FUNCTION_NAME", function.function_name)
        self.handoff_failures = FailureQueue(
            failures,
            "HandoffNoticeFailed",
            "Handoff Notice failed after Lambda's retries, or a handoff schedule could not invoke it: a "
            "handoff notice was not posted, or the next notices were not armed. The record (its error "
            "names the schedule) waits in the handoff failure queue (14 days).",
        )
        return function

    def post_on_shared_pace(self, table: dynamodb.ITable) -> None:
        """Handoff Notice takes its slots on Slack's pace item in ``table`` (TTL ``expiration``) and keeps its
        posted records there (its own key prefix)."""
        self.handoff.add_environment("PACE_TABLE_NAME", table.table_name)
        table.grant(self.handoff, "dynamodb:UpdateItem", "dynamodb:PutItem", "dynamodb:DeleteItem")

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
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from stacks.alert_notification.slack_webhook import let_post_to_slack
from stacks.common.grants import invoke_statement
from stacks.common.kept_table import kept_table
from stacks.common.python_function import LAMBDAS_DIR, PythonFunction
from stacks.common.team_function import InvalidProp

_ONCALL_MODULE = LAMBDAS_DIR / "shared_layer" / "python" / "patterns_common" / "oncall.py"


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
    """Refuse, at synth, a declared schedule the runtime would refuse, or two with one id."""
    oncall = oncall_module()
    seen: set[str] = set()
    for index, item in enumerate(schedules):
        try:
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
        """Handoff Notice and the one EventBridge Scheduler schedule it re-arms for the next handoff."""
        handoff = PythonFunction(
            self,
            "HandoffNotice",
            source="alert_oncall_handoff",
            description="Tells the person whose on-call shift starts now in Slack, then arms the next handoff's notice",
            # A 429 is waited out for a second, twice, per notice; a handful of schedules hand off at once.
            timeout=Duration.seconds(30),
            environment={"ON_CALL_TABLE_NAME": self.table.table_name},
        )
        # The schedule is named as the function (both at most 64 letters, digits, '-' and '_').
        stack = Stack.of(self)
        schedule_arn = stack.format_arn(
            service="scheduler", resource="schedule", resource_name=f"default/{handoff.function.function_name}"
        )
        invoker = iam.Role(
            self,
            "HandoffSchedulerRole",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": stack.account}}
            ),
            description="Lets the handoff notice's EventBridge Scheduler schedule invoke Handoff Notice",
        )
        invoke = invoke_statement(handoff.function)
        invoker.add_to_policy(invoke)
        handoff.function.add_environment("HANDOFF_SCHEDULER_ROLE_ARN", invoker.role_arn)
        # A policy of its own: the function's default policy cannot name the function, which depends on it.
        arm = iam.Policy(
            self,
            "ArmHandoffSchedule",
            statements=[
                iam.PolicyStatement(
                    actions=["scheduler:CreateSchedule", "scheduler:UpdateSchedule"], resources=[schedule_arn]
                )
            ],
        )
        arm.attach_to_role(handoff.function.role)
        invoker.grant_pass_role(handoff.function)
        self.table.grant(handoff.function, "dynamodb:Scan")
        let_post_to_slack(handoff.function, webhook_secret)
        # Arms the first notice once the declared schedules are written.
        writer.add_to_role_policy(invoke)
        self.declared.node.add_dependency(arm)  # the first arming, at deploy, may create the schedule
        writer.add_environment("HANDOFF_FUNCTION_NAME", handoff.function.function_name)
        return handoff.function

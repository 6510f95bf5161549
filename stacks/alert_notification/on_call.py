"""On-call schedules of the alert pattern: their table and the function that finds who is on call for a round.

Schedules declared with the app (``AlertNotification(schedules=[...])``) are validated at synth by
the module the functions use at runtime (``patterns_common.oncall``), so a schedule the app
declares cannot be refused after deployment.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

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
    """The on-call table (one item per schedule, key ``schedule_id``) and Find Who Is On Call."""

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        schedules: Sequence[Mapping[str, Any]],
        signing_key: secretsmanager.ISecret,
    ) -> None:
        super().__init__(scope, id_)
        check_schedules(schedules)
        self.schedules = list(schedules)
        self.table = dynamodb.Table(
            self,
            "OnCallTable",
            partition_key=dynamodb.Attribute(name="schedule_id", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=RemovalPolicy.RETAIN,
        )
        # Stateful: the logical id must never change, or CloudFormation replaces the table.
        self.table.node.default_child.override_logical_id("OnCallTable")
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

"""A Standard state machine deployed from its statemachines/<machine>.asl.json file."""

from __future__ import annotations

import json
from typing import Mapping

from aws_cdk import RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.common.definitions import definition_path, load_definition
from stacks.common.nag import acknowledge


class StandardStateMachine(Construct):
    """Standard workflow with X-Ray, full logging to a log group with retention, inline definition.

    The machine-level ``TimeoutSeconds`` lives in the ASL file (the single source of the
    definition); this construct refuses a file without one.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        machine: str,
        substitutions: Mapping[str, str],
        comment: str,
    ) -> None:
        super().__init__(scope, id_)
        raw = json.loads(definition_path(machine).read_text(encoding="utf-8"))
        if not isinstance(raw.get("TimeoutSeconds"), int):
            raise ValueError(f"{machine}.asl.json must set a machine-level TimeoutSeconds")

        self.log_group = logs.LogGroup(
            self,
            "Logs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.state_machine = sfn.StateMachine(
            self,
            "StateMachine",
            comment=comment,
            definition_body=sfn.DefinitionBody.from_string(load_definition(machine, substitutions)),
            state_machine_type=sfn.StateMachineType.STANDARD,
            tracing_enabled=True,
            logs=sfn.LogOptions(
                destination=self.log_group, level=sfn.LogLevel.ALL, include_execution_data=True
            ),
        )
        acknowledge(
            self.state_machine,
            {
                "AwsSolutions::AwsSolutions-IAM5[Resource::*]": "CloudWatch Logs vended-log delivery "
                "and X-Ray write actions support no resource-level permissions (AWS documents '*').",
            },
        )

    def allow_invoke(self, *functions: lambda_.IFunction) -> None:
        """Let the machine invoke exactly these functions (unqualified ARNs, as the ASL names them).

        Unlike ``grant_invoke`` this adds no ``:*`` version wildcard.
        """
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"], resources=[fn.function_arn for fn in functions]
            )
        )

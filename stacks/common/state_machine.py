"""A Standard state machine deployed from its statemachines/<machine>.asl.json file."""

from __future__ import annotations

import json
from typing import Mapping

from aws_cdk import ArnFormat, Names, RemovalPolicy, Stack
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.common.definitions import definition_path, load_definition
from stacks.common.grants import invoke_statement
from stacks.common.nag import acknowledge

# Logs keep what an operator acts on and nothing an execution carries: only error events (an
# execution failing, timing out or aborted, a task or Map failing, a Fail state), each with the
# execution ARN, the event type, the error name and cause, and no execution data. With ALL and
# execution data, every event would copy inputs, outputs and task parameters into the logs: user
# e-mail addresses and alert messages, the callback's task token, Map ledgers of up to 256 KiB per
# event. The full path of an execution stays in its history (GetExecutionHistory, 90 days, behind
# IAM), which the console shows.
LOG_LEVEL = sfn.LogLevel.ERROR
# AWS asks for this prefix so that Step Functions' log delivery is covered by one CloudWatch Logs
# resource policy whatever the number of log groups ("Avoiding CloudWatch Logs resource policy size
# restrictions", https://docs.aws.amazon.com/step-functions/latest/dg/cw-logs.html).
LOG_GROUP_PREFIX = "/aws/vendedlogs/states/"


class StandardStateMachine(Construct):
    """Standard workflow with X-Ray, error logging to a log group with retention, inline definition.

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
            log_group_name=f"{LOG_GROUP_PREFIX}{Names.unique_id(self)}",
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
                destination=self.log_group, level=LOG_LEVEL, include_execution_data=False
            ),
        )
        acknowledge(
            self.state_machine,
            {
                "AwsSolutions::AwsSolutions-IAM5[Resource::*]": "CloudWatch Logs vended-log delivery "
                "and X-Ray write actions support no resource-level permissions (AWS documents '*').",
                "AwsSolutions::AwsSolutions-SF1": "Error events only, on purpose: at ALL every event's "
                "task parameters would be logged (user addresses, alert messages, the callback's task "
                "token). Every event stays in the execution history, which the console shows.",
            },
        )

    def execution_arns(self, map_run_label: str | None = None) -> str:
        """The ARN pattern of this machine's executions, or of the child executions a Distributed Map
        labelled ``map_run_label`` starts (named ``<machine>/<label>:<id>``)."""
        name = self.state_machine.state_machine_name
        return Stack.of(self).format_arn(
            service="states",
            resource="execution",
            resource_name=f"{name}/{map_run_label}:*" if map_run_label else f"{name}:*",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )

    def allow_invoke(self, *functions: lambda_.IFunction) -> None:
        """Let the machine invoke exactly these functions (unqualified ARNs, as the ASL names them)."""
        self.state_machine.add_to_role_policy(invoke_statement(*functions))

"""Execution monitoring (seed 003): status-change events and alarms to one encrypted topic."""

from __future__ import annotations

from typing import Sequence

from aws_cdk import RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct


class ExecutionMonitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        state_machines: Sequence[sfn.IStateMachine],
        statuses: Sequence[str],
        alert_email: str | None,
    ) -> None:
        super().__init__(scope, id_)
        self.key = kms.Key(
            self,
            "TopicKey",
            description="Encrypts the execution status topic",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        for service in ("events.amazonaws.com", "cloudwatch.amazonaws.com"):
            self.key.grant(iam.ServicePrincipal(service), "kms:Decrypt", "kms:GenerateDataKey*")
        self.topic = sns.Topic(
            self, "StatusTopic", display_name="Step Functions execution status", master_key=self.key, enforce_ssl=True
        )

"""Alert notification pattern (seeds 000/001): nested-loop machine, its table, its functions."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct


class AlertNotification(Construct):
    def __init__(self, scope: Construct, id_: str, *, slack_webhook_secret_name: str, schedule: str) -> None:
        super().__init__(scope, id_)
        self.table = dynamodb.Table(
            self,
            "AlertTable",
            partition_key=dynamodb.Attribute(name="alert_id", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=RemovalPolicy.RETAIN,
        )
        # Stateful: the logical id must never change, or CloudFormation replaces the table.
        self.table.node.default_child.override_logical_id("AlertTable")
        self.state_machines: list[sfn.IStateMachine] = []

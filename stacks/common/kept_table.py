"""DynamoDB tables of records people keep (alerts, on-call schedules): one way to make them."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct


def kept_table(scope: Construct, id_: str, *, partition_key: dynamodb.Attribute, logical_id: str) -> dynamodb.Table:
    """On demand, encrypted, point-in-time recoverable, and kept when its stack is deleted. Stateful: its
    logical id is pinned to ``logical_id``, which must never change, or CloudFormation replaces the table."""
    table = dynamodb.Table(
        scope,
        id_,
        partition_key=partition_key,
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(point_in_time_recovery_enabled=True),
        removal_policy=RemovalPolicy.RETAIN,
    )
    table.node.default_child.override_logical_id(logical_id)
    return table

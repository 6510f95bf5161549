"""DynamoDB tables of short-lived records (idempotency keys, chunk journals): one way to make them."""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct


def short_lived_table(
    scope: Construct, id_: str, *, partition_key: dynamodb.Attribute, sort_key: dynamodb.Attribute | None = None,
    expiry_attribute: str,
) -> dynamodb.Table:
    """On demand, encrypted, point-in-time recoverable; DynamoDB's TTL deletes each record once the
    epoch seconds in ``expiry_attribute`` pass. Nothing in it outlives its use, so the table goes
    with the stack."""
    return dynamodb.Table(
        scope,
        id_,
        partition_key=partition_key,
        sort_key=sort_key,
        billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
        encryption=dynamodb.TableEncryption.AWS_MANAGED,
        time_to_live_attribute=expiry_attribute,
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(point_in_time_recovery_enabled=True),
        removal_policy=RemovalPolicy.DESTROY,
    )

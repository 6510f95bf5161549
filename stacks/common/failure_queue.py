"""Queues where failed work waits for a person, each watched by an alarm on the status topic."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from stacks.common.nag import acknowledge

RETENTION = Duration.days(14)  # SQS's maximum: two weeks to notice and act


@dataclass(frozen=True)
class FailureQueue:
    """A failure queue and what the alarm on its depth (MonitoringStack) tells the reader."""

    queue: sqs.IQueue
    alarm_id: str
    description: str


def failure_queue(scope: Construct, id_: str) -> sqs.Queue:
    """An encrypted, SSL-only queue that a dead-letter config or an on-failure destination writes to."""
    queue = sqs.Queue(
        scope,
        id_,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=RETENTION,
        removal_policy=RemovalPolicy.DESTROY,
    )
    acknowledge(
        queue,
        {
            "AwsSolutions::AwsSolutions-SQS3": "This queue is itself where failed deliveries end up "
            "(a dead-letter queue or an on-failure destination); a person reads it, nothing consumes it.",
        },
    )
    return queue

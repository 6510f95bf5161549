"""JobPollerStack: composes the job poller pattern and publishes its outputs."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from stacks.job_poller.construct import JobPoller


class JobPollerStack(Stack):
    def __init__(self, scope: Construct, id_: str, *, alert_table: dynamodb.ITable, **kwargs: Any) -> None:
        super().__init__(scope, id_, description="S3-backed job poller state machines", **kwargs)
        pattern = JobPoller(self, "JobPoller", alert_table=alert_table)
        self.state_machines = pattern.state_machines
        CfnOutput(self, "StateMachineArn", value=pattern.poller.state_machine.state_machine_arn)
        CfnOutput(self, "JobBucketName", value=pattern.bucket.bucket_name)
        CfnOutput(self, "ExportPollerStateMachineArn", value=pattern.export_poller.state_machine.state_machine_arn)
        CfnOutput(self, "CallbackStateMachineArn", value=pattern.callback.state_machine.state_machine_arn)

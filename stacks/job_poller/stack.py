"""JobPollerStack: composes the job poller pattern and publishes its outputs."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from constructs import Construct

from stacks.job_poller.construct import JobPoller


class JobPollerStack(Stack):
    def __init__(self, scope: Construct, id_: str, **kwargs: Any) -> None:
        super().__init__(scope, id_, description="S3-backed job poller state machines", **kwargs)
        # Something of this stack's own for the SDK-integration poller to export, so that the
        # demonstration depends on no other stack's data. Point-in-time recovery is what an export
        # reads from; whatever is put in the table is only there to be exported, so it goes with the stack.
        export_table = dynamodb.Table(
            self,
            "ExportDemoTable",
            partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=RemovalPolicy.DESTROY,
        )
        pattern = JobPoller(self, "JobPoller", export_table=export_table)
        self.state_machines = pattern.state_machines
        CfnOutput(self, "StateMachineArn", value=pattern.poller.state_machine.state_machine_arn)
        CfnOutput(self, "JobBucketName", value=pattern.bucket.bucket_name)
        CfnOutput(self, "ExportPollerStateMachineArn", value=pattern.export_poller.state_machine.state_machine_arn)
        CfnOutput(
            self,
            "ExportTableName",
            value=export_table.table_name,
            description="The table the SDK-integration poller exports: put items in it to see them exported",
        )
        CfnOutput(self, "CallbackStateMachineArn", value=pattern.callback.state_machine.state_machine_arn)

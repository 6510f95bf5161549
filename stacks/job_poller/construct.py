"""Job poller pattern (seed 004): S3-backed poller, SDK-integration and callback variants."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from stacks.common.nag import acknowledge
from constructs import Construct

JOB_METADATA_EXPIRY = Duration.days(7)


class JobPoller(Construct):
    def __init__(self, scope: Construct, id_: str, *, alert_table: dynamodb.ITable) -> None:
        super().__init__(scope, id_)
        self.bucket = s3.Bucket(
            self,
            "JobBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=False,
            removal_policy=RemovalPolicy.RETAIN,
            lifecycle_rules=[
                s3.LifecycleRule(id="ExpireJobMetadata", prefix="jobs/", expiration=JOB_METADATA_EXPIRY),
            ],
        )
        self.bucket.node.default_child.override_logical_id("JobBucket")
        acknowledge(
            self.bucket,
            {
                "AwsSolutions::AwsSolutions-S1": "Holds short-lived job metadata written only by this "
                "app's functions; CloudTrail data events are the audit trail where one is required.",
            },
        )
        self.state_machines: list[sfn.IStateMachine] = []

"""Job poller pattern (seed 004): S3-backed poller, SDK-integration and callback variants."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.common.nag import acknowledge, acknowledge_wildcard_resource
from stacks.common.python_function import PythonFunction
from stacks.common.state_machine import StandardStateMachine

JOB_METADATA_EXPIRY = Duration.days(7)
# Each task's TimeoutSeconds in the ASL is a few seconds above its function's timeout, so the
# function's own timeout (with its logs) fires first; the infrastructure tests hold the two together.
VALIDATE_TIMEOUT = Duration.seconds(10)
STATUS_IO_TIMEOUT = Duration.seconds(30)
# Lambda's maximum. The demo runners refuse jobs longer than this minus a reporting margin
# (patterns_common.job_demo); real jobs longer than 15 minutes belong on AWS Batch or ECS.
RUNNER_TIMEOUT = Duration.minutes(15)
CALLBACK_RUNNER_MAX_EVENT_AGE = Duration.minutes(4)


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
                s3.LifecycleRule(
                    id="ExpireJobMetadata",
                    prefix="jobs/",
                    expiration=JOB_METADATA_EXPIRY,
                    # a failed table export can leave multipart uploads behind under jobs/<md5>/export
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                ),
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

        self.validate_input = PythonFunction(
            self,
            "ValidateJobInput",
            source="job_validate_input",
            description="Validate Job Input: fills defaults in, rejects bad input with InvalidJobInput",
            timeout=VALIDATE_TIMEOUT,
        )
        self.poller = self._s3_poller()
        self.export_poller = self._export_poller(alert_table)
        self.callback = self._callback_machine()
        self.state_machines: list[sfn.IStateMachine] = [
            self.poller.state_machine,
            self.export_poller.state_machine,
            self.callback.state_machine,
        ]

    def _allow_job_objects(self, function: PythonFunction, action: str, *names: str) -> None:
        """Let ``function`` do ``action`` on the named per-execution objects, jobs/<md5>/<name>."""
        function.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=[action], resources=[self.bucket.arn_for_objects(f"jobs/*/{name}") for name in names]
            )
        )
        acknowledge(
            function,
            {
                f"AwsSolutions::AwsSolutions-IAM5[Resource::<JobBucket.Arn>/jobs/*/{name}]": "One object per "
                "execution, keyed by the md5 of the execution ARN, which exists only at run time."
                for name in names
            },
        )

    def _allow_list(self, function: PythonFunction) -> None:
        # Without ListBucket, S3 answers 403 instead of 404 for status.txt before the runner wrote it.
        function.function.add_to_role_policy(
            iam.PolicyStatement(actions=["s3:ListBucket"], resources=[self.bucket.bucket_arn])
        )

    def _s3_poller(self) -> StandardStateMachine:
        environment = {"JOB_BUCKET_NAME": self.bucket.bucket_name}
        self.runner = PythonFunction(
            self,
            "JobRunner",
            source="demo_job_runner",
            description="Demo job runner: writes running, works, then succeeded or failed to S3",
            timeout=RUNNER_TIMEOUT,
            environment=environment,
        )
        self._no_async_retries(self.runner)
        self._allow_job_objects(self.runner, "s3:PutObject", "status.txt", "result.json")

        self.run_job = PythonFunction(
            self,
            "RunJob",
            source="run_job",
            description="Run Job: records the job start in S3 and starts the runner asynchronously",
            timeout=STATUS_IO_TIMEOUT,
            environment={**environment, "JOB_RUNNER_FUNCTION_NAME": self.runner.function.function_name},
        )
        self._allow_job_objects(self.run_job, "s3:PutObject", "context.json")
        # A retried Run Job reads the first attempt's record and looks for the runner's status.
        self._allow_job_objects(self.run_job, "s3:GetObject", "context.json", "status.txt")
        self._allow_list(self.run_job)
        self.run_job.function.add_to_role_policy(
            iam.PolicyStatement(actions=["lambda:InvokeFunction"], resources=[self.runner.function.function_arn])
        )

        self.get_status = PythonFunction(
            self,
            "GetJobStatus",
            source="job_get_status",
            description="Get Job Status: reads status.txt, raises JobTimeout once the job ran too long",
            timeout=STATUS_IO_TIMEOUT,
            environment=environment,
        )
        self._allow_job_objects(self.get_status, "s3:GetObject", "context.json", "status.txt", "result.json")
        # A job that ran out of time is recorded as timed_out (result.json only if absent, then status.txt).
        self._allow_job_objects(self.get_status, "s3:PutObject", "status.txt", "result.json")
        self._allow_list(self.get_status)

        machine = StandardStateMachine(
            self,
            "JobPollerMachine",
            machine="job_poller",
            comment="S3-backed job poller: Run Job, then Get Job Status every poll_interval_seconds until "
            "succeeded, failed or timeout_seconds",
            substitutions={
                "ValidateJobInputFunctionArn": self.validate_input.function.function_arn,
                "RunJobFunctionArn": self.run_job.function.function_arn,
                "GetJobStatusFunctionArn": self.get_status.function.function_arn,
            },
        )
        machine.allow_invoke(self.validate_input.function, self.run_job.function, self.get_status.function)
        return machine

    def _export_poller(self, alert_table: dynamodb.ITable) -> StandardStateMachine:
        machine = StandardStateMachine(
            self,
            "ExportPollerMachine",
            machine="export_poller",
            comment="Job poller with SDK integrations only: DynamoDB export of the alert table, "
            "describeExport until COMPLETED, FAILED or timeout_seconds",
            substitutions={"AlertTableArn": alert_table.table_arn, "JobBucketName": self.bucket.bucket_name},
        )
        export_objects = self.bucket.arn_for_objects("jobs/*/export/*")
        table_exports = f"{alert_table.table_arn}/export/*"
        for statement in (
            iam.PolicyStatement(actions=["dynamodb:ExportTableToPointInTime"], resources=[alert_table.table_arn]),
            iam.PolicyStatement(actions=["dynamodb:DescribeExport"], resources=[table_exports]),
            # DynamoDB writes the export with the caller's permissions; these three are what AWS documents.
            iam.PolicyStatement(
                actions=["s3:PutObject", "s3:AbortMultipartUpload", "s3:PutObjectAcl"], resources=[export_objects]
            ),
        ):
            machine.state_machine.add_to_role_policy(statement)
        acknowledge(
            machine.state_machine,
            {
                "AwsSolutions::AwsSolutions-IAM5[Resource::<JobBucket.Arn>/jobs/*/export/*]": "DynamoDB "
                "names the export's objects itself, under the per-execution prefix jobs/<md5>/export.",
            },
        )
        acknowledge_wildcard_resource(
            machine.state_machine,
            table_exports,
            "Export ARNs are generated by DynamoDB; this scopes DescribeExport to the alert table's exports.",
        )
        return machine

    def _callback_machine(self) -> StandardStateMachine:
        self.callback_runner = PythonFunction(
            self,
            "CallbackJobRunner",
            source="demo_callback_job_runner",
            description="Demo callback job runner: heartbeats while working, then SendTaskSuccess/Failure",
            timeout=RUNNER_TIMEOUT,
        )
        # Past this age a throttled runner's event is dropped: the task's HeartbeatSeconds (300, in
        # callback_job.asl.json) is longer, so a runner that starts within it is never taken for dead.
        self.callback_runner.function.configure_async_invoke(
            retry_attempts=0, max_event_age=CALLBACK_RUNNER_MAX_EVENT_AGE
        )
        machine = StandardStateMachine(
            self,
            "CallbackMachine",
            machine="callback_job",
            comment="Callback job: the runner reports through its task token, no polling",
            substitutions={
                "ValidateJobInputFunctionArn": self.validate_input.function.function_arn,
                "CallbackRunnerFunctionArn": self.callback_runner.function.function_arn,
            },
        )
        machine.allow_invoke(self.validate_input.function, self.callback_runner.function)
        # A separate policy, not the role's default one: the function depends on its default policy and
        # the machine's definition names the function, so the default policy naming the machine would
        # close a dependency cycle.
        iam.Policy(
            self.callback_runner,
            "SendTaskResult",
            roles=[self.callback_runner.role],
            statements=[
                iam.PolicyStatement(
                    actions=["states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"],
                    resources=[machine.state_machine.state_machine_arn],
                )
            ],
        )
        return machine

    @staticmethod
    def _no_async_retries(function: PythonFunction) -> None:
        # Lambda retries a failed asynchronous invocation twice by default; a crashed runner must
        # stay crashed (the machine reports JobTimeout) instead of running the same job again.
        function.function.configure_async_invoke(retry_attempts=0)

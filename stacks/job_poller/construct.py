"""Job poller pattern (seed 004): S3-backed poller, SDK-integration and callback variants."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from stacks.common.grants import invoke_statement, list_bucket_statement
from stacks.common.nag import acknowledge, acknowledge_wildcard_resource
from stacks.common.python_function import PythonFunction, shared_layer
from stacks.common.state_machine import StandardStateMachine
from stacks.common.team_function import InvalidProp, environment_function, granted_role

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
    """The S3 poller, the SDK-integration (table export) poller and the callback variant over one job bucket.

    - ``job_runner``: a team's function the S3 poller runs the job with, invoked asynchronously with
      ``{"execution_md5", "job"}``; it reports through patterns_common.job_runner. The construct sets its
      ``JOB_BUCKET_NAME``, lets it write the job's status.txt and result.json, and turns off Lambda's
      asynchronous retries (a crashed runner stays crashed).
    - ``callback_job_runner``: a team's function the callback machine runs the job with, invoked
      asynchronously with ``{"task_token", "job", "heartbeat_interval_seconds"}``; it sends heartbeats
      and ends the task with SendTaskSuccess or SendTaskFailure (error ``JobFailed``), which the
      construct lets it call on the callback machine only.
    - ``export_table``: the DynamoDB table (point-in-time recovery on) the SDK-integration poller
      exports. Without it there is no SDK-integration poller (``export_poller`` is None).

    Without a runner the demo runners run. Exposes ``state_machine`` and ``log_group`` (the S3 poller),
    ``export_poller`` and ``callback`` (each with its ``state_machine`` and ``log_group``), ``bucket``,
    ``job_runner`` and ``callback_job_runner`` (the functions used) and ``functions``, the functions
    this construct made, by name.
    """

    def __init__(
        self,
        scope: Construct,
        id_: str,
        *,
        export_table: dynamodb.ITable | None = None,
        job_runner: lambda_.IFunction | None = None,
        callback_job_runner: lambda_.IFunction | None = None,
    ) -> None:
        super().__init__(scope, id_)
        self.functions: dict[str, lambda_.Function] = {}
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
        self.functions["ValidateJobInput"] = self.validate_input.function
        self.poller = self._s3_poller(job_runner)
        self.export_poller = self._export_poller(export_table) if export_table is not None else None
        self.callback = self._callback_machine(callback_job_runner)
        self.state_machine: sfn.StateMachine = self.poller.state_machine
        self.log_group: logs.ILogGroup = self.poller.log_group
        self.state_machines: list[sfn.IStateMachine] = [
            machine.state_machine for machine in (self.poller, self.export_poller, self.callback) if machine is not None
        ]

    @staticmethod
    def job_runner_layer(scope: Construct) -> lambda_.ILayerVersion:
        """The layer with patterns_common.job_runner, the helper a ``job_runner`` reports through: add it
        to the runner's layers."""
        return shared_layer(scope)

    def _allow_job_objects(self, function: PythonFunction | iam.IRole, action: str, *names: str) -> None:
        """Let ``function`` (or a team's function's role) do ``action`` on the named per-execution
        objects, jobs/<md5>/<name>."""
        role = function.role if isinstance(function, PythonFunction) else function
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=[action], resources=[self.bucket.arn_for_objects(f"jobs/*/{name}") for name in names]
            )
        )
        acknowledge(
            function if isinstance(function, PythonFunction) else role,
            {
                f"AwsSolutions::AwsSolutions-IAM5[Resource::<JobBucket.Arn>/jobs/*/{name}]": "One object per "
                "execution, keyed by the md5 of the execution ARN, which exists only at run time."
                for name in names
            },
        )

    def _s3_poller(self, job_runner: lambda_.IFunction | None) -> StandardStateMachine:
        environment = {"JOB_BUCKET_NAME": self.bucket.bucket_name}
        if job_runner is None:
            demo = PythonFunction(
                self,
                "JobRunner",
                source="demo_job_runner",
                description="Demo job runner: writes running, works, then succeeded or failed to S3",
                timeout=RUNNER_TIMEOUT,
                environment=environment,
            )
            self.functions["JobRunner"] = job_runner = demo.function
            self._allow_job_objects(demo, "s3:PutObject", "status.txt", "result.json")
        else:
            team_runner = environment_function(job_runner, "job_runner", "JOB_BUCKET_NAME")
            runner_role = granted_role(job_runner, "job_runner", "writing the job's status.txt and result.json")
            team_runner.add_environment("JOB_BUCKET_NAME", self.bucket.bucket_name)
            self._allow_job_objects(runner_role, "s3:PutObject", "status.txt", "result.json")
        self._no_async_retries(job_runner, "job_runner")
        self.job_runner = job_runner

        self.run_job = PythonFunction(
            self,
            "RunJob",
            source="run_job",
            description="Run Job: records the job start in S3 and starts the runner asynchronously",
            timeout=STATUS_IO_TIMEOUT,
            environment={**environment, "JOB_RUNNER_FUNCTION_NAME": job_runner.function_name},
        )
        self._allow_job_objects(self.run_job, "s3:PutObject", "context.json")
        # A retried Run Job reads the first attempt's record and looks for the runner's status.
        self._allow_job_objects(self.run_job, "s3:GetObject", "context.json", "status.txt")
        self.run_job.function.add_to_role_policy(list_bucket_statement(self.bucket))  # status.txt may not exist yet
        self.run_job.function.add_to_role_policy(invoke_statement(job_runner))

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
        self.get_status.function.add_to_role_policy(list_bucket_statement(self.bucket))  # status.txt may not exist yet

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
        self.functions.update(RunJob=self.run_job.function, GetJobStatus=self.get_status.function)
        return machine

    def _export_poller(self, table: dynamodb.ITable) -> StandardStateMachine:
        machine = StandardStateMachine(
            self,
            "ExportPollerMachine",
            machine="export_poller",
            comment="Job poller with SDK integrations only: DynamoDB export of the table it is given, "
            "describeExport until COMPLETED, FAILED or timeout_seconds",
            substitutions={"ExportTableArn": table.table_arn, "JobBucketName": self.bucket.bucket_name},
        )
        export_objects = self.bucket.arn_for_objects("jobs/*/export/*")
        table_exports = f"{table.table_arn}/export/*"
        for statement in (
            iam.PolicyStatement(actions=["dynamodb:ExportTableToPointInTime"], resources=[table.table_arn]),
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
            "Export ARNs are generated by DynamoDB; this scopes DescribeExport to the exported table's exports.",
        )
        return machine

    def _callback_machine(self, runner: lambda_.IFunction | None) -> StandardStateMachine:
        if runner is None:
            demo = PythonFunction(
                self,
                "CallbackJobRunner",
                source="demo_callback_job_runner",
                description="Demo callback job runner: heartbeats while working, then SendTaskSuccess/Failure",
                timeout=RUNNER_TIMEOUT,
            )
            self.functions["CallbackJobRunner"] = runner = demo.function
            # the policy keeps the logical id it had inside the demo function
            policy_scope, policy_id, runner_role = demo, "SendTaskResult", demo.role
        else:
            runner_role = granted_role(runner, "callback_job_runner", "SendTaskSuccess, SendTaskFailure and SendTaskHeartbeat")
            policy_scope, policy_id = self, "CallbackJobRunnerSendTaskResult"
        # Past this age a throttled runner's event is dropped: the task's HeartbeatSeconds (300, in
        # callback_job.asl.json; under a shorter timeout, which ends the task first anyway) is longer,
        # so a runner that starts within it is never taken for dead.
        self._no_async_retries(runner, "callback_job_runner", max_event_age=CALLBACK_RUNNER_MAX_EVENT_AGE)
        self.callback_job_runner = runner
        machine = StandardStateMachine(
            self,
            "CallbackMachine",
            machine="callback_job",
            comment="Callback job: the runner reports through its task token, no polling",
            substitutions={
                "ValidateJobInputFunctionArn": self.validate_input.function.function_arn,
                "CallbackRunnerFunctionArn": runner.function_arn,
            },
        )
        machine.allow_invoke(self.validate_input.function, runner)
        # A separate policy, not the role's default one: the function depends on its default policy and
        # the machine's definition names the function, so the default policy naming the machine would
        # close a dependency cycle.
        iam.Policy(
            policy_scope,
            policy_id,
            roles=[runner_role],
            statements=[
                iam.PolicyStatement(
                    actions=["states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"],
                    resources=[machine.state_machine.state_machine_arn],
                )
            ],
        )
        return machine

    @staticmethod
    def _no_async_retries(function: lambda_.IFunction, prop: str, max_event_age: Duration | None = None) -> None:
        # Lambda retries a failed asynchronous invocation twice by default; a crashed runner must
        # stay crashed (the machine reports JobTimeout) instead of running the same job again.
        if function.node.try_find_child("EventInvokeConfig") is not None:
            raise InvalidProp(
                f"{prop}: {function.node.path} already has an asynchronous invoke configuration; the poller "
                "sets it (no retries: a crashed runner must not run the job again), so remove yours"
            )
        function.configure_async_invoke(retry_attempts=0, max_event_age=max_event_age)

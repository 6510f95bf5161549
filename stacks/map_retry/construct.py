"""Map retry-failed pattern (seed 002): retry only the items that failed."""

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
from stacks.common.python_function import PythonFunction
from stacks.common.short_lived_table import short_lived_table
from stacks.common.state_machine import StandardStateMachine
from stacks.common.team_function import check_timeout_within, task_timeout_seconds

RUN_EXPIRY = Duration.days(30)
# Must match the ASL's Distributed Map "Label": child executions are named <machine>/<label>:<id>.
CHUNK_MAP_LABEL = "ItemChunks"
INPUTS = "inputs/*"
RUNS = "runs/*"
PREFIX_REASONS = {
    INPUTS: "Users choose the names of the item lists they upload under inputs/; access stops at that prefix.",
    RUNS: "Run objects are keyed by execution and pass, known only at run time; access stops at runs/.",
}


class MapRetry(Construct):
    """The machine, its functions, the items bucket (S3 mode: inputs/ from users, runs/ for chunks,
    manifests and results) and the chunk journal, each function granted only what it touches.

    ``item_processor``: a team's function that processes one item's attempt, given
    ``{"item": <item>, "attempt": <n>}``; it succeeds by returning and fails by raising (the error's
    name is the item's error). Inline mode's Map invokes it; in S3 mode the chunk processor invokes it
    once per item attempt. Without one, the demo processor (patterns_common.items_demo) runs.
    Exposes ``state_machine``, ``log_group``, ``item_processor`` (the function items run through)
    and ``functions``, the functions this construct made, by name.
    """

    def __init__(self, scope: Construct, id_: str, *, item_processor: lambda_.IFunction | None = None) -> None:
        super().__init__(scope, id_)
        self.bucket = s3.Bucket(
            self,
            "ItemsBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            removal_policy=RemovalPolicy.RETAIN,
            lifecycle_rules=[s3.LifecycleRule(id="ExpireRuns", prefix="runs/", expiration=RUN_EXPIRY)],
        )
        self.bucket.node.default_child.override_logical_id("ItemsBucket")
        acknowledge(
            self.bucket,
            {
                "AwsSolutions::AwsSolutions-S1": "Holds item lists users upload and the machine's own "
                "short-lived run objects; CloudTrail data events are the audit trail where one is required.",
            },
        )
        bucket_env = {"ITEMS_BUCKET_NAME": self.bucket.bucket_name}
        # S3 mode: each item's outcome, recorded as a chunk finishes it, so a chunk that dies later
        # does not run its finished items again (patterns_common.map_retry_journal says why DynamoDB).
        self.chunk_journal = short_lived_table(
            self,
            "ChunkJournal",
            partition_key=dynamodb.Attribute(name="chunk_key", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="position", type=dynamodb.AttributeType.NUMBER),
            expiry_attribute="expires_at",
        )
        journal_env = {**bucket_env, "CHUNK_JOURNAL_TABLE_NAME": self.chunk_journal.table_name}

        made: dict[str, PythonFunction] = {}
        if item_processor is None:
            made["ItemProcessor"] = PythonFunction(
                self,
                "ItemProcessor",
                source="map_item_processor",
                description="Map retry-failed: processes one item's attempt (demo processor)",
                timeout=Duration.seconds(30),
            )
            item_processor = made["ItemProcessor"].function
            # The demo processor also runs inside the chunk processor: no Lambda call per item.
            chunk_processor_env = journal_env
        else:
            check_timeout_within(
                item_processor,
                "item_processor",
                task_timeout_seconds("map_retry", "Process Item"),
                "the TimeoutSeconds of the Map's Process Item task, so Lambda's own timeout ends an attempt first",
            )
            chunk_processor_env = {**journal_env, "ITEM_PROCESSOR_FUNCTION_NAME": item_processor.function_arn}
        self.item_processor = item_processor
        validate_items = PythonFunction(
            self,
            "ValidateItems",
            source="map_validate_items",
            description="Map retry-failed: validates inline items and starts the pass ledger",
            timeout=Duration.seconds(30),
        )
        record_pass = PythonFunction(
            self,
            "RecordPass",
            source="map_record_pass",
            description="Map retry-failed: records an inline pass's results in the ledger",
            timeout=Duration.seconds(30),
        )
        split_items = PythonFunction(
            self,
            "SplitItems",
            source="map_split_items",
            description="Map retry-failed: validates an S3 item list and writes pass 1's chunks",
            timeout=Duration.minutes(5),
            memory_size=1024,
            environment=bucket_env,
        )
        chunk_processor = PythonFunction(
            self,
            "ChunkProcessor",
            source="map_chunk_processor",
            description="Map retry-failed: processes one chunk of items and writes its results",
            timeout=Duration.minutes(10),
            memory_size=512,
            environment=chunk_processor_env,
        )
        record_chunks = PythonFunction(
            self,
            "RecordChunks",
            source="map_record_chunks",
            description="Map retry-failed: records a chunked pass's results and writes the next chunks",
            timeout=Duration.minutes(5),
            memory_size=1024,
            environment=journal_env,
        )

        self._allow_objects(split_items, read=INPUTS, write=RUNS)
        self._allow_objects(chunk_processor, read=RUNS, write=RUNS)
        self._allow_objects(record_chunks, read=RUNS, write=RUNS)
        # HeadObject asks for a chunk's results object, which may not exist yet.
        chunk_processor.function.add_to_role_policy(list_bucket_statement(self.bucket))
        self.chunk_journal.grant(chunk_processor.function, "dynamodb:Query", "dynamodb:PutItem")
        self.chunk_journal.grant(record_chunks.function, "dynamodb:Query")
        if not made.get("ItemProcessor"):
            chunk_processor.function.add_to_role_policy(invoke_statement(item_processor))

        self.machine = StandardStateMachine(
            self,
            "Machine",
            machine="map_retry",
            comment="Map that retries only the items that failed, never the ones that succeeded",
            substitutions={
                "ValidateItemsFunctionArn": validate_items.function.function_arn,
                "SplitItemsFunctionArn": split_items.function.function_arn,
                "ItemProcessorFunctionArn": item_processor.function_arn,
                "ChunkProcessorFunctionArn": chunk_processor.function.function_arn,
                "RecordPassFunctionArn": record_pass.function.function_arn,
                "RecordChunksFunctionArn": record_chunks.function.function_arn,
            },
        )
        made.update(
            ValidateItems=validate_items,
            SplitItems=split_items,
            ChunkProcessor=chunk_processor,
            RecordPass=record_pass,
            RecordChunks=record_chunks,
        )
        self.functions: dict[str, lambda_.Function] = {name: f.function for name, f in made.items()}
        self.machine.allow_invoke(
            validate_items.function,
            split_items.function,
            item_processor,
            *(f.function for f in (chunk_processor, record_pass, record_chunks)),
        )
        self._allow_distributed_map(self.machine)
        self.state_machine: sfn.StateMachine = self.machine.state_machine
        self.log_group: logs.ILogGroup = self.machine.log_group
        self.state_machines: list[sfn.IStateMachine] = [self.machine.state_machine]

    def _allow_objects(self, function: PythonFunction, *, read: str, write: str) -> None:
        """GetObject on ``read`` and PutObject on ``write`` objects of the items bucket, nothing else."""
        for action, pattern in (("s3:GetObject", read), ("s3:PutObject", write)):
            function.function.add_to_role_policy(
                iam.PolicyStatement(actions=[action], resources=[self.bucket.arn_for_objects(pattern)])
            )
        acknowledge(
            function.role,
            {f"AwsSolutions::AwsSolutions-IAM5[Resource::<ItemsBucket.Arn>/{p}]": PREFIX_REASONS[p] for p in {read, write}},
        )

    def _allow_distributed_map(self, machine: StandardStateMachine) -> None:
        """What "Process Pending Chunks" needs: read manifests (ItemReader) and run child executions.

        A separate policy: the machine resource depends on its role's default policy, so a
        statement naming the machine itself must live outside it (as CDK's own DistributedMap does).
        """
        child_executions = machine.execution_arns(map_run_label=CHUNK_MAP_LABEL)
        policy = iam.Policy(
            self,
            "DistributedMapPolicy",
            statements=[
                iam.PolicyStatement(actions=["s3:GetObject"], resources=[self.bucket.arn_for_objects(RUNS)]),
                iam.PolicyStatement(actions=["states:StartExecution"], resources=[machine.state_machine.state_machine_arn]),
                iam.PolicyStatement(
                    actions=["states:DescribeExecution", "states:StopExecution", "states:RedriveExecution"],
                    resources=[child_executions],
                ),
            ],
        )
        policy.attach_to_role(machine.state_machine.role)
        acknowledge(
            policy,
            {
                "AwsSolutions::AwsSolutions-IAM5[Resource::<ItemsBucket.Arn>/runs/*]": "The ItemReader reads "
                "each pass's manifest: " + PREFIX_REASONS[RUNS],
            },
        )
        acknowledge_wildcard_resource(
            policy,
            child_executions,
            "Child executions of the Distributed Map get generated names under this machine's map-run label.",
        )

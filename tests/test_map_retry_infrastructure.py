"""MapRetryStack template: outputs, the deployed definition's Map configuration, IAM scope, bucket,
chunk journal.

Only this stack is synthesized (in a fresh App, cdk-nag on), so the test does not depend on the
other patterns.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Validations
from aws_cdk.assertions import Match, Template
from cdk_nag import AwsSolutionsChecks

from stacks.map_retry.stack import MapRetryStack

FUNCTIONS = {
    "ValidateItems": "map_validate_items",
    "SplitItems": "map_split_items",
    "ItemProcessor": "map_item_processor",
    "ChunkProcessor": "map_chunk_processor",
    "RecordPass": "map_record_pass",
    "RecordChunks": "map_record_chunks",
}
S3_FUNCTIONS = {"SplitItems", "ChunkProcessor", "RecordChunks"}
JOURNAL_FUNCTIONS = {"ChunkProcessor", "RecordChunks"}
LAMBDA_SERVICE_ERRORS = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory) -> tuple[MapRetryStack, Template, Path]:
    outdir = tmp_path_factory.mktemp("map-retry-cdk.out")
    app = App(outdir=str(outdir))
    stack = MapRetryStack(app, "MapRetryStack")
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged cdk-nag finding
    return stack, Template.from_stack(stack), outdir / "MapRetryStack.template.json"


@pytest.fixture(scope="module")
def template(synthesized) -> Template:
    return synthesized[1]


@pytest.fixture(scope="module")
def resources(template) -> dict[str, Any]:
    return template.to_json()["Resources"]


def logical_id(resources: dict[str, Any], type_: str, prefix: str) -> str:
    (found,) = [k for k, v in resources.items() if v["Type"] == type_ and k.startswith(prefix)]
    return found


def function_id(resources, name: str) -> str:
    return logical_id(resources, "AWS::Lambda::Function", f"MapRetry{name}Function")


@pytest.fixture(scope="module")
def definition(resources) -> dict[str, Any]:
    """The deployed DefinitionString, with each CloudFormation reference shown as REF(<logical id>)."""
    machine = resources[logical_id(resources, "AWS::StepFunctions::StateMachine", "MapRetryMachine")]
    parts = machine["Properties"]["DefinitionString"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else f"REF({p['Fn::GetAtt'][0]})" for p in parts)
    return json.loads(text)


def all_states(definition: dict[str, Any]) -> dict[str, dict[str, Any]]:
    states = dict(definition["States"])
    for state in definition["States"].values():
        if state["Type"] == "Map":
            states.update(all_states(state["ItemProcessor"]))
    return states


def statements(resources, policy_prefix: str) -> list[dict[str, Any]]:
    policy = resources[logical_id(resources, "AWS::IAM::Policy", policy_prefix)]
    return policy["Properties"]["PolicyDocument"]["Statement"]


def test_stack_outputs_the_machine_arn_and_the_items_bucket(synthesized, template):
    # Given
    stack, _, _ = synthesized
    outputs = template.to_json()["Outputs"]
    # Then
    assert set(outputs) == {"StateMachineArn", "ItemsBucketName"}
    assert outputs["StateMachineArn"]["Value"]["Ref"].startswith("MapRetryMachineStateMachine")
    assert outputs["ItemsBucketName"]["Value"] == {"Ref": "ItemsBucket"}
    assert len(stack.state_machines) == 1


def test_template_passes_cfn_lint(synthesized):
    # When
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), "--format", "parseable", str(synthesized[2])],
        capture_output=True,
        text=True,
    )
    # Then
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_task_invokes_one_of_this_stacks_functions(definition, resources):
    # Given
    tasks = {name: s for name, s in all_states(definition).items() if s["Type"] == "Task"}
    # Then
    assert {s["Resource"] for s in tasks.values()} == {"arn:aws:states:::lambda:invoke"}
    invoked = {s["Arguments"]["FunctionName"] for s in tasks.values()}
    assert invoked == {f"REF({function_id(resources, name)})" for name in FUNCTIONS}


def test_every_task_but_the_item_processors_retries_lambda_service_exceptions(definition):
    # Process Item retries throttling only (its service errors run in tests/test_fault_matrix_execution.py);
    # the other tasks are safe to run twice (they compute, or skip what is already recorded).
    for name, state in all_states(definition).items():
        if state["Type"] == "Task" and name != "Process Item":
            assert {error for retrier in state["Retry"] for error in retrier["ErrorEquals"]} == LAMBDA_SERVICE_ERRORS, name
            assert all(retrier["MaxAttempts"] >= 2 and retrier["BackoffRate"] > 1 for retrier in state["Retry"]), name


def test_items_run_in_an_inline_map_that_is_never_retried_as_a_whole(definition):
    # What an item's error becomes (its exception name, Sandbox.Timedout, States.DataLimitExceeded)
    # is run in tests/test_map_retry_execution.py; here, what no execution shows until it hurts.
    map_state = definition["States"]["Process Pending Items"]
    # Then: the Map itself has no Retry (that would rerun successes) and bounded concurrency
    assert map_state["ItemProcessor"]["ProcessorConfig"]["Mode"] == "INLINE"
    assert "Retry" not in map_state
    assert 1 <= map_state["MaxConcurrency"] <= 40


def test_chunks_run_in_a_distributed_map_retried_only_when_its_manifest_cannot_be_read(definition):
    # Given
    map_state = definition["States"]["Process Pending Chunks"]
    # Then: a Distributed Map over the pass's manifest in S3
    assert map_state["ItemReader"]["Resource"] == "arn:aws:states:::s3:getObject"
    assert map_state["ItemProcessor"]["ProcessorConfig"] == {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}
    # ... whose only Retry is for reading the manifest, which fails before any chunk runs, so a
    # retry never reruns an item
    assert [r["ErrorEquals"] for r in map_state["Retry"]] == [["States.ItemReaderFailed"]]


def test_definition_uses_no_jsonpath_filter(definition):
    # moto raises on an empty filter result where AWS returns []; the ledger Lambdas need none.
    assert "[?(" not in json.dumps(definition)


def test_state_names_read_as_sentences(definition):
    # Title-case words (acronyms such as S3 allowed), questions for Choice states only
    for name, state in all_states(definition).items():
        assert re.fullmatch(r"[A-Z][a-z]+( ([A-Z][a-z]*|[A-Z][A-Z0-9]+))+\??", name), name
        assert name.endswith("?") == (state["Type"] == "Choice"), name


def test_item_task_timeout_outlasts_the_processor_function(definition, resources):
    # Lambda's own timeout stops the work first; the task timeout only catches a lost invocation.
    states = all_states(definition)
    for state, name in (("Process Item", "ItemProcessor"), ("Process Item Chunk", "ChunkProcessor")):
        function_timeout = resources[function_id(resources, name)]["Properties"]["Timeout"]
        assert states[state]["TimeoutSeconds"] > function_timeout, state


def test_machine_invokes_exactly_its_six_functions(resources):
    # Given
    invoke = [s for s in statements(resources, "MapRetryMachineStateMachineRoleDefaultPolicy") if s["Action"] == "lambda:InvokeFunction"]
    # Then: one statement, the six unqualified function ARNs, no wildcard
    assert len(invoke) == 1
    assert sorted(r["Fn::GetAtt"][0] for r in invoke[0]["Resource"]) == sorted(function_id(resources, n) for n in FUNCTIONS)


def test_distributed_map_permissions_name_this_machine_and_the_runs_prefix(resources):
    # Given
    policy = statements(resources, "MapRetryDistributedMapPolicy")
    by_action = {json.dumps(s["Action"]): s["Resource"] for s in policy}
    machine = logical_id(resources, "AWS::StepFunctions::StateMachine", "MapRetryMachine")
    # Then
    assert by_action['"s3:GetObject"'] == {"Fn::Join": ["", [{"Fn::GetAtt": ["ItemsBucket", "Arn"]}, "/runs/*"]]}
    assert by_action['"states:StartExecution"'] == {"Ref": machine}
    child_executions = by_action['["states:DescribeExecution", "states:StopExecution", "states:RedriveExecution"]']
    assert {"Fn::GetAtt": [machine, "Name"]} in child_executions["Fn::Join"][1]
    assert child_executions["Fn::Join"][1][-1] == "/ItemChunks:*"


def s3_grants(resources, name: str) -> dict[str, Any]:
    return {
        s["Action"]: s["Resource"]
        for s in statements(resources, f"MapRetry{name}RoleDefaultPolicy")
        if str(s["Action"]).startswith("s3:")
    }


def objects(prefix: str) -> dict[str, Any]:
    return {"Fn::Join": ["", [{"Fn::GetAtt": ["ItemsBucket", "Arn"]}, f"/{prefix}/*"]]}


def test_functions_reach_only_their_prefixes_of_the_items_bucket(resources):
    # Then
    assert s3_grants(resources, "SplitItems") == {"s3:GetObject": objects("inputs"), "s3:PutObject": objects("runs")}
    assert s3_grants(resources, "RecordChunks") == {"s3:GetObject": objects("runs"), "s3:PutObject": objects("runs")}
    assert s3_grants(resources, "ChunkProcessor") == {
        "s3:GetObject": objects("runs"),
        "s3:PutObject": objects("runs"),
        "s3:ListBucket": {"Fn::GetAtt": ["ItemsBucket", "Arn"]},
    }
    for name in set(FUNCTIONS) - S3_FUNCTIONS:
        assert s3_grants(resources, name) == {}, name


def test_only_s3_functions_are_told_the_bucket(resources):
    for name, source in FUNCTIONS.items():
        env = resources[function_id(resources, name)]["Properties"]["Environment"]["Variables"]
        assert env["POWERTOOLS_SERVICE_NAME"] == source
        assert env.get("ITEMS_BUCKET_NAME") == ({"Ref": "ItemsBucket"} if name in S3_FUNCTIONS else None), name


def dynamodb_grants(resources, name: str) -> list[tuple[Any, Any]]:
    return [
        (s["Action"], s["Resource"])
        for s in statements(resources, f"MapRetry{name}RoleDefaultPolicy")
        if "dynamodb:" in json.dumps(s["Action"])
    ]


def test_chunk_journal_is_written_by_the_chunk_processor_and_read_by_the_record_step_only(resources):
    # Given
    journal = logical_id(resources, "AWS::DynamoDB::Table", "MapRetryChunkJournal")
    table = [{"Fn::GetAtt": [journal, "Arn"]}]
    # Then: the processor records and reads its chunk's outcomes; Record Chunk Results only reads
    assert dynamodb_grants(resources, "ChunkProcessor") == [(["dynamodb:Query", "dynamodb:PutItem"], table)]
    assert dynamodb_grants(resources, "RecordChunks") == [("dynamodb:Query", table)]
    for name in set(FUNCTIONS) - JOURNAL_FUNCTIONS:
        assert dynamodb_grants(resources, name) == [], name
    for name in FUNCTIONS:
        env = resources[function_id(resources, name)]["Properties"]["Environment"]["Variables"]
        assert env.get("CHUNK_JOURNAL_TABLE_NAME") == ({"Ref": journal} if name in JOURNAL_FUNCTIONS else None), name


def test_chunk_journal_is_keyed_by_chunk_and_position_and_expires_its_records(resources):
    # Given
    journal = resources[logical_id(resources, "AWS::DynamoDB::Table", "MapRetryChunkJournal")]["Properties"]
    # Then: one Query reads a chunk's records; TTL removes them; on demand, encrypted, recoverable
    assert journal["KeySchema"] == [
        {"AttributeName": "chunk_key", "KeyType": "HASH"},
        {"AttributeName": "position", "KeyType": "RANGE"},
    ]
    assert journal["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert journal["BillingMode"] == "PAY_PER_REQUEST"
    assert journal["SSESpecification"] == {"SSEEnabled": True}
    assert journal["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True


def test_items_bucket_is_private_encrypted_and_expires_run_objects(template, resources):
    # Then
    assert resources["ItemsBucket"]["DeletionPolicy"] == "Retain"  # stable id: users' item lists live here
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {"ServerSideEncryptionConfiguration": [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]},
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "LifecycleConfiguration": {"Rules": [{"Id": "ExpireRuns", "Prefix": "runs/", "ExpirationInDays": 30, "Status": "Enabled"}]},
        },
    )
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {"PolicyDocument": {"Statement": Match.array_with([Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})])}},
    )


def test_the_machine_timeout_outlasts_the_last_pass_that_may_start(definition):
    # Given: no pass starts 12 hours after the execution ("Retry Failed Items?"); the slowest pass
    # is the largest S3 run, its chunks in waves of MaxConcurrency, each chunk task at most its
    # TimeoutSeconds, then Record Chunk Results at its function's 5 minutes
    from patterns_common.map_retry import CHUNK_SIZE, S3_MAX_ITEMS

    states = all_states(definition)
    choice = json.dumps(states["Retry Failed Items?"])
    assert choice.count("< 43200000") == 2  # both retry rules carry the 12-hour deadline (ms)
    chunks = states["Process Pending Chunks"]
    waves = -(-(S3_MAX_ITEMS // CHUNK_SIZE) // chunks["MaxConcurrency"])
    slowest_pass = waves * chunks["ItemProcessor"]["States"]["Process Item Chunk"]["TimeoutSeconds"] + 300
    # Then: a run still going at the deadline ends with its summary, never TIMED_OUT
    assert definition["TimeoutSeconds"] >= 43_200 + 60 + slowest_pass

"""JobPollerStack template: outputs, the job bucket, least-privilege IAM, and the three definitions."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from emulator.stepfunctions.jsonata import evaluate
from patterns_common.job_demo import MAX_DURATION_SECONDS
from stacks.common.definitions import definition_path
from tests.lambda_loader import load_lambda_module

ROOT = Path(__file__).resolve().parents[1]

LAMBDA_SERVICE_ERRORS = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}
MACHINES = ("job_poller", "export_poller", "callback_job")
# Title-case words, optionally ending in "?" for a Choice: "Wait Before Next Poll", "Job Complete?"
SENTENCE = re.compile(r"^[A-Z][a-z]*( [A-Z][a-z]*)*\??$")


def listed(value: Any) -> list:
    return value if isinstance(value, list) else [value]


def as_set(*resources: Any) -> list[str]:
    """IAM resources in a comparable form: the minimizePolicies flag merges and reorders them."""
    return sorted(json.dumps(resource, sort_keys=True) for resource in resources)


@dataclass(frozen=True)
class Synthesized:
    template: dict[str, Any]
    resources: dict[str, dict]

    def of_type(self, resource_type: str) -> dict[str, dict]:
        return {k: v for k, v in self.resources.items() if v["Type"] == resource_type}

    def logical_id(self, resource_type: str, prefix: str) -> str:
        [found] = [k for k in self.of_type(resource_type) if k.startswith(prefix)]
        return found

    def statements(self, role_prefix: str) -> list[dict]:
        """Every statement of every policy attached to the role whose logical id starts with role_prefix."""
        role = self.logical_id("AWS::IAM::Role", role_prefix)
        return [
            statement
            for policy in self.of_type("AWS::IAM::Policy").values()
            if {"Ref": role} in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        ]

    def grants(self, role_prefix: str) -> dict[str, list[str]]:
        """action -> resources (as sorted JSON, since minimizePolicies reorders them) for the role,
        leaving out the logs/X-Ray plumbing every role has."""
        result: dict[str, list] = {}
        for statement in self.statements(role_prefix):
            actions, resources = listed(statement["Action"]), listed(statement["Resource"])
            if any(a.startswith(("logs:", "xray:")) for a in actions):
                continue
            for action in actions:
                result.setdefault(action, []).extend(resources)
        return {action: as_set(*found) for action, found in result.items()}

    def machine(self, prefix: str) -> dict:
        return self.resources[self.logical_id("AWS::StepFunctions::StateMachine", prefix)]["Properties"]


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory) -> Synthesized:
    """JobPollerStack alone, as the app builds it: it depends on no other stack."""
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    from aws_cdk import App, Environment, Validations
    from aws_cdk.assertions import Template
    from cdk_nag import AwsSolutionsChecks

    from stacks.job_poller.stack import JobPollerStack

    # Same context (feature flags such as minimizePolicies) and a concrete environment, as `cdk deploy`
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    app = App(outdir=str(tmp_path_factory.mktemp("cdk.out")), context=context)
    env = Environment(account="123456789012", region="us-east-1")
    stack = JobPollerStack(app, "JobPollerStack", env=env)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises on any unacknowledged cdk-nag finding
    template = Template.from_stack(stack).to_json()
    assert len(stack.state_machines) == 3
    return Synthesized(template=template, resources=template["Resources"])


def asl(machine: str) -> dict:
    return json.loads(definition_path(machine).read_text())


def tasks(definition: dict) -> dict[str, dict]:
    return {name: state for name, state in definition["States"].items() if state["Type"] == "Task"}


def test_stack_publishes_the_four_interface_outputs(synthesized):
    assert set(synthesized.template["Outputs"]) >= {
        "StateMachineArn",
        "JobBucketName",
        "ExportPollerStateMachineArn",
        "CallbackStateMachineArn",
    }


def test_outputs_point_at_the_matching_machines(synthesized):
    outputs = synthesized.template["Outputs"]
    for output, prefix in [
        ("StateMachineArn", "JobPollerJobPollerMachine"),
        ("ExportPollerStateMachineArn", "JobPollerExportPollerMachine"),
        ("CallbackStateMachineArn", "JobPollerCallbackMachine"),
    ]:
        machine = synthesized.logical_id("AWS::StepFunctions::StateMachine", prefix)
        assert outputs[output]["Value"] == {"Ref": machine}
    assert outputs["JobBucketName"]["Value"] == {"Ref": "JobBucket"}


# ---------------------------------------------------------------------------------------------
# The job bucket
# ---------------------------------------------------------------------------------------------


def test_job_bucket_is_encrypted_private_and_retained(synthesized):
    bucket = synthesized.resources["JobBucket"]
    props = bucket["Properties"]
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"] == [
        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
    ]
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert bucket["DeletionPolicy"] == "Retain"


def test_job_bucket_refuses_requests_without_tls(synthesized):
    [policy] = synthesized.of_type("AWS::S3::BucketPolicy").values()
    assert policy["Properties"]["Bucket"] == {"Ref": "JobBucket"}
    [deny] = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert deny["Action"] == "s3:*"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_job_data_expires_by_lifecycle_rule(synthesized):
    [rule] = synthesized.resources["JobBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    assert rule["Prefix"] == "jobs/"
    assert rule["ExpirationInDays"] == 7
    assert rule["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    assert rule["Status"] == "Enabled"


# ---------------------------------------------------------------------------------------------
# IAM: each role holds exactly what its code calls
# ---------------------------------------------------------------------------------------------


def job_objects(*names: str) -> list[dict]:
    return [{"Fn::Join": ["", [{"Fn::GetAtt": ["JobBucket", "Arn"]}, f"/jobs/*/{name}"]]} for name in names]


def function_arn(synthesized: Synthesized, prefix: str) -> dict:
    return {"Fn::GetAtt": [synthesized.logical_id("AWS::Lambda::Function", prefix), "Arn"]}


def test_run_job_writes_only_context_json_reads_what_a_retry_needs_and_invokes_only_the_runner(synthesized):
    assert synthesized.grants("JobPollerRunJob") == {
        "s3:PutObject": as_set(*job_objects("context.json")),
        "s3:GetObject": as_set(*job_objects("context.json", "status.txt")),
        "s3:ListBucket": as_set({"Fn::GetAtt": ["JobBucket", "Arn"]}),
        "lambda:InvokeFunction": as_set(function_arn(synthesized, "JobPollerJobRunner")),
    }


def test_runner_writes_only_status_and_result(synthesized):
    assert synthesized.grants("JobPollerJobRunner") == {
        "s3:PutObject": as_set(*job_objects("status.txt", "result.json"))
    }


def test_get_job_status_reads_the_job_objects_records_timeouts_and_may_list_so_missing_is_404(synthesized):
    assert synthesized.grants("JobPollerGetJobStatus") == {
        "s3:GetObject": as_set(*job_objects("context.json", "status.txt", "result.json")),
        "s3:PutObject": as_set(*job_objects("status.txt", "result.json")),
        "s3:ListBucket": as_set({"Fn::GetAtt": ["JobBucket", "Arn"]}),
    }


def test_validate_job_input_has_no_grants(synthesized):
    assert synthesized.grants("JobPollerValidateJobInput") == {}


def test_poller_machine_invokes_exactly_its_three_functions(synthesized):
    assert synthesized.grants("JobPollerJobPollerMachine") == {
        "lambda:InvokeFunction": as_set(
            *(
                function_arn(synthesized, f)
                for f in ("JobPollerValidateJobInput", "JobPollerRunJob", "JobPollerGetJobStatus")
            )
        )
    }


def test_the_stack_imports_nothing_from_another_stack(synthesized):
    # The demonstration export poller exports a table of this stack's own: no other stack's resource
    # is needed to deploy it, and no other stack must be deployed first.
    assert "Fn::ImportValue" not in json.dumps(synthesized.template)


def test_the_demo_table_to_export_is_published_and_can_be_exported(synthesized):
    # An export reads the table's point-in-time recovery data
    # (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/S3DataExport.HowItWorks.html)
    table = synthesized.logical_id("AWS::DynamoDB::Table", "ExportDemoTable")
    properties = synthesized.resources[table]["Properties"]
    assert properties["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert synthesized.template["Outputs"]["ExportTableName"]["Value"] == {"Ref": table}


def test_export_machine_is_scoped_to_its_table_and_the_export_prefix(synthesized):
    table_arn = {"Fn::GetAtt": [synthesized.logical_id("AWS::DynamoDB::Table", "ExportDemoTable"), "Arn"]}
    export_objects = as_set({"Fn::Join": ["", [{"Fn::GetAtt": ["JobBucket", "Arn"]}, "/jobs/*/export/*"]]})
    assert synthesized.grants("JobPollerExportPollerMachine") == {
        "dynamodb:ExportTableToPointInTime": as_set(table_arn),
        "dynamodb:DescribeExport": as_set({"Fn::Join": ["", [table_arn, "/export/*"]]}),
        "s3:PutObject": export_objects,
        "s3:AbortMultipartUpload": export_objects,
        "s3:PutObjectAcl": export_objects,
    }


def test_callback_runner_may_report_only_to_the_callback_machine(synthesized):
    logical_id = synthesized.logical_id("AWS::StepFunctions::StateMachine", "JobPollerCallbackMachine")
    machine = as_set({"Ref": logical_id})
    assert synthesized.grants("JobPollerCallbackJobRunner") == {
        "states:SendTaskSuccess": machine,
        "states:SendTaskFailure": machine,
        "states:SendTaskHeartbeat": machine,
    }
    assert synthesized.grants("JobPollerCallbackMachine") == {
        "lambda:InvokeFunction": as_set(
            *(function_arn(synthesized, f) for f in ("JobPollerValidateJobInput", "JobPollerCallbackJobRunner"))
        )
    }


# ---------------------------------------------------------------------------------------------
# Functions
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("runner", ["JobPollerJobRunner", "JobPollerCallbackJobRunner"])
def test_runners_can_hold_the_longest_demo_job_and_are_never_retried(synthesized, runner):
    function = synthesized.logical_id("AWS::Lambda::Function", runner)
    timeout = synthesized.resources[function]["Properties"]["Timeout"]
    # Then: Lambda's maximum, with room to report after the longest job
    assert timeout == 900 and MAX_DURATION_SECONDS < timeout
    [config] = [
        c["Properties"]
        for c in synthesized.of_type("AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": function}
    ]
    assert config["MaximumRetryAttempts"] == 0


def test_functions_know_the_bucket_and_run_job_knows_the_runner(synthesized):
    def environment(prefix: str) -> dict:
        logical_id = synthesized.logical_id("AWS::Lambda::Function", prefix)
        return synthesized.resources[logical_id]["Properties"]["Environment"]["Variables"]

    for prefix in ("JobPollerRunJob", "JobPollerGetJobStatus", "JobPollerJobRunner"):
        assert environment(prefix)["JOB_BUCKET_NAME"] == {"Ref": "JobBucket"}
    assert environment("JobPollerRunJob")["JOB_RUNNER_FUNCTION_NAME"] == {
        "Ref": synthesized.logical_id("AWS::Lambda::Function", "JobPollerJobRunner")
    }


# ---------------------------------------------------------------------------------------------
# Definitions
# ---------------------------------------------------------------------------------------------


def placeholders_in(machine_props: dict) -> dict[str, Any]:
    """The deploy-time values spliced into an inline DefinitionString, keyed by what precedes them."""
    parts = machine_props["DefinitionString"]["Fn::Join"][1]
    return {json.dumps(part): part for part in parts if isinstance(part, dict)}


@pytest.mark.parametrize(
    "prefix, functions",
    [
        ("JobPollerJobPollerMachine", ["JobPollerValidateJobInput", "JobPollerRunJob", "JobPollerGetJobStatus"]),
        ("JobPollerCallbackMachine", ["JobPollerValidateJobInput", "JobPollerCallbackJobRunner"]),
        ("JobPollerExportPollerMachine", []),
    ],
)
def test_each_deployed_definition_names_its_own_functions(synthesized, prefix, functions):
    spliced = placeholders_in(synthesized.machine(prefix)).values()
    named = {p["Fn::GetAtt"][0] for p in spliced if "Fn::GetAtt" in p and p["Fn::GetAtt"][1] == "Arn"}
    named_functions = {n for n in named if n in synthesized.of_type("AWS::Lambda::Function")}
    assert named_functions == {synthesized.logical_id("AWS::Lambda::Function", f) for f in functions}


@pytest.mark.parametrize("machine", MACHINES)
def test_state_names_read_as_sentences(machine):
    for name in asl(machine)["States"]:
        assert SENTENCE.match(name), name


FUNCTION_OF_PLACEHOLDER = {
    "${ValidateJobInputFunctionArn}": "JobPollerValidateJobInput",
    "${RunJobFunctionArn}": "JobPollerRunJob",
    "${GetJobStatusFunctionArn}": "JobPollerGetJobStatus",
    "${CallbackRunnerFunctionArn}": "JobPollerCallbackJobRunner",
}


@pytest.mark.parametrize("machine", ["job_poller", "callback_job"])
def test_lambda_tasks_retry_service_errors_and_time_out_after_their_function(synthesized, machine):
    for name, task in tasks(asl(machine)).items():
        assert task["Resource"].startswith("arn:aws:states:::lambda:invoke"), name
        retried = {error for retry in task["Retry"] for error in retry["ErrorEquals"]}
        assert retried >= LAMBDA_SERVICE_ERRORS, name
        if isinstance(task["TimeoutSeconds"], int):  # (the callback task's is the job's own timeout)
            function = FUNCTION_OF_PLACEHOLDER[task["Arguments"]["FunctionName"]]
            logical_id = synthesized.logical_id("AWS::Lambda::Function", function)
            assert task["TimeoutSeconds"] > synthesized.resources[logical_id]["Properties"]["Timeout"], name


def test_export_tasks_use_sdk_integrations_with_timeouts_and_retries():
    definition = asl("export_poller")
    assert {task["Resource"] for task in tasks(definition).values()} == {
        "arn:aws:states:::aws-sdk:dynamodb:exportTableToPointInTime",
        "arn:aws:states:::aws-sdk:dynamodb:describeExport",
    }
    for name, task in tasks(definition).items():
        assert task["TimeoutSeconds"] > 0 and task["Retry"], name


@pytest.mark.parametrize("machine, polls", [("job_poller", True), ("export_poller", True), ("callback_job", False)])
def test_machine_timeout_is_only_a_backstop_behind_the_per_execution_timeout(machine, polls):
    validation = load_lambda_module("job_validate_input", "job_validate_input_logic")
    # A poller notices the timeout at most one poll interval late; the callback task times out on time.
    latest_end = validation.MAX_TIMEOUT_SECONDS + (validation.MAX_POLL_INTERVAL_SECONDS if polls else 0)
    assert asl(machine)["TimeoutSeconds"] > latest_end


def heartbeat_window(timeout_seconds: int) -> int:
    """The callback task's HeartbeatSeconds for a timeout, as its Validate Job Input assigns it."""
    expression = asl("callback_job")["States"]["Validate Job Input"]["Assign"]["heartbeat_seconds"]
    return evaluate(expression.removeprefix("{%").removesuffix("%}"), {"states": {"result": {"Payload": {"timeout_seconds": timeout_seconds}}}})


@pytest.mark.parametrize(("timeout_seconds", "window"), [(2, 1), (120, 119), (300, 299), (301, 300), (86_400, 300)])
def test_callback_heartbeat_window_is_300_s_or_just_under_a_shorter_timeout(timeout_seconds, window):
    # HeartbeatSeconds must be a positive integer smaller than TimeoutSeconds
    # (https://states-language.net/spec.html#task-state)
    assert heartbeat_window(timeout_seconds) == window


def test_callback_runner_heartbeats_at_least_three_times_per_full_heartbeat_window():
    task = asl("callback_job")["States"]["Run Job And Wait For Callback"]
    assert task["Arguments"]["Payload"]["heartbeat_interval_seconds"] * 3 <= heartbeat_window(86_400)


def export_input_problem(payload: Any) -> str | None:
    """What the export poller's Check Export Input says of ``payload``: None when it is valid."""
    expression = asl("export_poller")["States"]["Check Export Input"]["Output"]
    return evaluate(expression.removeprefix("{%").removesuffix("%}"), {"states": {"input": payload}})["problem"]


def lambda_input_problem(payload: dict) -> str | None:
    """What Validate Job Input (the other two machines) says of the same settings."""
    validation = load_lambda_module("job_validate_input", "job_validate_input_logic")
    try:
        validation.normalize_job_input({"job": {}, **payload})
    except validation.InvalidJobInput as error:
        return str(error)
    return None


@pytest.mark.parametrize(
    "payload",
    [
        {"timeout_seconds": 0}, {"timeout_seconds": 1, "initial_wait_seconds": 0, "poll_interval_seconds": 1},
        {"timeout_seconds": 86_400, "poll_interval_seconds": 3_600}, {"timeout_seconds": 86_401},
        {"timeout_seconds": 2.5}, {"timeout_seconds": "60"},
        {"initial_wait_seconds": -1}, {"timeout_seconds": 600, "initial_wait_seconds": 600},
        {"timeout_seconds": 600, "initial_wait_seconds": 601},
        {"poll_interval_seconds": 0}, {"timeout_seconds": 7_200, "poll_interval_seconds": 3_601},
        {"timeout_seconds": 100, "initial_wait_seconds": 0, "poll_interval_seconds": 101},
    ],
)
def test_export_poller_accepts_and_refuses_the_settings_validate_job_input_does(payload):
    # The export poller has no Lambda: its Choice-free check must draw the same lines, naming the
    # same field first
    export, lambda_ = export_input_problem(payload), lambda_input_problem(payload)
    assert (export is None) == (lambda_ is None), (export, lambda_)
    if export is not None:
        assert export.split(" ", 1)[0] == lambda_.split(" ", 1)[0]


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        ({"timeout_seconds": "7200"}, 'timeout_seconds must be a whole number of seconds from 1 to 86400, got "7200"'),
        ({"initial_wait_seconds": -1}, "initial_wait_seconds must be a whole number of seconds from 0 to timeout_seconds, got -1"),
        ({"poll_interval_seconds": 1.5}, "poll_interval_seconds must be a whole number of seconds from 1 to 3600 and no more than timeout_seconds, got 1.5"),
        ({"timeout_seconds": 100, "initial_wait_seconds": 0, "poll_interval_seconds": 200}, "poll_interval_seconds must be a whole number of seconds from 1 to 3600 and no more than timeout_seconds, got 200"),
        ({"timeout": 600}, 'the input fields are timeout_seconds, initial_wait_seconds and poll_interval_seconds (all optional); remove the others from {"timeout":600}'),
        ([600], "input must be a JSON object with timeout_seconds, initial_wait_seconds and poll_interval_seconds, each optional, got [600]"),
    ],
)
def test_export_input_problems_name_the_field_and_quote_the_value(payload, problem):
    # (one execution shows where a problem ends: tests/test_bad_inputs_execution.py)
    assert export_input_problem(payload) == problem


def test_a_throttled_callback_runner_is_dropped_before_its_task_stops_waiting_for_heartbeats(synthesized):
    # Lambda keeps a throttled asynchronous event up to MaximumEventAgeInSeconds, then drops it
    # (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html); the runner
    # heartbeats as soon as it starts, so a task whose HeartbeatSeconds is longer never times out a
    # runner that did start.
    runner = synthesized.logical_id("AWS::Lambda::Function", "JobPollerCallbackJobRunner")
    configs = [
        resource["Properties"]
        for resource in synthesized.resources.values()
        if resource["Type"] == "AWS::Lambda::EventInvokeConfig" and resource["Properties"]["FunctionName"] == {"Ref": runner}
    ]
    assert [c["MaximumRetryAttempts"] for c in configs] == [0]
    # (a shorter window belongs to a timeout shorter than that age: the task times out first anyway)
    assert configs[0]["MaximumEventAgeInSeconds"] < heartbeat_window(86_400)

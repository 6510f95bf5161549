"""`cdk deploy --hotswap` and `--hotswap-fallback` with the real CLI against the running emulator.

A small app of its own (tests/hotswap_app: one function, one machine) is deployed beside the session's
app, changed and hot-swapped, then removed. As on AWS, the next execution runs the new code and
definition, an execution already running keeps the definition it started with
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_UpdateStateMachine.html: "Executions
that are currently running will continue with the previous definition"), and a change the CLI cannot
hot-swap (a function's timeout) is deployed through CloudFormation instead.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from emulator.deploy import run_cdk
from emulator.follow import follow
from tests.emulator_helpers import wait_for_event

PROBE_APP = Path(__file__).resolve().parent / "hotswap_app"
STACK = "HotswapProbeStack"


@pytest.fixture(scope="module")
def probe(deployment, tmp_path_factory):
    """The probe app copied (the tests edit the copy), deployed in full; removed afterwards."""
    app_dir = tmp_path_factory.mktemp("hotswap-app")
    shutil.copytree(PROBE_APP, app_dir, dirs_exist_ok=True)
    outdir = app_dir / "cdk.out"
    run_cdk(deployment.aws, ["deploy", STACK], app_dir=app_dir, outdir=outdir)
    yield app_dir, outdir
    cfn = deployment.client("cloudformation")
    cfn.delete_stack(StackName=STACK)


def _resource(deployment, resource_type: str) -> str:
    return deployment.stack_resource(STACK, resource_type, "")


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def test_the_next_execution_runs_the_hot_swapped_code_and_definition_and_a_running_one_keeps_its_own(deployment, probe):
    # Given an execution of the first code and definition, waiting on the paused clock
    app_dir, outdir = probe
    aws, sfn = deployment.aws, deployment.client("stepfunctions")
    machine_arn = _resource(deployment, "AWS::StepFunctions::StateMachine")
    aws.clock.pause()
    try:
        running = sfn.start_execution(stateMachineArn=machine_arn)["executionArn"]
        wait_for_event(sfn, running, "WaitStateEntered", timeout=120)

        # When the handler and the definition change and `cdk deploy --hotswap` runs
        _edit(app_dir / "greeter" / "handler.py", "hello from the first code", "hello from the second code")
        _edit(app_dir / "definition.json", '"definition": "first"', '"definition": "second"')
        output = run_cdk(aws, ["deploy", "--hotswap", STACK], app_dir=app_dir, outdir=outdir)
        following = sfn.start_execution(stateMachineArn=machine_arn)["executionArn"]
        wait_for_event(sfn, following, "WaitStateEntered", timeout=120)
    finally:
        aws.clock.resume()

    # Then both resources were hot-swapped (no CloudFormation update), the next execution runs the
    # new code and definition, and the running one finishes with the definition it started with
    assert f"AWS::Lambda::Function '{_resource(deployment, 'AWS::Lambda::Function')}' hotswapped!" in output
    assert f"AWS::StepFunctions::StateMachine '{machine_arn}' hotswapped!" in output
    assert "hotswap-deployment time" in output
    assert deployment.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]["StackStatus"] == "CREATE_COMPLETE"
    assert follow(aws, following).output == {"greeting": "hello from the second code", "definition": "second"}
    assert follow(aws, running).output == {"greeting": "hello from the first code", "definition": "first"}


def test_a_change_that_cannot_be_hot_swapped_falls_back_to_a_full_deployment(deployment, probe):
    # Given the function's timeout changed: Lambda's hot-swap takes code, environment and description only
    app_dir, outdir = probe
    (app_dir / "settings.json").write_text(json.dumps({"timeout_seconds": 20}))

    # When `cdk deploy --hotswap-fallback` runs
    output = run_cdk(deployment.aws, ["deploy", "--hotswap-fallback", STACK], app_dir=app_dir, outdir=outdir)

    # Then CloudFormation updated the stack and the function has the new timeout
    assert "Falling back to doing a full deployment" in output
    stack = deployment.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_COMPLETE"
    function = _resource(deployment, "AWS::Lambda::Function")
    assert deployment.client("lambda").get_function_configuration(FunctionName=function)["Timeout"] == 20

"""`cdk deploy --hotswap` and `--hotswap-fallback` with the real CLI against the running emulator.

A small app of its own (tests/hotswap_app: one function, one machine) is deployed beside the session's
app, changed and hot-swapped, then removed. As on AWS, the next execution runs the new code and
definition, an execution already running keeps the definition it started with
(https://docs.aws.amazon.com/step-functions/latest/apireference/API_UpdateStateMachine.html: "Executions
that are currently running will continue with the previous definition"), and a change the CLI cannot
hot-swap (a function's timeout) is deployed through CloudFormation instead. `cdk watch`, the loop
`make watch` runs, deploys nothing as it starts (the app is deployed already) and then hot-swaps each
saved change, so the next execution runs it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from emulator.deploy import run_cdk, stop_watch, watch
from emulator.follow import follow
from tests.emulator_helpers import wait_for, wait_for_event

PROBE_APP = Path(__file__).resolve().parent / "hotswap_app"
STACK = "HotswapProbeStack"
NEIGHBOUR_STACK = "HotswapProbeNeighbourStack"  # unchanged by the tests: `cdk watch` watches an app of several stacks
# What the probe is deployed with; a `cdk watch` is given the same, as `serve --watch` gives the app's.
CONTEXT = {"queueVisibilitySeconds": "60"}
# Wall-time deadlines only, for a busy machine: a synthesis and a hot-swap take seconds when idle.
WATCH_DEADLINE_SECONDS = 300


@pytest.fixture(scope="module")
def probe(deployment, tmp_path_factory):
    """The probe app copied (the tests edit the copy), deployed in full; removed afterwards."""
    app_dir = tmp_path_factory.mktemp("hotswap-app")
    shutil.copytree(PROBE_APP, app_dir, dirs_exist_ok=True)
    outdir = app_dir / "cdk.out"
    run_cdk(deployment.aws, ["deploy", "--all"], app_dir=app_dir, outdir=outdir, context=CONTEXT)
    yield app_dir, outdir
    cfn = deployment.client("cloudformation")
    for stack in (STACK, NEIGHBOUR_STACK):
        cfn.delete_stack(StackName=stack)


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
        output = run_cdk(aws, ["deploy", "--hotswap", STACK], app_dir=app_dir, outdir=outdir, context=CONTEXT)
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
    output = run_cdk(deployment.aws, ["deploy", "--hotswap-fallback", STACK], app_dir=app_dir, outdir=outdir,
                     context=CONTEXT)

    # Then CloudFormation updated the stack and the function has the new timeout
    assert "Falling back to doing a full deployment" in output
    stack = deployment.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_COMPLETE"
    function = _resource(deployment, "AWS::Lambda::Function")
    assert deployment.client("lambda").get_function_configuration(FunctionName=function)["Timeout"] == 20


def _swap(path: Path, pattern: str, new: str) -> str:
    """Save ``path`` with ``pattern``'s one group replaced by ``new``; what the group held before."""
    text = path.read_text()
    match = re.search(pattern, text)
    assert match is not None, f"{path.name} has no {pattern!r}"
    path.write_text(text[:match.start(1)] + new + text[match.end(1):])
    return match.group(1)


def _wait_for_output(log: Path, text: str) -> None:
    wait_for(lambda: text in log.read_text(), f"`cdk watch` to print {text!r}", timeout=WATCH_DEADLINE_SECONDS)


def test_cdk_watch_deploys_nothing_as_it_starts_then_hot_swaps_each_saved_change_into_the_next_execution(
    deployment, probe, tmp_path
):
    # Given an execution waiting on the paused clock, and `cdk watch` on the deployed probe app, started
    # as `serve --watch` starts it and done with the deployment it makes as it starts
    app_dir, _ = probe
    aws, sfn, cfn, lambda_ = (deployment.aws, deployment.client("stepfunctions"), deployment.client("cloudformation"),
                              deployment.client("lambda"))
    machine_arn = _resource(deployment, "AWS::StepFunctions::StateMachine")
    function = _resource(deployment, "AWS::Lambda::Function")

    def code() -> str:
        return lambda_.get_function(FunctionName=function)["Configuration"]["CodeSha256"]

    def stack_events() -> dict[str, int]:
        return {stack: len(cfn.describe_stack_events(StackName=stack)["StackEvents"]) for stack in (STACK, NEIGHBOUR_STACK)}

    deployed_stack_events = stack_events()
    deployed_code = code()
    log = tmp_path / "watch.log"
    aws.clock.pause()
    try:
        running = sfn.start_execution(stateMachineArn=machine_arn)["executionArn"]
        wait_for_event(sfn, running, "WaitStateEntered", timeout=120)
        with open(log, "w") as output:
            watcher = watch(aws, CONTEXT, app_dir=app_dir, output=output)
        try:
            _wait_for_output(log, "Total time")
            started = log.read_text()

            # When the handler is saved, and once its code changed, an execution starts
            greeting = _swap(app_dir / "greeter" / "handler.py", r'GREETING = "([^"]*)"', "hello from the watched code")
            wait_for(lambda: code() != deployed_code, "the handler's hot-swap", timeout=WATCH_DEADLINE_SECONDS)
            after_handler = sfn.start_execution(stateMachineArn=machine_arn)["executionArn"]
            wait_for_event(sfn, after_handler, "WaitStateEntered", timeout=120)

            # And when the definition is saved, and once it changed, another starts
            marker = _swap(app_dir / "definition.json", r'"definition": "([^"]*)"', "watched")
            wait_for(lambda: '"watched"' in sfn.describe_state_machine(stateMachineArn=machine_arn)["definition"],
                     "the definition's hot-swap", timeout=WATCH_DEADLINE_SECONDS)
            after_definition = sfn.start_execution(stateMachineArn=machine_arn)["executionArn"]
            wait_for_event(sfn, after_definition, "WaitStateEntered", timeout=120)
            # (the CLI reports a hot-swap after the update it made is answered: on a loaded machine, seconds
            # after the change shows, and a watch stopped before that never printed it)
            _wait_for_output(log, f"AWS::StepFunctions::StateMachine '{machine_arn}' hotswapped!")
        finally:
            stop_watch(watcher)
    finally:
        aws.clock.resume()

    # Then starting deployed nothing: no stack was updated nor anything hot-swapped
    assert "hotswapped!" not in started and "Falling back" not in started, started[-3000:]
    assert f"{STACK} (no changes)" in started and f"{NEIGHBOUR_STACK} (no changes)" in started
    # And each saved change was hot-swapped, never deployed through CloudFormation
    watched = log.read_text()
    assert watched.count(f"AWS::Lambda::Function '{function}' hotswapped!") == 1, watched[-3000:]
    assert watched.count(f"AWS::StepFunctions::StateMachine '{machine_arn}' hotswapped!") == 1, watched[-3000:]
    assert stack_events() == deployed_stack_events
    # And each execution ran what was deployed when it started: the running one its own definition
    assert follow(aws, after_definition).output == {"greeting": "hello from the watched code", "definition": "watched"}
    assert follow(aws, after_handler).output == {"greeting": "hello from the watched code", "definition": marker}
    assert follow(aws, running).output == {"greeting": greeting, "definition": marker}
    # And the watcher stopped with everything it ran (its process group is gone)
    with pytest.raises(ProcessLookupError):
        os.killpg(watcher.pid, 0)

"""Every statemachines/*.asl.json: valid ASL (asl-validator) once its placeholders are filled."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from stacks.common.definitions import STATEMACHINES_DIR, load_definition, placeholders

ROOT = Path(__file__).resolve().parents[1]
ASL_VALIDATOR = ROOT / "node_modules" / ".bin" / "asl-validator"
MACHINES = sorted(p.name.removesuffix(".asl.json") for p in STATEMACHINES_DIR.glob("*.asl.json"))


def sample_value(name: str) -> str:
    """A realistic stand-in for a deploy-time value, so ARN checks apply to the filled file."""
    region_account = "us-east-1:123456789012"
    if name.endswith("FunctionArn"):
        return f"arn:aws:lambda:{region_account}:function:{name}"
    if name.endswith("StateMachineArn"):
        return f"arn:aws:states:{region_account}:stateMachine:{name}"
    if name.endswith("TopicArn"):
        return f"arn:aws:sns:{region_account}:{name}"
    if name.endswith("QueueUrl"):
        return f"https://sqs.us-east-1.amazonaws.com/123456789012/{name}"
    if name.endswith("Arn"):
        return f"arn:aws:dynamodb:{region_account}:table/{name}"
    return f"sample-{name.lower()}"


def filled(machine: str) -> str:
    text = (STATEMACHINES_DIR / f"{machine}.asl.json").read_text()
    return load_definition(machine, {name: sample_value(name) for name in placeholders(text)})


def test_there_are_definitions_to_check():
    assert MACHINES, "statemachines/ holds no *.asl.json"


@pytest.fixture(scope="module")
def validated(tmp_path_factory) -> tuple[dict[str, Path], subprocess.CompletedProcess]:
    """Every filled definition, and one asl-validator run over all of them (it checks each --json-path
    and says of each whether it is valid): a Node start per definition was most of these tests' time."""
    directory = tmp_path_factory.mktemp("definitions")
    paths = {machine: directory / f"{machine}.json" for machine in MACHINES}
    for machine, path in paths.items():
        path.write_text(filled(machine))
    arguments = [argument for path in paths.values() for argument in ("--json-path", str(path))]
    return paths, subprocess.run([str(ASL_VALIDATOR), *arguments], capture_output=True, text=True)


@pytest.mark.parametrize("machine", MACHINES)
def test_definition_passes_asl_validator(machine, validated):
    paths, result = validated
    assert f'\u2713 State machine definition "{paths[machine]}" is valid' in result.stdout.splitlines(), (
        result.stdout + result.stderr)


@pytest.mark.parametrize("machine", MACHINES)
def test_definition_is_jsonata_with_a_machine_timeout(machine):
    definition = json.loads(filled(machine))
    assert definition["QueryLanguage"] == "JSONata"
    assert isinstance(definition["TimeoutSeconds"], int) and definition["TimeoutSeconds"] > 0


def retriers(states: dict) -> list[tuple[str, dict]]:
    """Every (state name, retrier) of ``states``, a Map's iteration states included."""
    found = []
    for name, state in states.items():
        found += [(name, retrier) for retrier in state.get("Retry", [])]
        if "ItemProcessor" in state:
            found += retriers(state["ItemProcessor"]["States"])
    return found


@pytest.mark.parametrize("machine", MACHINES)
def test_every_retrier_spreads_its_retries_with_full_jitter(machine):
    # Many executions (a dispatch, an alarm storm, a burst of jobs) hit one function, table or
    # webhook at once and fail together: full jitter spreads their retries
    # (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html); that it
    # acts is shown in tests/test_mocked_integrations_execution.py
    found = retriers(json.loads(filled(machine))["States"])
    assert found
    assert [name for name, retrier in found if retrier.get("JitterStrategy") != "FULL"] == []


def lambda_tasks(states: dict) -> dict[str, dict]:
    """Every Task state of ``states`` that invokes a Lambda function, a Map's iteration states included."""
    found = {}
    for name, state in states.items():
        if state["Type"] == "Task" and state["Resource"].startswith(("arn:aws:states:::lambda:invoke", "arn:aws:lambda:")):
            found[name] = state
        if "ItemProcessor" in state:
            found |= lambda_tasks(state["ItemProcessor"]["States"])
    return found


def retry_intervals(retrier: dict) -> list[float]:
    """The waits before each retry, as the Step Functions Developer Guide computes them: IntervalSeconds
    (default 1) times BackoffRate (default 2.0) for each retry before, at most MaxDelaySeconds, for
    MaxAttempts (default 3) retries (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html)."""
    interval, rate = retrier.get("IntervalSeconds", 1), retrier.get("BackoffRate", 2.0)
    cap = retrier.get("MaxDelaySeconds", float("inf"))
    return [min(interval * rate**k, cap) for k in range(retrier.get("MaxAttempts", 3))]


def test_retry_intervals_follow_the_developer_guide():
    # e.g. 3 retries from 1 s doubling: 1 + 2 + 4 s, the 7 s a throttled call had before; a cap holds each
    assert retry_intervals({}) == [1, 2, 4]
    assert retry_intervals({"IntervalSeconds": 10, "MaxAttempts": 4, "BackoffRate": 3, "MaxDelaySeconds": 60}) == [10, 30, 60, 60]


@pytest.mark.parametrize("machine", MACHINES)
def test_every_lambda_task_retries_throttling_for_at_least_two_minutes(machine):
    # A new account runs ten functions at once (Lambda quotas; docs/reliability.md): a burst of
    # alerts or jobs is throttled (Lambda.TooManyRequestsException) until instances free up, and
    # Step Functions must keep trying that long. The first retrier whose ErrorEquals matches is the
    # one that applies (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html).
    tasks = lambda_tasks(json.loads(filled(machine))["States"])
    short = {}
    for name, state in tasks.items():
        applies = next((r for r in state.get("Retry", []) if {"Lambda.TooManyRequestsException", "States.ALL"} & set(r["ErrorEquals"])), None)
        total = sum(retry_intervals(applies)) if applies else 0
        if total < 120:
            short[name] = total
    assert short == {}


def test_load_definition_refuses_missing_and_unused_substitutions(tmp_path, monkeypatch):
    # Given
    monkeypatch.setattr("stacks.common.definitions.STATEMACHINES_DIR", tmp_path)
    (tmp_path / "m.asl.json").write_text('{"StartAt": "A", "Comment": "${One} ${Two}"}')
    # Then
    with pytest.raises(ValueError, match=r"missing \['Two'\], unused \['Three'\]"):
        load_definition("m", {"One": "1", "Three": "3"})
    assert load_definition("m", {"One": "1", "Two": "2"}) == '{"StartAt": "A", "Comment": "1 2"}'

"""Bad input, across every machine: each ends in a named error whose cause says what to fix, and
nothing is left half done (no job data, run objects, export, runner, Slack post or item change).

Inputs the Step Functions API itself refuses (not JSON, over 256 KiB) never start an execution.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from emulator.follow import ExecutionResult
from tests.emulator_helpers import unique

ALERT_STACK, POLLER_STACK, MAP_STACK = "AlertNotificationStack", "JobPollerStack", "MapRetryStack"
# Functions that do the work: none may run for an input that is refused.
WORKERS = {
    "alert": ("NotifyUser",),
    "poller": ("RunJob", "JobPollerJobRunner"),
    "callback": ("CallbackJobRunner",),
    "export-poller": (),
    "map-retry": ("ItemProcessor", "ChunkProcessor"),
}


def _item(alert_id: str, **overrides: Any) -> dict:
    item = {
        "alert_id": alert_id,
        "notification_count": 2,
        "user_accounts": ["foo@example.com", "bar@example.com"],
        "status": "active",
        "interval_seconds": 60,
        "message": f"Disk above 90% on {alert_id}",
    }
    return {k: v for k, v in {**item, **overrides}.items() if v is not None}


class World:
    """What a case needs to build its input: the deployed names, and alert items and S3 objects of its own."""

    def __init__(self, deployment) -> None:
        self.deployment = deployment
        self.alert_table = deployment.output(ALERT_STACK, "AlertTableName")
        self.items_bucket = deployment.output(MAP_STACK, "ItemsBucketName")
        self.job_bucket = deployment.output(POLLER_STACK, "JobBucketName")
        self.dynamodb = deployment.client("dynamodb")
        self.s3 = deployment.client("s3")
        self.alert_ids: list[str] = []
        self.uploads: list[str] = []

    def alert(self, **overrides: Any) -> dict:
        """Store an alert item (valid unless overridden; None drops a field) and return the input for it."""
        alert_id = unique("bad-input")
        item = _item(alert_id, **overrides)
        self.dynamodb.put_item(
            TableName=self.alert_table, Item={k: TypeSerializer().serialize(v) for k, v in item.items()}
        )
        self.alert_ids.append(alert_id)
        return {"alert_id": alert_id}

    def read_alert(self, alert_id: str) -> dict | None:
        item = self.dynamodb.get_item(
            TableName=self.alert_table, Key={"alert_id": {"S": alert_id}}, ConsistentRead=True
        )
        return {k: TypeDeserializer().deserialize(v) for k, v in item["Item"].items()} if "Item" in item else None

    def upload(self, body: bytes) -> str:
        key = f"inputs/{unique('bad-input')}.json"
        self.s3.put_object(Bucket=self.items_bucket, Key=key, Body=body)
        self.uploads.append(key)
        return f"s3://{self.items_bucket}/{key}"

    def keys(self, bucket: str, prefix: str) -> list[str]:
        return [o["Key"] for o in self.s3.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])]

    def clean(self) -> None:
        # An active item left behind would be dispatched by every later firing of the schedule.
        for alert_id in self.alert_ids:
            self.dynamodb.delete_item(TableName=self.alert_table, Key={"alert_id": {"S": alert_id}})
        for key in self.uploads:
            self.s3.delete_object(Bucket=self.items_bucket, Key=key)


@pytest.fixture(scope="module")
def world(deployment) -> Iterator[World]:
    world = World(deployment)
    yield world
    world.clean()


@dataclass(frozen=True)
class Case:
    machine: str
    make_input: Callable[[World], Any]  # the execution input (JSON value), built with the world
    error: str
    cause: tuple[str, ...]  # texts the cause must contain: the field, and what it must be


def case(machine: str, make_input: Any, error: str, *cause: str) -> Case:
    return Case(machine, make_input if callable(make_input) else (lambda _world, value=make_input: value), error, cause)


_ITEMS = [{"id": "A-1"}, {"id": "B-2"}]
# 1,200 items with 120-character ids: a 160 KiB input the API takes, a 500 KiB state in the loop.
_BULKY_ITEMS = [{"id": f"{i:04d}-" + "x" * 115} for i in range(1_200)]

CASES: dict[str, Case] = {
    # -- alert: the input -------------------------------------------------------------------------
    "alert: missing alert_id": case("alert", {}, "InvalidAlertConfig", "alert_id: ", '{"alert_id": "..."}'),
    "alert: alert_id not a string": case("alert", {"alert_id": 42}, "InvalidAlertConfig", "alert_id: "),
    "alert: alert_id empty": case("alert", {"alert_id": "  "}, "InvalidAlertConfig", "alert_id: "),
    "alert: alert_id too long": case(
        "alert", {"alert_id": "a" * 257}, "InvalidAlertConfig", "alert_id: ", "256 characters"
    ),
    "alert: input not an object": case("alert", ["disk-full-web-1"], "InvalidAlertConfig", "alert_id: "),
    "alert: unknown input field": case(
        "alert",
        lambda w: {**w.alert(), "notification_count": 5},
        "InvalidAlertConfig",
        "notification_count",
        "alert_id",
    ),
    "alert: unknown alert id": case(
        "alert", lambda w: {"alert_id": unique("no-such-alert")}, "AlertNotFound", "has no item", "no-such-alert"
    ),
    # -- alert: the item -------------------------------------------------------------------------
    "alert: zero rounds": case(
        "alert",
        lambda w: w.alert(notification_count=0),
        "InvalidAlertConfig",
        "notification_count: ",
        "at least 1",
        "got 0",
    ),
    "alert: negative rounds": case(
        "alert", lambda w: w.alert(notification_count=-3), "InvalidAlertConfig", "notification_count: ", "got -3"
    ),
    "alert: rounds as text": case(
        "alert", lambda w: w.alert(notification_count="3"), "InvalidAlertConfig", "notification_count: ", "'3'"
    ),
    "alert: rounds missing": case(
        "alert", lambda w: w.alert(notification_count=None), "InvalidAlertConfig", "notification_count: ", "required"
    ),
    "alert: no users": case(
        "alert", lambda w: w.alert(user_accounts=[]), "InvalidAlertConfig", "user_accounts: ", "at least one"
    ),
    "alert: duplicate user": case(
        "alert",
        lambda w: w.alert(user_accounts=["foo@example.com", "foo@example.com"]),
        "InvalidAlertConfig",
        "user_accounts[1]: ",
        "listed twice",
    ),
    "alert: user not a string": case(
        "alert", lambda w: w.alert(user_accounts=["foo@example.com", 7]), "InvalidAlertConfig", "user_accounts[1]: "
    ),
    "alert: negative interval": case(
        "alert", lambda w: w.alert(interval_seconds=-60), "InvalidAlertConfig", "interval_seconds: ", "from 0 to 86400"
    ),
    "alert: unknown status": case(
        "alert", lambda w: w.alert(status="snoozed"), "InvalidAlertConfig", "status: ", "active, acknowledged, resolved"
    ),
    # 100 users x 9 rounds could take 27,250 history events with every retry spent (the model is held to a
    # real worst-case execution in test_alert_notification_execution.py).
    "alert: over 25,000 history events": case(
        "alert",
        lambda w: w.alert(
            notification_count=9, interval_seconds=0, user_accounts=[f"u{i}@example.com" for i in range(100)]
        ),
        "InvalidAlertConfig",
        "notification_count: ",
        "at most 8 rounds of 100 users",
        "25,000 history events",
    ),
    "alert: too many users for one round": case(
        "alert",
        lambda w: w.alert(notification_count=1, user_accounts=[f"u{i}@example.com" for i in range(900)]),
        "InvalidAlertConfig",
        "user_accounts: ",
        "900 users",
        "even in one round",
    ),
    # -- S3 job poller -----------------------------------------------------------------------------
    "poller: input not an object": case(
        "poller", [{"duration_seconds": 5}], "InvalidJobInput", "input must be a JSON object"
    ),
    "poller: missing job": case("poller", {"timeout_seconds": 60}, "InvalidJobInput", "job is required"),
    "poller: job not an object": case(
        "poller", {"job": "sleep 5"}, "InvalidJobInput", "job must be a JSON object", "str"
    ),
    "poller: zero timeout": case(
        "poller", {"job": {}, "timeout_seconds": 0}, "InvalidJobInput", "timeout_seconds", "from 1 to 86400", "got 0"
    ),
    "poller: negative poll interval": case(
        "poller", {"job": {}, "poll_interval_seconds": -5}, "InvalidJobInput", "poll_interval_seconds", "got -5"
    ),
    "poller: timeout as text": case(
        "poller", {"job": {}, "timeout_seconds": "60"}, "InvalidJobInput", "timeout_seconds", "whole number", "'60'"
    ),
    "poller: fractional poll interval": case(
        "poller", {"job": {}, "poll_interval_seconds": 2.5}, "InvalidJobInput", "poll_interval_seconds", "whole number"
    ),
    "poller: initial wait past the timeout": case(
        "poller",
        {"job": {}, "timeout_seconds": 30, "initial_wait_seconds": 60},
        "InvalidJobInput",
        "initial_wait_seconds",
        "no longer than timeout_seconds",
    ),
    "poller: unknown field": case(
        "poller", {"job": {}, "timeout": 60}, "InvalidJobInput", "timeout is not an input field"
    ),
    # -- callback variant ----------------------------------------------------------------------------
    # HeartbeatSeconds must be a positive integer smaller than TimeoutSeconds
    # (https://states-language.net/spec.html#task-state): a 1 s timeout leaves no window
    "callback: timeout too short for a heartbeat": case(
        "callback",
        {"job": {}, "timeout_seconds": 1},
        "InvalidJobInput",
        "timeout_seconds must be at least 2",
        "got 1",
    ),
    "callback: job as a list": case("callback", {"job": [5]}, "InvalidJobInput", "job must be a JSON object", "list"),
    "callback: unknown field": case(
        "callback", {"job": {}, "heartbeat_seconds": 30}, "InvalidJobInput", "heartbeat_seconds is not an input field"
    ),
    # -- export poller (no Lambda: the checks are Choice rules) ------------------------------------
    "export-poller: zero timeout": case(
        "export-poller", {"timeout_seconds": 0}, "InvalidJobInput", "timeout_seconds", "from 1 to 86400", "got 0"
    ),
    "export-poller: negative initial wait": case(
        "export-poller", {"initial_wait_seconds": -1}, "InvalidJobInput", "initial_wait_seconds", "got -1"
    ),
    "export-poller: fractional poll interval": case(
        "export-poller",
        {"poll_interval_seconds": 1.5},
        "InvalidJobInput",
        "poll_interval_seconds",
        "whole number",
        "got 1.5",
    ),
    "export-poller: timeout as text": case(
        "export-poller", {"timeout_seconds": "7200"}, "InvalidJobInput", "timeout_seconds", "whole number"
    ),
    "export-poller: poll interval past the timeout": case(
        "export-poller",
        {"timeout_seconds": 100, "poll_interval_seconds": 200, "initial_wait_seconds": 0},
        "InvalidJobInput",
        "poll_interval_seconds",
        "no more than timeout_seconds",
        "got 200",
    ),
    "export-poller: unknown field": case(
        "export-poller",
        {"timeout": 600},
        "InvalidJobInput",
        "timeout_seconds, initial_wait_seconds and poll_interval_seconds",
        "remove the others",
        '"timeout":600',
    ),
    "export-poller: input not an object": case(
        "export-poller", [600], "InvalidJobInput", "input must be a JSON object", "got [600]"
    ),
    # -- Map retry-failed -------------------------------------------------------------------------
    "map-retry: input not an object": case(
        "map-retry", "A-1,B-2", "InvalidItems", "input must be a JSON object", "string"
    ),
    "map-retry: no items": case("map-retry", {"max_attempts": 2}, "InvalidItems", "exactly one of items"),
    "map-retry: both item sources": case(
        "map-retry",
        lambda w: {"items": _ITEMS, "items_s3_uri": w.upload(b"[]")},
        "InvalidItems",
        "exactly one of items",
    ),
    "map-retry: empty items": case("map-retry", {"items": []}, "InvalidItems", "items is empty"),
    "map-retry: items not a list": case(
        "map-retry", {"items": {"id": "A-1"}}, "InvalidItems", "items must be a JSON array", "object"
    ),
    "map-retry: duplicate ids": case(
        "map-retry", {"items": [{"id": "A-1"}, {"id": "B-2"}, {"id": "A-1"}]}, "InvalidItems", "unique", "A-1"
    ),
    "map-retry: item without id": case(
        "map-retry", {"items": [{"id": "A-1"}, {"name": "B"}]}, "InvalidItems", "items[1] has no id"
    ),
    "map-retry: numeric id": case(
        "map-retry", {"items": [{"id": 7}]}, "InvalidItems", "items[0].id", "non-empty string", "7"
    ),
    "map-retry: zero attempts": case(
        "map-retry", {"items": _ITEMS, "max_attempts": 0}, "InvalidItems", "max_attempts", "from 1 to 10", "got 0"
    ),
    "map-retry: negative attempts": case(
        "map-retry", {"items": _ITEMS, "max_attempts": -2}, "InvalidItems", "max_attempts", "got -2"
    ),
    "map-retry: fail_on_remaining as text": case(
        "map-retry", {"items": _ITEMS, "fail_on_remaining": "yes"}, "InvalidItems", "fail_on_remaining", "true or false"
    ),
    "map-retry: unknown field": case(
        "map-retry", {"items": _ITEMS, "retries": 3}, "InvalidItems", "unknown input field", "retries"
    ),
    "map-retry: inline items past the state limit": case(
        "map-retry", {"items": _BULKY_ITEMS, "max_attempts": 1}, "InvalidItems", "KiB", "items_s3_uri"
    ),
    "map-retry: inline items past the history budget": case(
        "map-retry",
        {"items": [{"id": f"item-{i}"} for i in range(1_001)], "max_attempts": 2},
        "InvalidItems",
        "1001 items x max_attempts 2",
        "items_s3_uri",
    ),
    "map-retry: malformed S3 URI": case(
        "map-retry", {"items_s3_uri": "items/list.json"}, "InvalidItems", "is not an S3 URI like", "s3://"
    ),
    "map-retry: S3 URI of another bucket": case(
        "map-retry",
        {"items_s3_uri": "s3://someone-elses-bucket/inputs/list.json"},
        "InvalidItems",
        "must name an object like",
    ),
    "map-retry: S3 URI outside inputs/": case(
        "map-retry", lambda w: {"items_s3_uri": f"s3://{w.items_bucket}/runs/list.json"}, "InvalidItems", "inputs/"
    ),
    "map-retry: S3 object missing": case(
        "map-retry",
        lambda w: {"items_s3_uri": f"s3://{w.items_bucket}/inputs/{unique('missing')}.json"},
        "InvalidItems",
        "cannot read",
        "NoSuchKey",
    ),
    "map-retry: S3 object not JSON": case(
        "map-retry", lambda w: {"items_s3_uri": w.upload(b"A-1,B-2\n")}, "InvalidItems", "is not valid JSON"
    ),
    "map-retry: S3 items with duplicate ids": case(
        "map-retry",
        lambda w: {"items_s3_uri": w.upload(json.dumps([{"id": "A"}, {"id": "A"}]).encode())},
        "InvalidItems",
        "unique",
        "A",
    ),
}


def _invocations(deployment, since: int, names: tuple[str, ...]) -> list[str]:
    return [r["function"] for r in deployment.aws.runtime.invocations[since:] if any(n in r["function"] for n in names)]


def _assert_nothing_left_half_done(
    deployment, world: World, machine: str, payload: Any, result: ExecutionResult
) -> None:
    md5 = hashlib.md5(result.execution_arn.encode()).hexdigest()
    if machine in ("poller", "callback", "export-poller"):
        assert world.keys(world.job_bucket, f"jobs/{md5}/") == []
    if machine == "export-poller":
        table_arn = world.dynamodb.describe_table(TableName=world.alert_table)["Table"]["TableArn"]
        exports = world.dynamodb.list_exports(TableArn=table_arn).get("ExportSummaries", [])
        assert not [
            e
            for e in exports
            if md5 in world.dynamodb.describe_export(ExportArn=e["ExportArn"])["ExportDescription"].get("S3Prefix", "")
        ]
    if machine == "map-retry":
        assert world.keys(world.items_bucket, f"runs/{result.execution_arn.rsplit(':', 1)[-1]}/") == []
    if machine == "alert":
        alert_id = payload.get("alert_id") if isinstance(payload, dict) else None
        if isinstance(alert_id, str) and alert_id:
            assert [p for p in deployment.slack.posts if alert_id in json.dumps(p.body)] == []


@pytest.mark.parametrize("bad", CASES.values(), ids=CASES.keys())
def test_bad_input_ends_in_a_named_error_saying_what_to_fix_and_leaves_nothing_half_done(deployment, world, bad):
    # Given
    payload = bad.make_input(world)
    stored = (
        world.read_alert(payload["alert_id"])
        if bad.machine == "alert" and isinstance(payload, dict) and isinstance(payload.get("alert_id"), str)
        else None
    )
    invocations_before = len(deployment.aws.runtime.invocations)
    # When (as JSON text: a str payload would be sent as is)
    result = deployment.run(bad.machine, json.dumps(payload))
    # Then: the named error, a cause that says what to fix in plain words (never a Lambda's JSON error
    # document), and no work done
    assert (result.status, result.error) == ("FAILED", bad.error), result.cause
    assert not result.cause.startswith("{"), result.cause
    for text in bad.cause:
        assert text in result.cause, result.cause
    assert _invocations(deployment, invocations_before, WORKERS[bad.machine]) == []
    _assert_nothing_left_half_done(deployment, world, bad.machine, payload, result)
    if stored is not None:
        assert world.read_alert(payload["alert_id"]) == stored


def test_bad_input_matrix_covers_every_machine_with_at_least_30_inputs():
    machines = {c.machine for c in CASES.values()}
    assert machines == set(WORKERS) and len(CASES) >= 30


# -- refused by the API: no execution starts ---------------------------------------------------------
@pytest.mark.parametrize("machine", sorted(WORKERS))
def test_input_that_is_not_json_is_refused_before_any_execution_starts(deployment, machine):
    sfn = deployment.client("stepfunctions")
    arn = deployment.machine_arn(machine)
    name = unique("not-json")
    with pytest.raises(sfn.exceptions.InvalidExecutionInput):
        sfn.start_execution(stateMachineArn=arn, name=name, input="{'alert_id': 'disk-full-web-1'}")
    with pytest.raises(sfn.exceptions.ExecutionDoesNotExist):
        sfn.describe_execution(executionArn=f"{arn.replace(':stateMachine:', ':execution:')}:{name}")


@pytest.mark.parametrize("machine", ["map-retry", "alert"])
def test_input_over_256_kib_is_refused_by_the_api(deployment, machine):
    # 3,000 items of 90-character ids: 300 KiB, past StartExecution's 262,144-byte input limit.
    sfn = deployment.client("stepfunctions")
    arn = deployment.machine_arn(machine)
    name = unique("too-big")
    payload = {"items": [{"id": f"{i:05d}-" + "y" * 84} for i in range(3_000)]}
    assert len(json.dumps(payload)) > 262_144
    with pytest.raises(sfn.exceptions.ValidationException, match="262144"):
        sfn.start_execution(stateMachineArn=arn, name=name, input=json.dumps(payload))
    with pytest.raises(sfn.exceptions.ExecutionDoesNotExist):
        sfn.describe_execution(executionArn=f"{arn.replace(':stateMachine:', ':execution:')}:{name}")


# -- the job runner refuses its own parameters: a whole job, failed cleanly -------------------------
@pytest.mark.parametrize(
    ("machine", "job", "cause"),
    [
        ("poller", {"duration_seconds": -1}, "job.duration_seconds must be a number from 0 to 880, got -1"),
        ("poller", {"duration_seconds": 5, "fail": "yes"}, "job.fail must be true or false"),
        ("poller", {"sleep": 10}, "job.sleep is not a demo job field"),
        ("callback", {"duration_seconds": "10"}, "job.duration_seconds must be a number from 0 to 880"),
        ("callback", {"fail": True, "crash": True}, "job.fail and job.crash cannot both be true"),
    ],
)
def test_job_parameters_the_runner_refuses_end_in_job_failed_with_its_message(deployment, world, machine, job, cause):
    # The machines hand `job` to the runner as is; the runner owns its parameters and reports them
    # as the job's failure: a finished job (with its whole record, for the S3 poller), not one left running.
    result = deployment.run(machine, {"job": job, "timeout_seconds": 600, "poll_interval_seconds": 5})
    assert (result.status, result.error) == ("FAILED", "JobFailed"), result.cause
    assert cause in result.cause
    if machine == "poller":
        prefix = f"jobs/{hashlib.md5(result.execution_arn.encode()).hexdigest()}/"
        status = world.s3.get_object(Bucket=world.job_bucket, Key=f"{prefix}status.txt")["Body"].read()
        assert status == b"failed"
        assert sorted(world.keys(world.job_bucket, prefix)) == [
            f"{prefix}{name}" for name in ("context.json", "result.json", "status.txt")
        ]

"""Bad input, across every machine: each ends in a named error whose cause says what to fix, and
nothing is left half done (no job data, run objects, export, runner, Slack post or item change).

One execution per path a refusal takes through a machine (the Catch or Choice that ends it, and
what ran before it). Which field is wrong and how the cause words it is decided by the validating
code, tested case by case without the emulator: the alert's in tests/test_alert_notification_runtime.py,
the pollers' in tests/test_job_poller_runtime.py and (the export poller's Choice-free check)
tests/test_job_poller_infrastructure.py, the Map's in tests/test_map_retry_runtime.py.

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


# 1,200 items with 120-character ids: a 160 KiB input the API takes, a 500 KiB state in the loop.
_BULKY_ITEMS = [{"id": f"{i:04d}-" + "x" * 115} for i in range(1_200)]

CASES: dict[str, Case] = {
    # -- alert: the input is refused before the table is read; an id with no item; an item refused --
    "alert: missing alert_id": case("alert", {}, "InvalidAlertConfig", "alert_id: ", '{"alert_id": "..."}'),
    "alert: unknown alert id": case(
        "alert", lambda w: {"alert_id": unique("no-such-alert")}, "AlertNotFound", "has no item", "no-such-alert"
    ),
    "alert: zero rounds": case(
        "alert",
        lambda w: w.alert(notification_count=0),
        "InvalidAlertConfig",
        "notification_count: ",
        "at least 1",
        "got 0",
    ),
    # Issue 40: both ran as if valid, a post to a person named "Schedule:primary" (SUCCEEDED, nobody
    # mentioned), the default interval instead of 60 s; now refused before anyone is notified
    "alert: a schedule spelled otherwise": case(
        "alert",
        lambda w: w.alert(user_accounts=None, escalation=[["Schedule:primary"]]),
        "InvalidAlertConfig",
        "escalation[0][0]: ",
        "not spelled schedule:<id>",
    ),
    "alert: a field the alert does not read": case(
        "alert", lambda w: w.alert(interval_secs=60), "InvalidAlertConfig", "interval_secs: ", "did you mean interval_seconds?"
    ),
    # -- S3 job poller and callback variant: Validate Job Input's Catch; the callback's own Choice ---
    "poller: zero timeout": case(
        "poller", {"job": {}, "timeout_seconds": 0}, "InvalidJobInput", "timeout_seconds", "from 1 to 86400", "got 0"
    ),
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
    # -- export poller (no Lambda: the checks are Choice rules) ------------------------------------
    "export-poller: zero timeout": case(
        "export-poller", {"timeout_seconds": 0}, "InvalidJobInput", "timeout_seconds", "from 1 to 86400", "got 0"
    ),
    # -- Map retry-failed: inline (Validate Items) and S3 (Split Items Into Chunks) -------------------
    # (the bulky case: an input the API accepts that the loop's state would take past 256 KiB)
    "map-retry: no items": case("map-retry", {"max_attempts": 2}, "InvalidItems", "exactly one of items"),
    "map-retry: inline items past the state limit": case(
        "map-retry", {"items": _BULKY_ITEMS, "max_attempts": 1}, "InvalidItems", "KiB", "items_s3_uri"
    ),
    "map-retry: S3 object missing": case(
        "map-retry",
        lambda w: {"items_s3_uri": f"s3://{w.items_bucket}/inputs/{unique('missing')}.json"},
        "InvalidItems",
        "cannot read",
        "NoSuchKey",
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


def test_bad_input_matrix_covers_every_machine():
    assert {c.machine for c in CASES.values()} == set(WORKERS)


# -- refused by the API: no execution starts ---------------------------------------------------------
# StartExecution checks the input before any machine sees it, the same way for every machine
# (https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html:
# InvalidExecutionInput), so one machine shows it.
def test_input_that_is_not_json_is_refused_before_any_execution_starts(deployment):
    sfn = deployment.client("stepfunctions")
    arn = deployment.machine_arn("alert")
    name = unique("not-json")
    with pytest.raises(sfn.exceptions.InvalidExecutionInput):
        sfn.start_execution(stateMachineArn=arn, name=name, input="{'alert_id': 'disk-full-web-1'}")
    with pytest.raises(sfn.exceptions.ExecutionDoesNotExist):
        sfn.describe_execution(executionArn=f"{arn.replace(':stateMachine:', ':execution:')}:{name}")


def test_input_over_256_kib_is_refused_by_the_api(deployment):
    # 3,000 items of 90-character ids: 300 KiB, past StartExecution's 262,144-byte input limit
    # (the API's check, the same for every machine).
    sfn = deployment.client("stepfunctions")
    arn = deployment.machine_arn("map-retry")
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
        # one per machine: which parameters the runner refuses is tested on DemoJob without the emulator
        ("poller", {"duration_seconds": -1}, "job.duration_seconds must be a number from 0 to 880, got -1"),
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

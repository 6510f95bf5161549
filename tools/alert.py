"""Writes an alert item only if the app would run it as written: `python -m tools.alert put FILE --table TABLE`.

FILE holds the item in the plain form the docs show, or in DynamoDB's typed JSON (the form
`aws dynamodb put-item --item file://FILE` takes). It is checked with the code Fetch Alert Config runs
(alert_config_logic: its fields, targets and limits, links included, so the size limits count what an
execution will carry), and each `schedule:<id>` it names must be in the on-call table (`--on-call-table`,
by default the stack output OnCallTableName). A refused item is not written and the command names the
field, as the execution would fail (InvalidAlertConfig). An `alarm_name` that names no CloudWatch alarm
in the account is written with a warning. Uses the AWS SDK's usual configuration (credentials, region,
AWS_ENDPOINT_URL for the local emulator).
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

ROOT = Path(__file__).resolve().parents[1]
# The function's own module and the shared layer, as the Lambda runtime puts them on the path.
for _path in (ROOT / "lambdas" / "alert_config", ROOT / "lambdas" / "shared_layer" / "python"):
    if str(_path) not in sys.path:
        sys.path.append(str(_path))

from alert_config_logic import AlertConfig, InvalidAlertConfig, fetched_config, read_input, status_of  # noqa: E402

from patterns_common.oncall import SCHEDULE_PREFIX, InvalidSchedule, parse_schedule  # noqa: E402
from tools.items import from_typed, is_typed, one_line  # noqa: E402

REFUSED = 2
FAILED = 1
STACK = "AlertNotificationStack"
ON_CALL_OUTPUT = "OnCallTableName"


class Refused(Exception):
    """The item is not written; the message says why."""


def action_url_like(region: str) -> str:
    """A URL as long as the stack's AlertActionsUrl (https://<32-character id>.lambda-url.<region>.on.aws/):
    the links an execution carries are counted at their real length."""
    return f"https://{'x' * 32}.lambda-url.{region}.on.aws/"


def plain_item(written: Any) -> dict[str, Any]:
    """The item as Fetch Alert Config reads it, from either form."""
    if not isinstance(written, dict):
        raise InvalidAlertConfig("item", 'must be a JSON object, e.g. {"alert_id": "orders-db-cpu", ...}')
    if not is_typed(written):
        return written
    try:
        return from_typed(written)
    except ValueError as error:
        raise InvalidAlertConfig("item", f"is not valid typed JSON: {error}") from None


def check(item: dict[str, Any], *, region: str, now: float) -> AlertConfig:
    """The config Fetch Alert Config would run; InvalidAlertConfig if it would refuse the item."""
    execution = read_input({"alert_id": item.get("alert_id")})
    # Signed with a throwaway key: a link's length does not depend on the key.
    return fetched_config(
        item, start_delay_seconds=execution.start_delay_seconds, key=secrets.token_hex(32).encode(),
        actions_url=action_url_like(region), now=now,
    )


def summary(item: dict[str, Any], config: AlertConfig) -> str:
    alarm = item.get("alarm_name")
    return (
        f"{config.alert_id}: status {status_of(item)}, {len(config.users)} people"
        + (f" and {len(config.schedules)} schedule(s)" if config.schedules else "")
        + f" in {len(config.levels)} level(s), {config.rounds} round(s) {config.interval_seconds} s apart"
        + (f", raised and resolved by CloudWatch alarm {alarm}" if alarm else "")
    )


def on_call_table_of(session: boto3.session.Session) -> str:
    """The stack output OnCallTableName (CloudFormation DescribeStacks)."""
    try:
        outputs = session.client("cloudformation").describe_stacks(StackName=STACK)["Stacks"][0].get("Outputs", [])
    except ClientError as error:
        raise Refused(f"cannot read the on-call table's name from {STACK} ({one_line(error, '', ON_CALL_OUTPUT)}): "
                      "give it with --on-call-table") from None
    for output in outputs:
        if output["OutputKey"] == ON_CALL_OUTPUT:
            return output["OutputValue"]
    raise Refused(f"{STACK} has no output {ON_CALL_OUTPUT}: give the on-call table with --on-call-table")


def check_schedules(session: boto3.session.Session, schedule_ids: list[str], table: str) -> list[str]:
    """Refused if a schedule is not in the table (every round would page nobody through it); a warning
    for each one there that the functions cannot read (its level's other targets are paged)."""
    warnings = []
    on_call = session.resource("dynamodb").Table(table)
    for schedule_id in schedule_ids:
        try:
            schedule = on_call.get_item(Key={"schedule_id": schedule_id}, ConsistentRead=True).get("Item")
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ResourceNotFoundException":
                raise
            raise Refused(f"{SCHEDULE_PREFIX}{schedule_id}: {one_line(error, table, ON_CALL_OUTPUT)}") from None
        if schedule is None:
            raise Refused(f"{SCHEDULE_PREFIX}{schedule_id}: the on-call table {table} has no schedule {schedule_id!r} "
                          "(`python -m tools.oncall put` writes one)")
        try:
            parse_schedule(schedule)
        except InvalidSchedule as invalid:
            warnings.append(f"{SCHEDULE_PREFIX}{schedule_id} cannot be read, so its level pages only its other "
                            f"targets: InvalidSchedule: {invalid}")
    return warnings


def alarm_warning(session: boto3.session.Session, alarm_name: str) -> str | None:
    """A warning when no metric or composite alarm has the name (CloudWatch DescribeAlarms)."""
    try:
        found = session.client("cloudwatch").describe_alarms(
            AlarmNames=[alarm_name], AlarmTypes=["MetricAlarm", "CompositeAlarm"]
        )
    except ClientError as error:
        return f"alarm_name {alarm_name!r} not checked: {one_line(error, '', '')}"
    if found.get("MetricAlarms") or found.get("CompositeAlarms"):
        return None
    return (f"alarm_name: no CloudWatch alarm is named {alarm_name!r} in this account and region, so none raises or "
            "resolves this alert until one is")


def put(path: Path, table: str, on_call_table: str | None) -> int:
    try:
        item = plain_item(json.loads(path.read_text(), parse_float=Decimal))
    except (OSError, ValueError) as error:
        print(f"Refused, not written: {path}: {error}", file=sys.stderr)
        return REFUSED
    except InvalidAlertConfig as refused:
        print(f"Refused, not written: {refused}", file=sys.stderr)
        return REFUSED
    session = boto3.session.Session()
    try:
        config = check(item, region=session.region_name or "us-east-1", now=time.time())
    except InvalidAlertConfig as refused:
        print(f"Refused, not written: {refused} (an execution would fail with InvalidAlertConfig)", file=sys.stderr)
        return REFUSED
    try:
        warnings = []
        if config.schedules:
            warnings += check_schedules(session, config.schedules, on_call_table or on_call_table_of(session))
        if isinstance(alarm := item.get("alarm_name"), str) and (warning := alarm_warning(session, alarm)):
            warnings.append(warning)
        for warning in warnings:
            print(f"Warning: {warning}", file=sys.stderr)
        session.resource("dynamodb").Table(table).put_item(Item=item)
    except Refused as refused:
        print(f"Refused, not written: {refused}", file=sys.stderr)
        return REFUSED
    except (ClientError, BotoCoreError) as error:
        print(f"Not written: {one_line(error, table, 'AlertTableName')}", file=sys.stderr)
        return FAILED
    print(f"Put into {table}: alert {summary(item, config)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.alert", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    put_command = commands.add_parser("put", help="check an alert item as the app will run it, then write it")
    put_command.add_argument("item", type=Path, help="the item, plain JSON or DynamoDB's typed JSON")
    put_command.add_argument("--table", required=True, help="the stack output AlertTableName")
    put_command.add_argument("--on-call-table", default=None,
                             help=f"where the schedule:<id> targets must be; by default {STACK}'s output {ON_CALL_OUTPUT}")
    args = parser.parse_args(argv)
    return put(args.item, args.table, args.on_call_table)


if __name__ == "__main__":
    sys.exit(main())

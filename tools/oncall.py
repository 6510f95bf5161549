"""Writes and shows on-call schedules, checked as the app reads them: `python -m tools.oncall put FILE --table TABLE`.

``put`` takes a schedule item in the plain form docs/on-call-schedules.md shows, or in DynamoDB's typed
JSON (the form `aws dynamodb put-item --item file://FILE` takes), checks it with the code the functions
run (patterns_common.oncall.parse_schedule) and writes it only if it would be read: a refused item is
not written and the command names the field, as `InvalidSchedule`. ``show ID`` prints the schedule's
next two weeks in its zone, overrides marked. Uses the AWS SDK's usual configuration (credentials,
region, AWS_ENDPOINT_URL for the local emulator).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

ROOT = Path(__file__).resolve().parents[1]
# The shared layer, as the Lambda runtime puts it on the path.
if str(ROOT / "lambdas" / "shared_layer" / "python") not in sys.path:
    sys.path.append(str(ROOT / "lambdas" / "shared_layer" / "python"))

from patterns_common.oncall import InvalidSchedule, Schedule, local_text, parse_schedule  # noqa: E402
from tools.items import from_typed, is_typed, one_line  # noqa: E402

REFUSED = 2
FAILED = 1
SHOWN = timedelta(days=14)


def plain_item(written: Any) -> dict[str, Any]:
    """The item as the functions read it, from either form; a typed item is recognised by every attribute being typed."""
    if not isinstance(written, dict):
        raise InvalidSchedule("?", "item", "must be a JSON object, the schedule item")
    if not is_typed(written):
        return written
    try:
        return from_typed(written)
    except ValueError as error:
        raise InvalidSchedule(str(written.get("schedule_id", {}).get("S", "?")), "item", f"is not valid typed JSON: {error}") from None


def put(path: Path, table: str) -> int:
    try:
        item = plain_item(json.loads(path.read_text(), parse_float=Decimal))
        schedule = parse_schedule(item)
    except (OSError, ValueError) as error:
        print(f"Refused, not written: {path}: {error}", file=sys.stderr)
        return REFUSED
    except InvalidSchedule as refused:
        print(f"Refused, not written: InvalidSchedule: {refused}", file=sys.stderr)
        return REFUSED
    try:
        boto3.resource("dynamodb").Table(table).put_item(Item=item)
    except (ClientError, BotoCoreError) as error:
        print(f"Not written: {one_line(error, table, 'OnCallTableName')}", file=sys.stderr)
        return FAILED
    print(f"Put into {table}: schedule {schedule.schedule_id} ({schedule.zone.key}), {len(schedule.layers)} layer(s), "
          f"{len(schedule.overrides)} override(s); `python -m tools.oncall show {schedule.schedule_id} --table {table}` "
          "shows its next two weeks")
    return 0


def show(schedule_id: str, table: str, now: float) -> int:
    try:
        item = boto3.resource("dynamodb").Table(table).get_item(Key={"schedule_id": schedule_id}).get("Item")
    except (ClientError, BotoCoreError) as error:
        print(f"Not read: {one_line(error, table, 'OnCallTableName')}", file=sys.stderr)
        return FAILED
    if item is None:
        print(f"{table} has no schedule {schedule_id!r}", file=sys.stderr)
        return FAILED
    try:
        schedule = parse_schedule(item)
    except InvalidSchedule as invalid:
        print(f"Unreadable, an alert paging it pages the rest of its level: InvalidSchedule: {invalid}", file=sys.stderr)
        return REFUSED
    print("\n".join(fortnight(schedule, datetime.fromtimestamp(now, timezone.utc))))
    return 0


def fortnight(schedule: Schedule, now: datetime) -> list[str]:
    """The final schedule from ``now`` for two weeks, one line a shift, in the schedule's zone."""
    lines = [f"{schedule.schedule_id} ({schedule.zone.key}), the next {SHOWN.days} days:"]
    for shift in schedule.shifts(now, now + SHOWN):
        by_override = any(o.start <= shift.start < o.end and o.member == shift.member for o in schedule.overrides)
        who = shift.member or "nobody (a gap: the next escalation level is paged)"
        lines.append(f"  {local_text(shift.start, schedule.zone)} to {local_text(shift.end, schedule.zone)}  {who}"
                     + ("  (override)" if by_override else ""))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.oncall", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    put_command = commands.add_parser("put", help="check a schedule item as the functions read it, then write it")
    put_command.add_argument("item", type=Path, help="the item, plain JSON or DynamoDB's typed JSON")
    show_command = commands.add_parser("show", help="print a schedule's next two weeks in its zone")
    show_command.add_argument("schedule_id")
    show_command.add_argument("--from", dest="start", type=datetime.fromisoformat, default=None,
                              help="an ISO instant with its offset, by default now (the local emulator: its simulated now)")
    for command in (put_command, show_command):
        command.add_argument("--table", required=True, help="the stack output OnCallTableName")
    args = parser.parse_args(argv)
    if args.command == "put":
        return put(args.item, args.table)
    return show(args.schedule_id, args.table, args.start.timestamp() if args.start else time.time())


if __name__ == "__main__":
    sys.exit(main())

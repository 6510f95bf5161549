"""Writes an alert item only if Fetch Alert Config would accept it: `python -m tools.alert put FILE --table TABLE`.

FILE holds the item in DynamoDB's typed JSON, the form `aws dynamodb put-item --item file://FILE` takes.
It is checked with the code Fetch Alert Config runs (alert_config_logic.read_input and fetched_config,
links included, so the size limits count what an execution will carry); a refused item is not written
and the command says why, naming the field, as the execution would fail (InvalidAlertConfig). Uses the
AWS SDK's usual configuration (credentials, region, AWS_ENDPOINT_URL for the local emulator).
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
from pathlib import Path
from typing import Any

import boto3
from boto3.dynamodb.types import TypeDeserializer

ROOT = Path(__file__).resolve().parents[1]
# The function's own module and the shared layer, as the Lambda runtime puts them on the path.
for _path in (ROOT / "lambdas" / "alert_config", ROOT / "lambdas" / "shared_layer" / "python"):
    if str(_path) not in sys.path:
        sys.path.append(str(_path))

from alert_config_logic import InvalidAlertConfig, fetched_config, read_input, status_of  # noqa: E402

REFUSED = 2


def action_url_like(region: str) -> str:
    """A URL as long as the stack's AlertActionsUrl (https://<32-character id>.lambda-url.<region>.on.aws/):
    the links an execution carries are counted at their real length."""
    return f"https://{'x' * 32}.lambda-url.{region}.on.aws/"


def check(typed_item: Any, *, region: str, now: float) -> str:
    """A one-line summary of the item Fetch Alert Config would run; InvalidAlertConfig if it would refuse it."""
    try:
        item = {name: TypeDeserializer().deserialize(value) for name, value in typed_item.items()}
    except (AttributeError, TypeError, ValueError):
        raise InvalidAlertConfig(
            "item", 'is not in DynamoDB\'s typed JSON, e.g. {"alert_id": {"S": "orders-db-cpu"}, ...}'
        ) from None
    execution = read_input({"alert_id": item.get("alert_id")})
    # Signed with a throwaway key: a link's length does not depend on the key.
    config = fetched_config(
        item, start_delay_seconds=execution.start_delay_seconds, key=secrets.token_hex(32).encode(),
        actions_url=action_url_like(region), now=now,
    )
    alarm = item.get("alarm_name")
    return (
        f"{config.alert_id}: status {status_of(item)}, {len(config.users)} people in {len(config.levels)} "
        f"level(s), {config.rounds} round(s) {config.interval_seconds} s apart"
        + (f", raised and resolved by CloudWatch alarm {alarm}" if alarm else "")
    )


def put(path: Path, table: str) -> int:
    try:
        typed_item = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        print(f"Refused, not written: {path}: {error}", file=sys.stderr)
        return REFUSED
    session = boto3.session.Session()
    try:
        summary = check(typed_item, region=session.region_name or "us-east-1", now=time.time())
    except InvalidAlertConfig as refused:
        print(f"Refused, not written: {refused} (an execution would fail with InvalidAlertConfig)", file=sys.stderr)
        return REFUSED
    session.client("dynamodb").put_item(TableName=table, Item=typed_item)
    print(f"Put into {table}: alert {summary}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.alert", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    put_command = commands.add_parser("put", help="check an alert item as Fetch Alert Config will, then write it")
    put_command.add_argument("item", type=Path, help="the item in DynamoDB's typed JSON")
    put_command.add_argument("--table", required=True, help="the stack output AlertTableName")
    args = parser.parse_args(argv)
    return put(args.item, args.table)


if __name__ == "__main__":
    sys.exit(main())

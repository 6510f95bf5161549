"""Writes and shows people's contact methods and rules, checked as the app reads them: `python -m tools.people put FILE --table TABLE`.

``put`` takes a person item in the plain form docs/reaching-people.md shows, or in DynamoDB's typed JSON
(the form `aws dynamodb put-item --item file://FILE` takes), checks it with the code the functions run
(patterns_common.people.parse_person, as a written item: the fields the app keeps are refused) and writes
it only if it would be read: a refused item is not written and the command names the field, as
`InvalidPerson`. It writes the person's fields only (one UpdateItem: those given set, the others
removed), so the pending verifications and reply codes the app keeps on the item survive. ``show
MEMBER`` prints the person's methods, verified or not, and rules in minute order. Uses the AWS SDK's
usual configuration (credentials, region, AWS_ENDPOINT_URL for the local emulator).
"""

from __future__ import annotations

import argparse
import json
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import BotoCoreError, ClientError

ROOT = Path(__file__).resolve().parents[1]
# The shared layer, as the Lambda runtime puts it on the path.
if str(ROOT / "lambdas" / "shared_layer" / "python") not in sys.path:
    sys.path.append(str(ROOT / "lambdas" / "shared_layer" / "python"))

from patterns_common.people import FIELDS, InvalidPerson, parse_person, person_update, summary  # noqa: E402
from tools.items import from_typed, is_typed, one_line  # noqa: E402

REFUSED = 2
FAILED = 1
OUTPUT = "PeopleTableName"


def plain_item(written: Any) -> dict[str, Any]:
    """The item as the functions read it, from either form; a typed item is recognised by every attribute being typed."""
    if not isinstance(written, dict):
        raise InvalidPerson("?", "item", "must be a JSON object, the person item")
    if not is_typed(written):
        return written
    try:
        return from_typed(written)
    except ValueError as error:
        member = written.get("member")
        shown = member.get("S", "?") if isinstance(member, dict) else "?"
        raise InvalidPerson(str(shown), "item", f"is not valid typed JSON: {error}") from None


def put(path: Path, table: str) -> int:
    try:
        item = plain_item(json.loads(path.read_text(), parse_float=Decimal))
        person = parse_person(item, written=True)
    except InvalidPerson as refused:
        print(f"Refused, not written: InvalidPerson: {refused}", file=sys.stderr)
        return REFUSED
    except (OSError, ValueError) as error:
        print(f"Refused, not written: {path}: {error}", file=sys.stderr)
        return REFUSED
    # member is the key: the other fields are the person's, written as given.
    update = person_update(person.member, item, tuple(field for field in FIELDS if field != "member"))
    try:
        boto3.resource("dynamodb").Table(table).update_item(**update)
    except (ClientError, BotoCoreError) as error:
        print(f"Not written: {one_line(error, table, OUTPUT)}", file=sys.stderr)
        return FAILED
    print(f"Put into {table}: person {person.member}, {len(person.contact_methods)} contact method(s), "
          f"{len(person.rules)} rule(s), {len(person.pages())} of them paging; "
          f"`python -m tools.people show {person.member} --table {table}` shows them")
    return 0


def show(member: str, table: str) -> int:
    try:
        item = boto3.resource("dynamodb").Table(table).get_item(Key={"member": member}, ConsistentRead=True).get("Item")
    except (ClientError, BotoCoreError) as error:
        print(f"Not read: {one_line(error, table, OUTPUT)}", file=sys.stderr)
        return FAILED
    if item is None:
        print(f"{table} has no person {member!r}: a round notifies them in the channel only", file=sys.stderr)
        return FAILED
    try:
        person = parse_person(item)
    except InvalidPerson as invalid:
        print(f"Unreadable: InvalidPerson: {invalid}", file=sys.stderr)
        return REFUSED
    print("\n".join(summary(person)))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.people", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    put_command = commands.add_parser("put", help="check a person item as the functions read it, then write it")
    put_command.add_argument("item", type=Path, help="the item, plain JSON or DynamoDB's typed JSON")
    show_command = commands.add_parser("show", help="print a person's contact methods and rules")
    show_command.add_argument("member", help="the Slack member ID (U...)")
    for command in (put_command, show_command):
        command.add_argument("--table", required=True, help=f"the stack output {OUTPUT}")
    args = parser.parse_args(argv)
    if args.command == "put":
        return put(args.item, args.table)
    return show(args.member, args.table)


if __name__ == "__main__":
    sys.exit(main())

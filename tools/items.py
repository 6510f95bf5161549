"""What the writers share: an item file in either form people write, and an AWS failure said in one line."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import BotoCoreError, ClientError

# DynamoDB's typed JSON: every attribute is {"<type>": value} with one of these types.
_TYPES = {"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"}


def is_typed(written: dict[str, Any]) -> bool:
    """Whether an item is in DynamoDB's typed JSON (the form `aws dynamodb put-item --item` takes):
    every attribute typed. A plain item's attribute is a value, never a one-key map of a type."""
    return bool(written) and all(
        isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _TYPES for value in written.values()
    )


class _Deserializer(TypeDeserializer):
    def _deserialize_n(self, value: str) -> Decimal:
        # boto3 reads {"N": "three"} as NaN, a number DynamoDB refuses to store.
        number = super()._deserialize_n(value)
        if not number.is_finite():
            raise ValueError(f"{value!r} is not a number")
        return number


def from_typed(written: dict[str, Any]) -> dict[str, Any]:
    """The plain item (numbers as Decimal, as the functions read it); ValueError naming the attribute
    whose value is not valid typed JSON."""
    plain = {}
    for name, value in written.items():
        try:
            plain[name] = _Deserializer().deserialize(value)
        except (AttributeError, TypeError, ValueError, ArithmeticError) as error:
            raise ValueError(f"{name}: {error}") from None
    return plain


def one_line(error: ClientError | BotoCoreError, table: str, output: str) -> str:
    """An AWS failure as one line: a missing table names the stack output that names the right one;
    anything else (a bad credential, an unreachable endpoint) is its code and message."""
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        if code == "ResourceNotFoundException":
            return f"there is no table {table!r} (the stack output {output} names it)"
        return f"{code}: {error.response.get('Error', {}).get('Message', '')}"
    return f"{type(error).__name__}: {error}"

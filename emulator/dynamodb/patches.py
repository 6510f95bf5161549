"""DynamoDB: table exports take time and are named as on AWS."""

from __future__ import annotations

import uuid
from typing import Any

from emulator.clock import SimClock

# How long a table export takes. AWS takes minutes even for a tiny table; moto finishes at once.
DYNAMODB_EXPORT_SECONDS = 240


def install_dynamodb_exports(clock: SimClock) -> None:
    """Table exports as AWS runs them: named under their table, and taking time."""
    from moto.dynamodb.models.table_export import TableExport

    original_init = TableExport.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        # AWS: <table ARN>/export/<id>, which IAM policies scope DescribeExport by; moto nested
        # the whole table ARN after "table/" and said "import".
        self.arn = f"{self.table.table_arn}/export/{uuid.uuid4().hex}"
        self._emulator_done_at = clock.now() + DYNAMODB_EXPORT_SECONDS

    # The export's status is IN_PROGRESS until DYNAMODB_EXPORT_SECONDS of simulated time have
    # passed, then whatever moto's export (done at once) ended with.
    def get_status(self: Any) -> str:
        if clock.now() < getattr(self, "_emulator_done_at", float("inf")):
            return "IN_PROGRESS"
        return self._emulator_status

    def set_status(self: Any, value: str) -> None:
        self._emulator_status = value

    TableExport.__init__ = __init__
    TableExport.status = property(get_status, set_status)



def install_atomic_writes() -> None:
    """Writes to a table are atomic: a condition is checked and the item written as one step.

    AWS: a conditional write succeeds only if its condition holds when it is applied, so of 200
    concurrent "only if still active" updates exactly one wins (DynamoDB Developer Guide, "Condition
    expressions"). moto checks the condition and writes the item in plain Python with no lock, so two
    requests served by two threads can both pass the check. One lock per backend serialises writes.
    """
    import threading

    from moto.dynamodb.models import DynamoDBBackend

    locks: dict[int, threading.Lock] = {}
    registry = threading.Lock()

    def serialised(original: Any) -> Any:
        def write(self: Any, *args: Any, **kwargs: Any) -> Any:
            with registry:
                lock = locks.setdefault(id(self), threading.Lock())
            with lock:
                return original(self, *args, **kwargs)

        return write

    for name in ("put_item", "update_item", "delete_item", "transact_write_items"):
        setattr(DynamoDBBackend, name, serialised(getattr(DynamoDBBackend, name)))

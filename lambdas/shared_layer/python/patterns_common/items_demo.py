"""The demo item processor of the Map retry-failed pattern: succeeds unless the item asks otherwise.

Replace ``process_item`` with real work; keep its contract: take the item and the attempt number
the machine gives, return on success, raise on failure (the exception's class name is the error
name the machine records).

Item fields it understands:
- ``fail_attempts: k``: the first k attempts fail.
- ``failure_rate: p``: each attempt fails with probability p, drawn from a generator seeded with
  the item id and the attempt number, so a run is reproducible.
- ``raise_unexpected: true``: raises a ``RuntimeError``, standing in for a bug in the processor.
- ``sleep_seconds: s``: sleeps s seconds first (longer than the function timeout = a timed-out item).
- ``answer_kib: n``: answers with about n KiB of padding (over 256 = more than a Step Functions
  payload may hold: the item fails with ``States.DataLimitExceeded``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any


class ItemProcessingFailed(Exception):
    """The item could not be processed on this attempt; a later pass may succeed."""


def fails_by_chance(item_id: str, attempt: int, failure_rate: float) -> bool:
    return random.Random(f"{item_id}#{attempt}").random() < failure_rate


def process_item(item: dict[str, Any], attempt: int, sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    item_id = item["id"]
    if item.get("sleep_seconds"):
        sleep(item["sleep_seconds"])
    if item.get("raise_unexpected"):
        raise RuntimeError(f"item {item_id} asked the processor to crash")
    fail_attempts = item.get("fail_attempts", 0)
    if attempt <= fail_attempts:
        raise ItemProcessingFailed(f"item {item_id} fails its first {fail_attempts} attempt(s); this is attempt {attempt}")
    failure_rate = item.get("failure_rate", 0)
    if failure_rate and fails_by_chance(item_id, attempt, failure_rate):
        raise ItemProcessingFailed(f"item {item_id} failed attempt {attempt} by chance (failure_rate {failure_rate})")
    answer = {"id": item_id, "attempt": attempt}
    if item.get("answer_kib"):
        answer["padding"] = "x" * (item["answer_kib"] * 1024)
    return answer

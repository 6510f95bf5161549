"""The team's item processor: each item's first attempt fails (a downstream service that warms up), the
next succeeds. It gets {"item": ..., "attempt": n}, returns on success and raises on failure: the
exception's class name is the item's error."""

from __future__ import annotations

from typing import Any


class DownstreamNotReady(Exception):
    """The downstream service refused this attempt; a later pass succeeds."""


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    item, attempt = event["item"], event["attempt"]
    if item.get("flaky") and attempt == 1:
        raise DownstreamNotReady(f"{item['id']}: the downstream service refused attempt {attempt}")
    return {"id": item["id"], "processed_on_attempt": attempt}

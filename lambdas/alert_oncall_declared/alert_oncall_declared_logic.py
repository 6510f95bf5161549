"""The schedules declared with the app, as a CloudFormation custom resource writes them: what to put, what to delete.

``AlertNotification(schedules=[...])`` hands the items to the resource as ``Schedules`` (JSON text,
so CloudFormation passes them as written). Create puts every item; Update puts the new and changed
ones and deletes the ones no longer declared; Delete deletes the ones the resource wrote. An item
left as it was is not written again, so overrides added at runtime (``/oncall cover``) survive a
deployment that did not change that schedule.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Writes:
    puts: list[dict[str, Any]]
    deletes: list[str]


def declared(properties: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The declared items of a request's properties, by schedule id."""
    items = json.loads((properties or {}).get("Schedules") or "[]")
    return {item["schedule_id"]: item for item in items}


def plan(request: Mapping[str, Any]) -> Writes:
    new = declared(request["ResourceProperties"])
    old = declared(request.get("OldResourceProperties")) if request["RequestType"] == "Update" else {}
    if request["RequestType"] == "Delete":
        return Writes([], sorted(new))
    return Writes(
        [item for schedule_id, item in new.items() if old.get(schedule_id) != item],
        sorted(set(old) - set(new)),
    )


def response(request: Mapping[str, Any], physical_id: str, reason: str | None = None) -> dict[str, Any]:
    """The body PUT to the request's ResponseURL ("Custom resource response objects")."""
    body = {
        "Status": "FAILED" if reason is not None else "SUCCESS",
        "PhysicalResourceId": physical_id,
        "StackId": request["StackId"],
        "RequestId": request["RequestId"],
        "LogicalResourceId": request["LogicalResourceId"],
    }
    if reason is not None:
        body["Reason"] = reason[:1000]  # the whole response must stay under 4096 bytes
    return body

"""The schedules declared with the app, as a CloudFormation custom resource writes them: what to put, what to delete,
and how a put keeps the covers added at runtime.

``AlertNotification(schedules=[...])`` hands the items to the resource as ``Schedules`` (JSON text,
so CloudFormation passes them as written). Create puts every item; Update puts the new and changed
ones and deletes the ones no longer declared; Delete deletes the ones the resource wrote. An item
left as it was is not written again. An Update whose ``TableName`` changed (the deployment adopted
another table) puts every item into the new table, as Create does.

A put writes the declared fields and keeps the overrides added at runtime (``/oncall cover``): those
in the table that the previous declaration did not have. Overrides the declaration itself removed go.
The declaration wins: a runtime cover that overlaps a declared override (or one kept before it), or
that the new declaration cannot read, is dropped, and the deployment's log names it. A cover kept
across a change of ``time_zone`` is rewritten in the new zone, so it still covers the same instants.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from patterns_common.oncall import FOREVER, InvalidSchedule, Override, parse_schedule, stored_time

UNTIL_FURTHER_NOTICE = "9999-12-31T23:59"


@dataclass(frozen=True)
class Put:
    item: dict[str, Any]  # the schedule as declared now
    declared_before: dict[str, Any] | None  # as the deployment before declared it; None: newly declared


@dataclass(frozen=True)
class Writes:
    puts: list[Put]
    deletes: list[str]


@dataclass(frozen=True)
class Dropped:
    cover: Any  # as it was in the table
    reason: str


@dataclass(frozen=True)
class Merged:
    item: dict[str, Any]  # what to write
    kept: list[dict[str, Any]]  # the runtime covers kept, as written
    dropped: list[Dropped]


def declared(properties: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The declared items of a request's properties, by schedule id."""
    items = json.loads((properties or {}).get("Schedules") or "[]")
    return {item["schedule_id"]: item for item in items}


def plan(request: Mapping[str, Any]) -> Writes:
    new = declared(request["ResourceProperties"])
    old = declared(request.get("OldResourceProperties")) if _same_table_updated(request) else {}
    if request["RequestType"] == "Delete":
        return Writes([], sorted(new))
    return Writes(
        [Put(item, old.get(schedule_id)) for schedule_id, item in new.items() if old.get(schedule_id) != item],
        sorted(set(old) - set(new)),
    )


def _same_table_updated(request: Mapping[str, Any]) -> bool:
    """Whether the old schedules (an Update's) are in the table written now. An Update that moves them to
    another table (a deployment adopting a kept table) writes every one there, as a Create (which has no
    old ones) does; a resource written before it named its table (no TableName) wrote to the same one."""
    table = request["ResourceProperties"].get("TableName")
    return request.get("OldResourceProperties", {}).get("TableName", table) == table


def merge(put: Put, current: Mapping[str, Any] | None) -> Merged:
    """The item to write for ``put`` over ``current`` (the item in the table now, None if there is none).

    The declaration is valid (checked at synth), so the result always parses."""
    declared_overrides = list(put.item.get("overrides", []))
    before = (put.declared_before or {}).get("overrides", [])
    in_table = (current or {}).get("overrides")
    runtime = [cover for cover in in_table if cover not in before and cover not in declared_overrides] \
        if isinstance(in_table, list) else []
    zone_before = (current or {}).get("time_zone", put.item["time_zone"])
    schedule = parse_schedule(put.item)
    taken = [(override, "the declared override") for override in schedule.overrides]
    kept: list[dict[str, Any]] = []
    dropped: list[Dropped] = []
    for cover in runtime:
        try:
            written, parsed = _in_declared_zone(put.item, cover, zone_before)
        except InvalidSchedule as unreadable:
            dropped.append(Dropped(cover, f"the declared schedule cannot read it: {unreadable}"))
            continue
        clash = next(((other, whose) for other, whose in taken if parsed.start < other.end and other.start < parsed.end), None)
        if clash is not None:
            other, whose = clash
            dropped.append(Dropped(cover, f"it overlaps {whose} of {other.member} from "
                                          f"{_written(other.start, schedule.zone)} to {_written(other.end, schedule.zone)}"))
            continue
        kept.append(written)
        taken.append((parsed, "the runtime cover"))
    item = {**put.item, "overrides": declared_overrides + kept} if kept else dict(put.item)
    return Merged(item, kept, dropped)


def _in_declared_zone(item: Mapping[str, Any], cover: Any, zone_before: Any) -> tuple[dict[str, Any], Override]:
    """``cover``, written in ``zone_before``, as the declared schedule reads it; InvalidSchedule if it cannot."""
    if zone_before == item["time_zone"] or not isinstance(cover, Mapping):
        [parsed] = parse_schedule({**item, "overrides": [cover]}).overrides
        return dict(cover), parsed
    [parsed] = parse_schedule({**item, "time_zone": zone_before, "overrides": [cover]}).overrides
    zone = parse_schedule(item).zone
    rewritten = {"member": parsed.member, "start": _written(parsed.start, zone), "end": _written(parsed.end, zone)}
    [reread] = parse_schedule({**item, "overrides": [rewritten]}).overrides
    return rewritten, reread


def _written(instant: datetime, zone: Any) -> str:
    return UNTIL_FURTHER_NOTICE if instant >= FOREVER else stored_time(instant, zone)


def unchanged_since(current: Mapping[str, Any] | None) -> dict[str, Any]:
    """PutItem's condition that the item still has the overrides ``current`` had: a cover written between the
    read and the write makes the write fail, to be merged again (DynamoDB Developer Guide, "Condition
    expressions": ``=`` compares any type, lists and maps included)."""
    if current is None:
        return {"ConditionExpression": "attribute_not_exists(schedule_id)"}
    if "overrides" not in current:
        return {"ConditionExpression": "attribute_exists(schedule_id) AND attribute_not_exists(overrides)"}
    return {
        "ConditionExpression": "overrides = :seen",
        "ExpressionAttributeValues": {":seen": current["overrides"]},
    }


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

"""Sample inputs as files: the one copy the console, `run`, `demo`, the docs and the tests share.

``samples/<machine>/<scenario>.json`` is an execution input as it is passed to StartExecution;
``samples/alert-items/<alert_id>.json`` is an alert item in DynamoDB's typed form, as
``aws dynamodb put-item --item file://...`` takes it; ``samples/oncall-schedules/<id>.json`` an
on-call schedule item in the same form.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
ALERT_ITEMS = SAMPLES / "alert-items"
ON_CALL_SCHEDULES = SAMPLES / "oncall-schedules"
_TYPE_DESCRIPTORS = {"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"}


class InputFileError(ValueError):
    """A file a person named cannot be used; the message is one line that says why."""


@dataclass(frozen=True)
class Sample:
    machine: str
    name: str
    path: Path

    @property
    def input(self) -> Any:
        return read_json(self.path)

    @property
    def relative_path(self) -> str:
        return self.path.relative_to(SAMPLES.parent).as_posix()


def for_machine(machine: str) -> list[Sample]:
    """The machine's samples in file-name order; the first is what `run MACHINE` starts."""
    return [Sample(machine, path.stem, path) for path in sorted((SAMPLES / machine).glob("*.json"))]


def sample(machine: str, name: str) -> Sample:
    found = next((s for s in for_machine(machine) if s.name == name), None)
    if found is None:
        raise KeyError(f"no sample {name!r} for {machine}; samples: {[s.name for s in for_machine(machine)]}")
    return found


def read_json(path: Path) -> Any:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InputFileError(f"{path} is not valid JSON: {exc}") from None


def read_alert_item(path: Path) -> dict:
    """An alert item file in DynamoDB's typed form, checked enough to give a clear error."""
    item = read_json(path)
    typed = isinstance(item, dict) and all(
        isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _TYPE_DESCRIPTORS for value in item.values()
    )
    if not typed:
        raise InputFileError(
            f'{path} is not an item in DynamoDB\'s typed form ({{"alert_id": {{"S": "..."}}, ...}}, '
            f"as in {ALERT_ITEMS.relative_to(SAMPLES.parent).as_posix()}/)"
        )
    if "S" not in item.get("alert_id", {}):
        raise InputFileError(f'{path} has no string key alert_id ({{"alert_id": {{"S": "..."}}}})')
    return item


def alert_item_for(payload: Any) -> Path | None:
    """The sample alert item an alert input names, if there is one."""
    alert_id = payload.get("alert_id") if isinstance(payload, dict) else None
    if not isinstance(alert_id, str):
        return None
    path = ALERT_ITEMS / f"{alert_id}.json"
    return path if path.is_file() else None


def schedules_named_by(item: dict) -> list[Path]:
    """The sample on-call schedules a typed alert item's levels name (``schedule:<id>``), each once."""
    levels = item.get("escalation", {}).get("L", [])
    targets = [target.get("S", "") for level in levels for target in level.get("L", [])]
    targets += [target.get("S", "") for target in item.get("user_accounts", {}).get("L", [])]
    ids = dict.fromkeys(target.removeprefix("schedule:") for target in targets if target.startswith("schedule:"))
    return [path for schedule_id in ids if (path := ON_CALL_SCHEDULES / f"{schedule_id}.json").is_file()]

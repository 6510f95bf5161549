"""The metadata every event on an EventBridge bus carries around its ``detail``, built in one place
for the events the emulator emits itself (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html).

Plain logic: no AWS client, no clock (the caller says when).
"""

from __future__ import annotations

import datetime as _datetime
import uuid


def event_time(epoch: float) -> str:
    """An event's ``time``: UTC to the second, as AWS services' events give it (``2017-12-22T18:43:48Z``)."""
    return _datetime.datetime.fromtimestamp(epoch, _datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def aws_event(*, source: str, detail_type: str, account: str, region: str, at: float, resources: list[str],
              detail: dict) -> dict:
    """An event as an AWS service sends it: version "0", a new version 4 UUID, the fields in AWS's order."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": source,
        "account": account,
        "time": event_time(at),
        "region": region,
        "resources": resources,
        "detail": detail,
    }

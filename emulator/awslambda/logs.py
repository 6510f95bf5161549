"""A function's log, where Lambda puts it: CloudWatch Logs, one stream per execution environment.

What the Python runtime writes around each invocation and how it names streams, from the Lambda
Developer Guide's logging page (https://docs.aws.amazon.com/lambda/latest/dg/python-logging.html):

    START RequestId: 8f507cfc-xmpl-4697-b07a-ac58fc914c95 Version: $LATEST
    ... what the handler printed ...
    END RequestId: 8f507cfc-xmpl-4697-b07a-ac58fc914c95
    REPORT RequestId: 8f507cfc-xmpl-4697-b07a-ac58fc914c95  Duration: 15.74 ms  Billed Duration: 147 ms ...

The REPORT fields are tab-separated, and a cold start's adds ``Init Duration``, which is billed (147 ms
above is 15.74 + 130.49 rounded up). The stream is ``YYYY/MM/DD/[$LATEST]<32 hex>``, dated when the
environment started. The group is the function's ``LoggingConfig.LogGroup``, else
``/aws/lambda/<function name>``. Event timestamps are the simulated clock's.
"""

from __future__ import annotations

import math
import threading
import uuid
from datetime import datetime, timezone
from typing import Any

VERSION = "$LATEST"  # the emulator runs no published versions


def log_group(fn: Any) -> str:
    """The group ``fn`` logs to: its configured one (the template's LoggingConfig), else Lambda's default."""
    return (getattr(fn, "logging_config", None) or {}).get("LogGroup") or f"/aws/lambda/{fn.function_name}"


def stream_name(started: float) -> str:
    """A new execution environment's stream, dated (UTC) when it started."""
    day = datetime.fromtimestamp(started, timezone.utc).strftime("%Y/%m/%d")
    return f"{day}/[{VERSION}]{uuid.uuid4().hex}"


def start_line(request_id: str) -> str:
    return f"START RequestId: {request_id} Version: {VERSION}"


def end_line(request_id: str) -> str:
    return f"END RequestId: {request_id}"


def report_line(request_id: str, duration_ms: float, memory_mb: int, max_used_mb: int,
                init_ms: float | None = None) -> str:
    """The REPORT line; billed time is whole milliseconds, rounded up, and includes a cold start's init."""
    billed = math.ceil(round(duration_ms + (init_ms or 0.0), 2))
    fields = [f"REPORT RequestId: {request_id}", f"Duration: {duration_ms:.2f} ms", f"Billed Duration: {billed} ms",
              f"Memory Size: {memory_mb} MB", f"Max Memory Used: {max_used_mb} MB"]
    if init_ms is not None:
        fields.append(f"Init Duration: {init_ms:.2f} ms")
    return "\t".join(fields)


class LogSink:
    """Puts a function's lines into moto's CloudWatch Logs backend, creating its group and stream as needed.

    Lambda creates a group that does not exist yet when its role allows (the default group always
    comes about this way); here it always does.
    """

    def __init__(self, account_id: str, region: str) -> None:
        self.account_id, self.region = account_id, region
        self._lock = threading.Lock()  # moto's log streams are not thread-safe

    def put(self, group: str, stream: str, events: list[tuple[float, str]]) -> None:
        """``events``: (simulated epoch seconds, line), in order."""
        if not events:
            return
        from moto.logs.models import logs_backends

        backend = logs_backends[self.account_id][self.region]
        with self._lock:
            if group not in backend.groups:
                backend.create_log_group(group, {})
            if stream not in backend.groups[group].streams:
                backend.create_log_stream(group, stream)
            backend.put_log_events(group, stream, [{"timestamp": int(at * 1000), "message": line} for at, line in events])

"""X-Amzn-Trace-Id headers: how an invocation's AWS calls are tied to what caused the invocation.

Lambda gives each invocation a trace header (``_X_AMZN_TRACE_ID``, sent by the SDK with every call);
an invocation that came with one (from EventBridge, or an Invoke call carrying X-Amzn-Trace-Id)
keeps its root. The emulator uses that root to tell which event started an execution through a
Lambda target.
"""

from __future__ import annotations

import uuid


def new_trace_id(now: float) -> str:
    """An X-Ray trace header as Lambda gives an invocation nobody traced: a new root, not sampled."""
    return f"Root=1-{int(now):08x}-{uuid.uuid4().hex[:24]};Parent={uuid.uuid4().hex[:16]};Sampled=0"


def trace_root(header: str | None) -> str | None:
    """The ``Root=`` part of an X-Amzn-Trace-Id header: what every hop of one trace shares."""
    for part in (header or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == "Root" and value:
            return value
    return None

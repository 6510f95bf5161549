"""Names of alert-notification executions: whoever starts one for an alert and a moment names it alike.

The scheduled dispatcher names an execution after the schedule slot, the alarm handler after the
alarm's state change; the same alert and moment give the same name, so a redelivered event starts
nothing new (StartExecution refuses, or returns the running execution of, a name already used), and a
running execution's name says which alert it is for without reading its input.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone

# Execution names allow more, but ASCII letters, digits, - and _ also keep CloudWatch Logs happy.
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_READABLE_PART = 50  # + "-" + 10 hex + "-" + 16-character timestamp stays within the 80-character limit
_NAMED = re.compile(r"^(?P<alert_key>[A-Za-z0-9_-]+-[0-9a-f]{10})-\d{8}T\d{6}Z$")

# The one-escalation claim on the alert item: the ARN of the execution escalating the alert, and
# when that execution has surely ended (the machine's TimeoutSeconds after the claim).
CLAIM_ATTRIBUTE = "escalation_execution_arn"
CLAIM_EXPIRY_ATTRIBUTE = "escalation_claim_expires_at"
MACHINE_TIMEOUT_SECONDS = 172_800


def alert_key(alert_id: str) -> str:
    """The part of every such execution's name that says which alert it is for.

    The hash keeps two ids that read alike once cleaned ("a/b", "a:b") apart.
    """
    readable = _NAME_UNSAFE.sub("-", alert_id).strip("-")[:_READABLE_PART] or "alert"
    return f"{readable}-{hashlib.sha256(alert_id.encode()).hexdigest()[:10]}"


def execution_name(alert_id: str, moment: datetime) -> str:
    return f"{alert_key(alert_id)}-{moment.astimezone(timezone.utc):%Y%m%dT%H%M%SZ}"


def alert_key_of(name: str) -> str | None:
    """The alert key of a name execution_name wrote; None for any other name (an execution started by hand)."""
    match = _NAMED.match(name)
    return match["alert_key"] if match else None


def execution_arn(state_machine_arn: str, name: str) -> str:
    """The ARN StartExecution will give ``name``, known before the start: a claim can name it in the
    same write that raises the alert (arn:aws:states:<region>:<account>:execution:<machine>:<name>)."""
    prefix, machine = state_machine_arn.rsplit(":stateMachine:", 1)
    return f"{prefix}:execution:{machine}:{name}"


def claim_expiry(now: float) -> int:
    return int(now) + MACHINE_TIMEOUT_SECONDS

"""Input of the job poller machines: defaults for the optional fields and bounds for every field.

Defaults: ``timeout_seconds`` 900 (the longest demo job fits), ``initial_wait_seconds`` 0 and
``poll_interval_seconds`` 30. Standard workflows bill per state transition, so set
``initial_wait_seconds`` to the job's expected minimum duration and poll no more often than needed:
a 15-minute job polled every second costs about 2,700 transitions, polled every minute about 45.
"""

from __future__ import annotations

from typing import Any

DEFAULTS = {"timeout_seconds": 900, "initial_wait_seconds": 0, "poll_interval_seconds": 30}
MAX_TIMEOUT_SECONDS = 86_400  # one day: longer jobs want an event (callback) rather than polling
MAX_POLL_INTERVAL_SECONDS = 3_600
FIELDS = ("job", *DEFAULTS)


class InvalidJobInput(ValueError):
    """Bad execution input; the message names the field. The class name is the Step Functions error."""


def _whole_seconds(name: str, value: Any, low: int, high: int, high_reason: str) -> int:
    # bool is an int in Python but never a duration; 30.0 or "30" are refused rather than guessed at
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidJobInput(f"{name} must be a whole number of seconds, got {value!r}")
    if not low <= value <= high:
        raise InvalidJobInput(f"{name} must be from {low} to {high} ({high_reason}), got {value}")
    return value


def normalize_job_input(event: Any) -> dict[str, Any]:
    """Return the input with every default filled in, or raise ``InvalidJobInput`` naming the field."""
    if not isinstance(event, dict):
        raise InvalidJobInput(f"input must be a JSON object, got {type(event).__name__}")
    unknown = sorted(set(event) - set(FIELDS))
    if unknown:
        # a typo such as "timeout" would otherwise silently run with the default
        raise InvalidJobInput(f"{unknown[0]} is not an input field (expected {', '.join(FIELDS)})")
    if "job" not in event:
        raise InvalidJobInput("job is required: the parameters handed to the job runner")
    if not isinstance(event["job"], dict):
        raise InvalidJobInput(f"job must be a JSON object, got {type(event['job']).__name__}")
    values = {**DEFAULTS, **{k: v for k, v in event.items() if k in DEFAULTS}}
    timeout = _whole_seconds(
        "timeout_seconds", values["timeout_seconds"], 1, MAX_TIMEOUT_SECONDS, "at most one day"
    )
    initial_wait = _whole_seconds(
        "initial_wait_seconds", values["initial_wait_seconds"], 0, timeout, "no longer than timeout_seconds"
    )
    poll_interval = _whole_seconds(
        "poll_interval_seconds",
        values["poll_interval_seconds"],
        1,
        min(MAX_POLL_INTERVAL_SECONDS, timeout),
        f"at most {MAX_POLL_INTERVAL_SECONDS} and no longer than timeout_seconds",
    )
    return {
        "job": event["job"],
        "timeout_seconds": timeout,
        "initial_wait_seconds": initial_wait,
        "poll_interval_seconds": poll_interval,
    }

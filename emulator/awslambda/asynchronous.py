"""Lambda's asynchronous (``Event``) invocations: retries, the event's maximum age, destinations.

As the Lambda Developer Guide documents them. "How Lambda handles errors and retries with
asynchronous invocation" (invocation-async-error-handling): when the function returns an error
(its code's or the runtime's, such as a timeout), Lambda runs it up to two more times, one minute
after the first attempt and two minutes after the second; a function's event invoke config sets
fewer retries (``MaximumRetryAttempts``, 0-2) and how long an event may wait in the queue
(``MaximumEventAgeInSeconds``, 60-21600, default 6 hours). "Capturing records of Lambda
asynchronous invocations" (invocation-async-retain-records): an event that fails every attempt is
sent as an invocation record (condition ``RetriesExhausted``, the guide's "Example invocation
record") to the on-failure destination, a successful one to the on-success destination. An event
dropped for its age is recorded alike, with the condition Lambda names ``EventAgeExceeded``. Every
attempt of one event carries the same request id, as the guide's example shows. A throttled attempt
(the function's or the account's concurrency in use: concurrency.py) is no attempt: "Lambda returns
the event to the queue and attempts to run the function again for up to 6 hours ... The retry
interval increases exponentially from 1 second after the first attempt to a maximum of 5 minutes",
within the event's maximum age.
"""

from __future__ import annotations

import datetime as _datetime
import json
from dataclasses import dataclass
from typing import Any, Callable

from emulator import events
from emulator.clock import SimClock

DEFAULT_RETRY_ATTEMPTS = 2
DEFAULT_MAX_EVENT_AGE_SECONDS = 6 * 3600
# The wait before each retry: one minute before the first, two minutes before the second.
RETRY_WAITS_SECONDS = (60, 120)
# Throttled events wait 1 s before the first retry, doubling each time up to 5 minutes.
THROTTLED_FIRST_WAIT_SECONDS = 1
THROTTLED_MAX_WAIT_SECONDS = 300
SUCCESS = "Success"
RETRIES_EXHAUSTED = "RetriesExhausted"
EVENT_AGE_EXCEEDED = "EventAgeExceeded"


@dataclass(frozen=True)
class AsyncConfig:
    """A function's event invoke config, with Lambda's defaults for what it leaves out."""

    retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    max_event_age_seconds: int = DEFAULT_MAX_EVENT_AGE_SECONDS
    on_success: str | None = None
    on_failure: str | None = None

    @classmethod
    def of(cls, fn: Any) -> "AsyncConfig":
        """The config of moto's ``LambdaFunction`` ``fn`` (what GetFunctionEventInvokeConfig answers)."""
        if not fn.event_invoke_config:
            return cls()
        config = fn.event_invoke_config[0].config
        destinations = config.get("DestinationConfig") or {}
        return cls(
            retry_attempts=int(config.get("MaximumRetryAttempts", DEFAULT_RETRY_ATTEMPTS)),
            max_event_age_seconds=int(config.get("MaximumEventAgeInSeconds", DEFAULT_MAX_EVENT_AGE_SECONDS)),
            on_success=(destinations.get("OnSuccess") or {}).get("Destination"),
            on_failure=(destinations.get("OnFailure") or {}).get("Destination"),
        )


@dataclass(frozen=True)
class Outcome:
    """How an event left the queue: its condition, the attempts made and the last one's answer."""

    condition: str
    attempts: int
    payload: bytes  # the last attempt's response (the error document when it failed)
    errored: bool


def process(attempt: Callable[[], Any], config: AsyncConfig, clock: SimClock) -> Outcome:
    """Run ``attempt`` (returns an ``InvokeResult``) until it succeeds, retries run out or the event is too old."""
    accepted = clock.now()
    expires = accepted + config.max_event_age_seconds
    attempts = 0
    throttled_wait = THROTTLED_FIRST_WAIT_SECONDS
    while True:
        result = attempt()
        if result.throttled is not None:
            wait, throttled_wait = throttled_wait, min(throttled_wait * 2, THROTTLED_MAX_WAIT_SECONDS)
        else:
            attempts += 1
            if not result.errored:
                return Outcome(SUCCESS, attempts, result.payload, False)
            if attempts > config.retry_attempts:
                return Outcome(RETRIES_EXHAUSTED, attempts, result.payload, True)
            wait = RETRY_WAITS_SECONDS[attempts - 1]
        if clock.now() + wait > expires:
            # The event would still be queued when it reaches its maximum age: it is dropped then.
            clock.sleep(max(0.0, expires - clock.now()))
            return Outcome(EVENT_AGE_EXCEEDED, attempts, result.payload, True)
        clock.sleep(wait)


def invocation_record(*, function_arn: str, request_id: str, payload: bytes, outcome: Outcome, now: float) -> dict:
    """The JSON document Lambda sends a destination (the Developer Guide's "Example invocation record")."""
    response_context: dict[str, Any] = {"statusCode": 200, "executedVersion": "$LATEST"}
    if outcome.errored:
        response_context["functionError"] = "Unhandled"
    stamp = _datetime.datetime.fromtimestamp(now, _datetime.timezone.utc)
    return {
        "version": "1.0",
        "timestamp": stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z",
        "requestContext": {
            "requestId": request_id,
            "functionArn": f"{function_arn}:$LATEST",
            "condition": outcome.condition,
            "approximateInvokeCount": outcome.attempts,
        },
        "requestPayload": _document(payload),
        "responseContext": response_context,
        "responsePayload": _document(outcome.payload),
    }


def deliver(config: AsyncConfig, record: dict) -> None:
    """Send ``record`` to the destination its condition calls for, if the function has one."""
    destination = config.on_success if record["requestContext"]["condition"] == SUCCESS else config.on_failure
    if destination is not None:
        events.send(destination, json.dumps(record))


def _document(data: bytes) -> Any:
    """A payload as the record carries it: the JSON value, or the text when it is not JSON."""
    text = data.decode("utf-8", "replace")
    try:
        return json.loads(text) if text else None
    except ValueError:
        return text

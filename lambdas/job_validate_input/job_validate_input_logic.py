"""Input of the job poller machines: defaults for the optional fields and bounds for every field.

Defaults: ``timeout_seconds`` 900 (the longest demo job fits), ``initial_wait_seconds`` 0 and
``poll_interval_seconds`` 30, or ``timeout_seconds`` when that is shorter (a default never makes
an input invalid; the callback variant, which does not poll, takes any timeout). Standard workflows bill per state transition, so set
``initial_wait_seconds`` to the job's expected minimum duration and poll no more often than needed:
a 15-minute job polled every second costs about 2,700 transitions, polled every minute about 45.

The S3 poller also refuses settings that would poll so often before the timeout that its history
would pass Step Functions' 25,000-event limit: the execution would end FAILED with States.Runtime
instead of JobTimeout, with status.txt left at ``running``. Refusing up front (as the alert machine
does) beats continuing in a new execution: one execution per job keeps the job's files under one
execution ARN's md5 and its outcome in one place, and a day polled every 35 s is already 2,470 polls.
"""

from __future__ import annotations

from typing import Any

DEFAULTS = {"timeout_seconds": 900, "initial_wait_seconds": 0, "poll_interval_seconds": 30}
MAX_TIMEOUT_SECONDS = 86_400  # one day: longer jobs want an event (callback) rather than polling
MAX_POLL_INTERVAL_SECONDS = 3_600
FIELDS = ("job", *DEFAULTS)
# https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html: 25,000 events per history.
MAX_HISTORY_EVENTS = 25_000
# Kept free for retried calls (a Lambda call retried adds 3 events): room for about 800 retries.
RETRY_RESERVE_EVENTS = 2_500
# Get Job Status (TaskStateEntered, LambdaFunctionScheduled/Started/Succeeded, TaskStateExited),
# Job Complete? (entered, exited) and Wait Before Next Poll (entered, exited).
EVENTS_PER_POLL = 9
# ExecutionStarted; Validate Job Input and Run Job (5 each); Wait For Job To Start (2); on the last
# poll Get Job Status fails with JobTimeout and exits to its Catch (5 events, no Choice or Wait),
# and Fail With Error Message adds FailStateEntered and ExecutionFailed: 1 + 10 + 2 + 5 + 2 - 9.
EVENTS_OUTSIDE_POLLS = 11


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
    if "poll_interval_seconds" not in event:
        values["poll_interval_seconds"] = min(DEFAULTS["poll_interval_seconds"], timeout)
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


def polls_until_timeout(timeout: int, initial_wait: int, poll_interval: int) -> int:
    """Get Job Status calls of a job that never finishes: at initial_wait, then every poll_interval,
    the last one at or past timeout_seconds (it raises JobTimeout)."""
    return -(-(timeout - initial_wait) // poll_interval) + 1  # the polls before the timeout, rounded up


def worst_case_history_events(timeout: int, initial_wait: int, poll_interval: int) -> int:
    """History events of an S3-poller execution whose job never finishes and no call is retried."""
    return EVENTS_PER_POLL * polls_until_timeout(timeout, initial_wait, poll_interval) + EVENTS_OUTSIDE_POLLS


def check_history_budget(settings: dict[str, Any]) -> dict[str, Any]:
    """Refuse S3-poller settings whose polls would pass the history limit before the timeout."""
    timeout, initial_wait = settings["timeout_seconds"], settings["initial_wait_seconds"]
    poll_interval = settings["poll_interval_seconds"]
    budget = MAX_HISTORY_EVENTS - RETRY_RESERVE_EVENTS
    # < and <= agree here (an equivalent mutant): 9 x polls + 11 is never exactly the 22,500 of the budget.
    if worst_case_history_events(timeout, initial_wait, poll_interval) <= budget:  # pragma: no mutate
        return settings
    max_polls = (budget - EVENTS_OUTSIDE_POLLS) // EVENTS_PER_POLL
    # The least interval giving at most max_polls: max_polls - 1 intervals must cover the wait.
    shortest = -(-(timeout - initial_wait) // (max_polls - 1))
    raise InvalidJobInput(
        f"poll_interval_seconds must be at least {shortest} with timeout_seconds {timeout} and "
        f"initial_wait_seconds {initial_wait}: polling every {poll_interval} s would make "
        f"{polls_until_timeout(timeout, initial_wait, poll_interval):,} polls of {EVENTS_PER_POLL} history events, "
        f"past the {MAX_HISTORY_EVENTS:,}-event history limit of Step Functions, got {poll_interval}"
    )

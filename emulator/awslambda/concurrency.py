"""Lambda's account concurrency: the quota, reservations that leave 100 unreserved, and throttling.

As the Lambda Developer Guide documents them ("Lambda function scaling", "Configuring reserved
concurrency", "Lambda quotas"): an account has a concurrency quota per region, 1,000 by default
(a new account may start at 10 until it is raised); a function's reserved concurrency is both its
guaranteed share and its ceiling, and reservations must leave at least 100 unreserved, or
PutFunctionConcurrency (and CloudFormation's ReservedConcurrentExecutions) is refused with
InvalidParameterValueException. An invocation beyond the function's reservation, or beyond what is
left unreserved for the functions without one, is throttled: TooManyRequestsException (HTTP 429)
with the Reason ReservedFunctionConcurrentInvocationLimitExceeded or ConcurrentInvocationLimitExceeded.
https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html
https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Iterable

DEFAULT_ACCOUNT_CONCURRENCY = 1000
NEW_ACCOUNT_CONCURRENCY = 10
# What reservations must leave unreserved: 100, or the whole quota of an account with less (AWS's
# refusals name the minimum: [100] at 1,000, [10] at a new account's 10).
MINIMUM_UNRESERVED = 100
# The account's concurrency quota for `serve`, `demo` and the tests when no --account-concurrency is given.
VARIABLE = "EMULATOR_ACCOUNT_CONCURRENCY"
RESERVED_THROTTLE = "ReservedFunctionConcurrentInvocationLimitExceeded"
ACCOUNT_THROTTLE = "ConcurrentInvocationLimitExceeded"


def configured_quota(value: str | None = None) -> int:
    """The quota ``value`` (or the environment's ``EMULATOR_ACCOUNT_CONCURRENCY``) gives, 1,000 without one."""
    text = value if value is not None else os.environ.get(VARIABLE)
    if text is None or text == "":
        return DEFAULT_ACCOUNT_CONCURRENCY
    quota = int(text)
    if quota < 1:
        raise ValueError(f"the account's concurrency must be 1 or more, got {quota}")
    return quota


def reservation(fn: Any) -> int | None:
    """Moto's function ``fn``'s reserved concurrency, None when it has none."""
    value = getattr(fn, "reserved_concurrency", None)
    return None if value is None or value == "" else int(value)


def refusal(quota: int, reserved_by_others: Iterable[int], requested: int) -> str | None:
    """Why reserving ``requested`` for a function is refused (None: it is not), the others' reservations standing."""
    minimum = min(MINIMUM_UNRESERVED, quota)
    if requested > 0 and quota - sum(reserved_by_others) - requested < minimum:
        return ("Specified ReservedConcurrentExecutions for function decreases account's UnreservedConcurrentExecution "
                f"below its minimum value of [{minimum}].")
    return None


class Concurrency:
    """The invocations running now, per function, against the account's quota and the reservations."""

    def __init__(self, quota: int, functions: Callable[[], Iterable[Any]]) -> None:
        self.quota = quota
        self._functions = functions  # every function of the account (moto's models), for the reservations
        self._running: dict[str, int] = {}
        self._lock = threading.Lock()

    def unreserved(self) -> int:
        """UnreservedConcurrentExecutions: the quota less every function's reservation."""
        return self.quota - sum(r for r in map(reservation, self._functions()) if r is not None)

    def start(self, fn: Any) -> str | None:
        """Count an invocation of ``fn`` as running, or say why it is throttled (and count nothing)."""
        reserved = reservation(fn)
        with self._lock:
            if reserved is not None:
                if self._running.get(fn.function_arn, 0) >= reserved:
                    return RESERVED_THROTTLE
            else:
                reservations = {f.function_arn: r for f in self._functions() if (r := reservation(f)) is not None}
                unreserved_running = sum(count for arn, count in self._running.items() if arn not in reservations)
                if unreserved_running >= self.quota - sum(reservations.values()):
                    return ACCOUNT_THROTTLE
            self._running[fn.function_arn] = self._running.get(fn.function_arn, 0) + 1
        return None

    def running(self, function_name: str) -> int:
        """How many invocations of the function named ``function_name`` run now."""
        with self._lock:
            return sum(count for arn, count in self._running.items() if arn.rpartition(":")[2] == function_name)

    def finish(self, fn: Any) -> None:
        with self._lock:
            self._running[fn.function_arn] -= 1

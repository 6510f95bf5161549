"""Lambda's account concurrency as plain logic (emulator/awslambda/concurrency.py): which invocation is
throttled, with which Reason, and which reservation is refused.

Pages followed: https://docs.aws.amazon.com/lambda/latest/dg/lambda-concurrency.html (the account's
quota, the unreserved pool), https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html
(a reservation is the function's ceiling; at least 100 stay unreserved), Invoke's errors
(TooManyRequestsException, Reason ReservedFunctionConcurrentInvocationLimitExceeded or
ConcurrentInvocationLimitExceeded): https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from emulator.awslambda.concurrency import Concurrency, configured_quota, refusal


@dataclass
class Function:
    function_arn: str
    reserved_concurrency: int | None = None


def test_functions_without_a_reservation_share_what_the_reservations_leave():
    # Given: a quota of 12, one function reserving 10: 2 left for the others together
    reserved, a, b = Function("arn:f:reserved", 10), Function("arn:f:a"), Function("arn:f:b")
    concurrency = Concurrency(12, lambda: [reserved, a, b])
    # When
    started = [concurrency.start(a), concurrency.start(b), concurrency.start(a)]
    # Then: the third is throttled for the account, while the reserved function still has its own
    assert started == [None, None, "ConcurrentInvocationLimitExceeded"]
    assert concurrency.start(reserved) is None
    concurrency.finish(a)
    assert concurrency.start(b) is None


def test_a_reserved_function_is_throttled_at_its_reservation():
    fn = Function("arn:f:one", 1)
    concurrency = Concurrency(1000, lambda: [fn])
    assert [concurrency.start(fn), concurrency.start(fn)] == [None, "ReservedFunctionConcurrentInvocationLimitExceeded"]
    assert concurrency.running("one") == 1


@pytest.mark.parametrize(("quota", "others", "requested", "minimum"), [
    (1000, [], 901, 100), (1000, [850], 51, 100), (10, [], 1, 10)])
def test_a_reservation_leaving_less_than_the_minimum_is_refused_naming_it(quota, others, requested, minimum):
    assert refusal(quota, others, requested) == (
        "Specified ReservedConcurrentExecutions for function decreases account's UnreservedConcurrentExecution "
        f"below its minimum value of [{minimum}].")
    assert refusal(quota, others, requested - 1) is None or quota < 100


def test_the_quota_is_1000_unless_configured():
    assert (configured_quota(""), configured_quota("10")) == (1000, 10)
    with pytest.raises(ValueError):
        configured_quota("0")

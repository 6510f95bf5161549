"""AWS list prices (us-east-1) used to put a cost on an execution; the one place they are named."""

from __future__ import annotations

import math

# Step Functions Standard workflows: per state transition (retries count as transitions).
STANDARD_TRANSITION_USD = 0.025 / 1000
# Lambda (x86_64): per request, and per GB-second of billed duration (rounded up to 1 ms).
LAMBDA_REQUEST_USD = 0.20 / 1_000_000
LAMBDA_GB_SECOND_USD = 0.0000166667


def billed_gb_seconds(duration_seconds: float, memory_mb: int) -> float:
    billed_ms = max(1, math.ceil(duration_seconds * 1000))
    return billed_ms / 1000 * memory_mb / 1024


def execution_cost(transitions: int, lambda_requests: int, lambda_gb_seconds: float) -> float:
    return (
        transitions * STANDARD_TRANSITION_USD
        + lambda_requests * LAMBDA_REQUEST_USD
        + lambda_gb_seconds * LAMBDA_GB_SECOND_USD
    )

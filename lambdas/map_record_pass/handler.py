"""Record Pass Results: folds an inline pass's iteration results into the ledger the machine carries."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.map_retry import pass_metrics, record_inline_pass
from patterns_common.observability import logger, metrics, tracer


@metrics.log_metrics
@logger.inject_lambda_context
@tracer.capture_lambda_handler(capture_response=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    state = record_inline_pass(event)
    for name, count in pass_metrics(state).items():
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=count)
    logger.info(
        "Recorded pass",
        extra={"passes": state["result"]["passes"], "still_failing": state["remaining_count"], "retry": state["retry"]},
    )
    return state

"""Reads the CloudWatch embedded-metric-format (EMF) documents a handler printed.

EMF: https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html
"""

from __future__ import annotations

import json

NAMESPACE = "StepFunctionsPatterns"  # POWERTOOLS_METRICS_NAMESPACE of every function


def emf_metrics(captured: str) -> list[dict]:
    """One dict per metric directive in the app's namespace: its dimensions and metric values."""
    documents = [json.loads(line) for line in captured.splitlines() if line.startswith("{") and '"_aws"' in line]
    return [
        {
            **{name: doc[name] for dimension_set in directive["Dimensions"] for name in dimension_set},
            **{metric["Name"]: doc[metric["Name"]] for metric in directive["Metrics"]},
        }
        for doc in documents
        for directive in doc["_aws"]["CloudWatchMetrics"]
        if directive["Namespace"] == NAMESPACE
    ]

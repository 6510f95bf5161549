"""Settings of the app, read once from CDK context in app.py and passed down as props.

Their values live in cdk.json's context (or ``cdk -c key=value``) and nowhere else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

REQUIRED_CONTEXT = ("slackWebhookSecretName", "alertSchedule", "monitoredStatuses")
VALID_STATUSES = {"RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", "PENDING_REDRIVE"}


@dataclass(frozen=True)
class AppConfig:
    slack_webhook_secret_name: str
    alert_schedule: str
    monitored_statuses: tuple[str, ...]
    alert_email: str | None = None
    # The Slack app whose button clicks the alert action endpoint accepts; None: the links alone work.
    slack_signing_secret_name: str | None = None

    def __post_init__(self) -> None:
        unknown = set(self.monitored_statuses) - VALID_STATUSES
        if not self.monitored_statuses or unknown:
            raise ValueError(
                f"monitoredStatuses must be a non-empty list of {sorted(VALID_STATUSES)}; "
                f"got {list(self.monitored_statuses)}"
            )
        if not (self.alert_schedule.startswith("rate(") or self.alert_schedule.startswith("cron(")):
            raise ValueError(f"alertSchedule must be rate(...) or cron(...); got {self.alert_schedule!r}")

    @classmethod
    def from_context(cls, get: Callable[[str], Any]) -> "AppConfig":
        """Build from a context getter such as ``app.node.try_get_context``."""
        missing = [key for key in REQUIRED_CONTEXT if get(key) is None]
        if missing:
            raise ValueError(f"cdk.json's context must set {', '.join(missing)} (or pass -c key=value)")
        statuses = get("monitoredStatuses")
        if isinstance(statuses, str):  # `cdk -c monitoredStatuses='["FAILED"]'` arrives as text
            statuses = json.loads(statuses)
        values: dict[str, Any] = {
            "slack_webhook_secret_name": get("slackWebhookSecretName"),
            "alert_schedule": get("alertSchedule"),
            "alert_email": get("alertEmail") or None,
            "slack_signing_secret_name": get("slackSigningSecretName") or None,
            "monitored_statuses": tuple(statuses),
        }
        return cls(**values)

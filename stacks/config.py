"""Settings of the app, read once from CDK context in app.py and passed down as props.

Their values live in cdk.json's context (or ``cdk -c key=value``) and nowhere else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable

REQUIRED_CONTEXT = ("slackWebhookSecretName", "alertSchedule", "monitoredStatuses")
VALID_STATUSES = {"RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", "PENDING_REDRIVE"}
# A stage prefixes stack names ([A-Za-z][-A-Za-z0-9]*, CloudFormation) and through them the names
# derived from them: topic and dashboard names take letters, digits, hyphens and underscores, alarm
# and log group names more, so the stack name's characters are the ones all accept. Short, because
# CloudFormation cuts the stack name to fit the names it generates (64 characters for functions and
# roles, 63 for buckets), and a stage cut off there no longer tells two copies apart.
# A Slack workspace's ID as Slack shows it (the team_id of its requests): T and capitals or digits.
SLACK_TEAM_ID = re.compile(r"T[A-Z0-9]{2,}")
STAGE = re.compile(r"[A-Za-z](?:[-A-Za-z0-9]{0,18}[A-Za-z0-9])?")
# A DynamoDB table name (Amazon DynamoDB Developer Guide, "Supported data types and naming rules").
TABLE_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}")


@dataclass(frozen=True)
class AppConfig:
    slack_webhook_secret_name: str
    alert_schedule: str
    monitored_statuses: tuple[str, ...]
    alert_email: str | None = None
    # The Slack app whose button clicks the alert action endpoint accepts; None: the links alone work.
    slack_signing_secret_name: str | None = None
    # The Slack workspace whose /oncall requests the endpoint takes; None: /oncall is refused to every
    # workspace (a Slack app may be installed in several, and its signature is the same in each).
    slack_team_id: str | None = None
    # A copy of the app (`-c stage=staging`): prefixes every stack name, and so every export and name
    # derived from one. None: the stack names without a prefix.
    stage: str | None = None
    # Concurrency reserved for the public alert action endpoint. None (the default) reserves nothing,
    # so the app deploys on an account at the new-account concurrency quota (10): Lambda keeps 100
    # unreserved, so reserving N needs an account quota of at least N + 100.
    action_endpoint_reserved_concurrency: int | None = None
    # Tables a deleted copy of the stack left behind (they are retained), adopted by a new deployment
    # instead of creating empty ones: the stack grants on them and never creates nor deletes them.
    alert_table_name: str | None = None
    on_call_table_name: str | None = None
    people_table_name: str | None = None
    # Where people's texts and calls come from (an End User Messaging phone number or pool: its number,
    # id or ARN) and their e-mails (a verified SES identity). None: that channel is off, and a rule
    # naming it is told to the channel as not sent.
    sms_origination_identity: str | None = None
    alert_email_from: str | None = None

    def __post_init__(self) -> None:
        unknown = set(self.monitored_statuses) - VALID_STATUSES
        if not self.monitored_statuses or unknown:
            raise ValueError(
                f"monitoredStatuses must be a non-empty list of {sorted(VALID_STATUSES)}; "
                f"got {list(self.monitored_statuses)}"
            )
        if not (self.alert_schedule.startswith("rate(") or self.alert_schedule.startswith("cron(")):
            raise ValueError(f"alertSchedule must be rate(...) or cron(...); got {self.alert_schedule!r}")
        if self.stage is not None and not STAGE.fullmatch(self.stage):
            raise ValueError(
                "stage must be 1 to 20 letters, digits or hyphens, starting with a letter and not ending with "
                "a hyphen (it prefixes the stack names, and CloudFormation stack names allow only these); "
                f"got {self.stage!r}"
            )
        if self.slack_team_id is not None and not SLACK_TEAM_ID.fullmatch(self.slack_team_id):
            raise ValueError(
                "slackTeamId must be a Slack workspace ID, T followed by capital letters and digits (the "
                f"team_id Slack sends; Slack shows it in the workspace's URL app.slack.com/client/T...); got {self.slack_team_id!r}"
            )
        for key, name in (
            ("alertTableName", self.alert_table_name),
            ("onCallTableName", self.on_call_table_name),
            ("peopleTableName", self.people_table_name),
        ):
            if name is not None and not TABLE_NAME.fullmatch(name):
                raise ValueError(
                    f"{key} must be the name of a DynamoDB table (3 to 255 letters, digits, '_', '-' or '.'), "
                    f"or unset to create the table; got {name!r}"
                )
        reserved = self.action_endpoint_reserved_concurrency
        if reserved is not None and (isinstance(reserved, bool) or not isinstance(reserved, int) or reserved < 1):
            raise ValueError(
                "actionEndpointReservedConcurrency must be a whole number of at least 1 (or unset to reserve "
                f"nothing); got {reserved!r}"
            )

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
            "slack_team_id": _text(get("slackTeamId")),
            "monitored_statuses": tuple(statuses),
            "stage": _text(get("stage")),
            "action_endpoint_reserved_concurrency": _whole_number(get("actionEndpointReservedConcurrency")),
            "alert_table_name": _text(get("alertTableName")),
            "on_call_table_name": _text(get("onCallTableName")),
            "people_table_name": _text(get("peopleTableName")),
            "sms_origination_identity": _text(get("smsOriginationIdentity")),
            "alert_email_from": _text(get("alertEmailFrom")),
        }
        return cls(**values)


def _text(value: Any) -> str | None:
    """A text setting; unset or empty is None (`-c stage=` clears it)."""
    return None if value is None or value == "" else value if isinstance(value, str) else str(value)


def _whole_number(value: Any) -> Any:
    """`cdk -c key=10` passes text, cdk.json a number: text of digits becomes the number, anything
    else is left for the check to name."""
    if isinstance(value, str):
        return int(value) if value.strip().isdigit() else (None if value == "" else value)
    return value

"""Puts the app's four stacks into a CDK app; app.py and the tests both call this."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import App, Aspects, Environment, Tags, Validations
from cdk_nag import AwsSolutionsChecks

from stacks.alert_notification.stack import AlertNotificationStack
from stacks.common.scanners import ScannerAcknowledgements
from stacks.config import AppConfig
from stacks.job_poller.stack import JobPollerStack
from stacks.map_retry.stack import MapRetryStack
from stacks.monitoring.stack import MonitoringStack


@dataclass(frozen=True)
class AppStacks:
    alert_notification: AlertNotificationStack
    job_poller: JobPollerStack
    map_retry: MapRetryStack
    monitoring: MonitoringStack


def add_stacks(app: App, config: AppConfig, env: Environment | None = None) -> AppStacks:
    alert = AlertNotificationStack(app, "AlertNotificationStack", config=config, env=env)
    poller = JobPollerStack(app, "JobPollerStack", alert_table=alert.table, env=env)
    map_retry = MapRetryStack(app, "MapRetryStack", env=env)
    monitoring = MonitoringStack(
        app,
        "MonitoringStack",
        config=config,
        state_machines=[*alert.state_machines, *poller.state_machines, *map_retry.state_machines],
        failure_queues=alert.failure_queues,
        env=env,
    )
    Tags.of(app).add("project", "sfn-patterns")
    Aspects.of(app).add(ScannerAcknowledgements())
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return AppStacks(alert, poller, map_retry, monitoring)

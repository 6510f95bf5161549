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


TAGS = {"project": "sfn-patterns"}


def add_stacks(app: App, config: AppConfig, env: Environment | None = None) -> AppStacks:
    # Stack tags are explicit (@aws-cdk/core:explicitStackTags): CloudFormation applies them to every
    # resource at deploy time; Tags.of(app) also writes them into each taggable resource.
    common = {"env": env, "tags": TAGS}
    # A stage's copy differs in its stack names only: every export and every physical name the app
    # writes is derived from its stack's name, so the copies share none.
    prefix = f"{config.stage}-" if config.stage else ""
    alert = AlertNotificationStack(app, f"{prefix}AlertNotificationStack", config=config, **common)
    poller = JobPollerStack(app, f"{prefix}JobPollerStack", **common)
    map_retry = MapRetryStack(app, f"{prefix}MapRetryStack", **common)
    monitoring = MonitoringStack(
        app,
        f"{prefix}MonitoringStack",
        config=config,
        state_machines=[*alert.state_machines, *poller.state_machines, *map_retry.state_machines],
        failure_queues=alert.failure_queues,
        watched_metrics=alert.watched_metrics,
        **common,
    )
    for key, value in TAGS.items():
        Tags.of(app).add(key, value)
    Aspects.of(app).add(ScannerAcknowledgements())
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return AppStacks(alert, poller, map_retry, monitoring)

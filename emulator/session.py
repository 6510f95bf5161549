"""The app deployed into a LocalAws with its Slack stand-in: what the CLI and the test fixture share."""

from __future__ import annotations

import contextlib
import json
import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, TextIO

from emulator.deploy import deploy_app
from emulator.follow import ExecutionResult, run
from emulator.server import LocalAws
from emulator.slack import SlackStandIn

SLACK_SECRET_NAME = "alert-notifier/slack-webhook"

# Machines by the name users type (`python -m emulator run NAME`): (stack, output key).
MACHINES: dict[str, tuple[str, str]] = {
    "alert": ("AlertNotificationStack", "StateMachineArn"),
    "poller": ("JobPollerStack", "StateMachineArn"),
    "export-poller": ("JobPollerStack", "ExportPollerStateMachineArn"),
    "callback": ("JobPollerStack", "CallbackStateMachineArn"),
    "map-retry": ("MapRetryStack", "StateMachineArn"),
}


@dataclass
class Deployment:
    aws: LocalAws
    slack: SlackStandIn
    outputs: dict[str, dict[str, str]]

    def client(self, service: str) -> Any:
        return self.aws.client(service)

    def output(self, stack: str, key: str) -> str:
        try:
            return self.outputs[stack][key]
        except KeyError:
            raise KeyError(f"{stack} has no output {key}; outputs: {json.dumps(self.outputs)}") from None

    def machine_arn(self, machine: str) -> str:
        stack, key = MACHINES[machine]
        return self.output(stack, key)

    def has_machine(self, machine: str) -> bool:
        stack, key = MACHINES[machine]
        return key in self.outputs.get(stack, {})

    def run(self, machine: str, payload: Any, *, out: TextIO | None = None, **kwargs: Any) -> ExecutionResult:
        return run(self.aws, self.machine_arn(machine), payload, out=out, **kwargs)


@contextlib.contextmanager
def deployed(workdir: Path | None = None, *, auto_schedules: bool = False) -> Iterator[Deployment]:
    """Start the Slack stand-in and a LocalAws, store the webhook secret, deploy the app."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    # moto logs each resource type it skips and every failed state; the timeline shows what matters.
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", message="Tried to parse .* not supported by moto", category=UserWarning)
    with SlackStandIn() as slack, LocalAws(workdir, auto_schedules=auto_schedules) as aws:
        # The secret exists before the app, as on AWS (the stack references it by name).
        aws.client("secretsmanager").create_secret(Name=SLACK_SECRET_NAME, SecretString=slack.url)
        outputs = deploy_app(aws)
        yield Deployment(aws=aws, slack=slack, outputs=outputs)

"""The app deployed into a LocalAws with its Slack stand-in: what the CLI and the test fixture share."""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence, TextIO

from emulator import samples
from emulator.deploy import ROOT, deploy_app
from emulator.follow import ExecutionResult, run
from emulator.server import LocalAws
from emulator.slack import TEAM, SlackStandIn
from emulator.sms import PHONE_NUMBER, PHONE_NUMBER_ID
from emulator.stepfunctions.mocks import MockConfig

# The secret the alert stack reads the webhook URL from: cdk.json's context names it (one place).
SLACK_SECRET_NAME = json.loads((ROOT / "cdk.json").read_text())["context"]["slackWebhookSecretName"]

# Where the deployer keeps the Slack app's signing secret, and the context key that tells the app its name.
SLACK_SIGNING_SECRET_NAME = "step-functions-patterns/slack-signing-secret"
SLACK_SIGNING_SECRET_CONTEXT = "slackSigningSecretName"
# The context the app is deployed with here; `cdk watch` on it synthesizes with the same. /oncall is
# taken from the stand-in's workspace, as a deployer names theirs.
# Texts and calls go from the account's phone number and e-mails from an SES identity the deployment
# creates first, as a deployer names theirs (docs/reaching-people.md); the sandboxes stay on.
ALERT_EMAIL_FROM = "alerts@example.com"
APP_CONTEXT = {SLACK_SIGNING_SECRET_CONTEXT: SLACK_SIGNING_SECRET_NAME, "slackTeamId": TEAM["id"],
               "smsOriginationIdentity": PHONE_NUMBER, "alertEmailFrom": ALERT_EMAIL_FROM}
# The Slack app's manifest (docs/deploying.md, step 3), and where it holds the endpoint's URL.
SLACK_APP_MANIFEST = ROOT / "slack" / "app-manifest.json"
REQUEST_URL_PLACEHOLDER = "<AlertActionsUrl>"

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

    @property
    def documented_outputs(self) -> dict[str, dict[str, str]]:
        """The stack outputs the README documents, without CDK's cross-stack ``ExportsOutput...``."""
        return {stack: {key: value for key, value in outputs.items() if not key.startswith("ExportsOutput")}
                for stack, outputs in self.outputs.items()}

    def output(self, stack: str, key: str) -> str:
        try:
            return self.outputs[stack][key]
        except KeyError:
            raise KeyError(f"{stack} has no output {key}; outputs: {json.dumps(self.outputs)}") from None

    def stack_resource(self, stack: str, resource_type: str, logical_id_part: str) -> str:
        """The physical id of the one ``resource_type`` in ``stack`` whose logical id contains ``logical_id_part``."""
        resources = self.client("cloudformation").list_stack_resources(StackName=stack)["StackResourceSummaries"]
        [physical_id] = [
            r["PhysicalResourceId"]
            for r in resources
            if r["ResourceType"] == resource_type and logical_id_part in r["LogicalResourceId"]
        ]
        return physical_id

    def machine_arn(self, machine: str) -> str:
        stack, key = MACHINES[machine]
        return self.output(stack, key)

    def use_mock_config(self, config: MockConfig | None) -> None:
        """Mocked service integrations from ``config`` (None: none), whose state machines may also be
        named as `run` names the app's (alert, poller...): CloudFormation gives them random suffixes."""
        aliases = {arn.rpartition(":")[2]: name for arn, name in self.machine_names().items()}
        self.aws.use_mock_config(config.naming(aliases) if config is not None else None)

    def machine_names(self) -> dict[str, str]:
        """The name users type for each deployed machine, by ARN."""
        return {self.machine_arn(name): name for name in MACHINES}

    def seed(self, machine: str, payload: Any, alert_item: Path | None = None) -> list[str]:
        """Put what an execution of ``machine`` with ``payload`` reads: the alert item it names.

        ``alert_item`` is a file in DynamoDB's typed form; by default the sample item named after
        the input's ``alert_id``, if there is one. Returns a line per thing put, for people.
        """
        path = alert_item or (samples.alert_item_for(payload) if machine == "alert" else None)
        if path is None:
            return []
        item = samples.read_alert_item(path)
        table = self.output("AlertNotificationStack", "AlertTableName")
        self.client("dynamodb").put_item(TableName=table, Item=item)
        shown = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
        lines = [f"Put alert item {item['alert_id']['S']} ({shown}) into {table}"]
        # The sample schedules the item's escalation names, so its rounds have someone on call to page.
        on_call = self.output("AlertNotificationStack", "OnCallTableName")
        for schedule in samples.schedules_named_by(item):
            self.client("dynamodb").put_item(TableName=on_call, Item=samples.read_json(schedule))
            lines.append(f"Put on-call schedule {schedule.stem} ({schedule.relative_to(ROOT)}) into {on_call}")
        return lines

    def run(self, machine: str, payload: Any, *, out: TextIO | None = None, **kwargs: Any) -> ExecutionResult:
        return run(self.aws, self.machine_arn(machine), payload, out=out, **kwargs)


@contextlib.contextmanager
def deployed(
    workdir: Path | None = None, *, auto_schedules: bool = False, progress: TextIO | None = None,
    mock_config: MockConfig | None = None, also: Sequence[Path] = (), account_concurrency: int | None = None,
    enforce_iam: bool | None = None, assemblies: Path | None = None,
) -> Iterator[Deployment]:
    """Start the Slack stand-in and a LocalAws, store the Slack secrets, deploy the app (and after it the
    CDK apps in ``also``, such as examples/).

    As a deployer with a Slack app would: the webhook URL and the app's signing secret are in
    Secrets Manager and the alert e-mails' sender is an SES identity before the app is deployed, the app is told the signing secret's name, and the
    Slack app is then created from slack/app-manifest.json with its Request URLs filled in with the
    stack output ``AlertActionsUrl`` (if the app has that endpoint), and the account's phone number's
    two-way SMS channel is pointed at the stack output ``SmsRepliesTopicArn``. With ``progress``, says what it is doing and each stack as CloudFormation
    completes it; with ``mock_config``, executions can run its test cases (Deployment.use_mock_config);
    ``account_concurrency`` is the account's Lambda concurrency quota (LocalAws).
    ``enforce_iam`` False leaves IAM unchecked (None: as ``EMULATOR_IAM`` says, on by default);
    ``assemblies`` is a directory of cloud assemblies deployments share (``deploy_app``).
    """
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    # moto logs each resource type it skips and every failed state; the timeline shows what matters.
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    warnings.filterwarnings("ignore", message="Tried to parse .* not supported by moto", category=UserWarning)
    with SlackStandIn() as slack, LocalAws(workdir, auto_schedules=auto_schedules, account_concurrency=account_concurrency,
                                           enforce_iam=enforce_iam) as aws:
        slack.now = aws.clock.now  # the app's handlers take the simulated clock for the time
        # The secrets exist before the app, as on AWS (the stacks reference them by name).
        signing_secret = secrets.token_hex(16)
        secretsmanager = aws.client("secretsmanager")
        secretsmanager.create_secret(Name=SLACK_SECRET_NAME, SecretString=slack.url)
        secretsmanager.create_secret(Name=SLACK_SIGNING_SECRET_NAME, SecretString=signing_secret)
        aws.client("sesv2").create_email_identity(EmailIdentity=ALERT_EMAIL_FROM)
        if progress is None:
            outputs = deploy_app(aws, APP_CONTEXT, also=also, assemblies=assemblies)
        else:
            print("Deploying the app into the local emulator with the real cdk CLI...", file=progress, flush=True)
            with _reporting_stacks(aws, progress):
                outputs = deploy_app(aws, APP_CONTEXT, also=also, assemblies=assemblies)
            print(f"Deployed in {aws.deploy_seconds:.1f} s at {aws.endpoint_url}", file=progress, flush=True)
        request_url = outputs.get("AlertNotificationStack", {}).get("AlertActionsUrl")
        if request_url:
            slack.install(slack_app_manifest(request_url), signing_secret)
        replies_topic = outputs.get("AlertNotificationStack", {}).get("SmsRepliesTopicArn")
        if replies_topic:
            # As a deployer does once the stack is up (docs/reaching-people.md): the number's two-way channel
            # is the replies topic, so a text to the number reaches the replies function.
            aws.client("pinpoint-sms-voice-v2").update_phone_number(
                PhoneNumberId=PHONE_NUMBER_ID, TwoWayEnabled=True, TwoWayChannelArn=replies_topic)
        deployment = Deployment(aws=aws, slack=slack, outputs=outputs)
        deployment.use_mock_config(mock_config)
        yield deployment


def slack_app_manifest(request_url: str) -> dict:
    """slack/app-manifest.json with its Request URLs filled in, as docs/deploying.md's `sed` fills them."""
    return json.loads(SLACK_APP_MANIFEST.read_text().replace(REQUEST_URL_PLACEHOLDER, request_url))


@contextlib.contextmanager
def _reporting_stacks(aws: LocalAws, out: TextIO) -> Iterator[None]:
    """Print each stack once CloudFormation has finished it (cdk is silent here, its log is a file)."""
    done = threading.Event()
    started = time.monotonic()

    def report() -> None:
        cfn = aws.client("cloudformation")
        reported: set[str] = set()
        while True:
            last = done.wait(0.5)  # one more look once cdk has finished
            for stack in cfn.describe_stacks()["Stacks"]:
                name, status = stack["StackName"], stack["StackStatus"]
                if status in ("CREATE_COMPLETE", "UPDATE_COMPLETE") and name not in reported:
                    reported.add(name)
                    what = "bootstrapped (CDKToolkit)" if name == "CDKToolkit" else f"{name} deployed"
                    print(f"  {what} after {time.monotonic() - started:.1f} s", file=out, flush=True)
            if last:
                return

    reporter = threading.Thread(target=report, name="deploy-progress", daemon=True)
    reporter.start()
    try:
        yield
    finally:
        done.set()
        reporter.join()

"""Command line of the local emulator: `python -m emulator serve | run MACHINE | demo | clock ACTION`."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path

from emulator import demo, samples
from emulator.awslambda.concurrency import (
    DEFAULT_ACCOUNT_CONCURRENCY,
    NEW_ACCOUNT_CONCURRENCY,
    VARIABLE,
    configured_quota,
)
from emulator.clock import INSTANT
from emulator.clock.cli import add_clock_command, clock_command, clock_lines, clock_speed
from emulator.console import Console
from emulator.deploy import stop_watch, watch
from emulator.iam import SWITCH
from emulator.session import APP_CONTEXT, MACHINES, SLACK_SIGNING_SECRET_NAME, Deployment, deployed
from emulator.sms import PHONE_NUMBER, PHONE_NUMBER_ID
from emulator.stepfunctions.mocks import MOCK_CONFIG_VARIABLE, MockConfig, MockConfigError


def _serve(args: argparse.Namespace) -> int:
    try:
        mock_config = _mock_config()
    except MockConfigError as exc:
        print(f"error: {MOCK_CONFIG_VARIABLE}: {exc}", file=sys.stderr)
        return 2
    with deployed(auto_schedules=True, progress=sys.stdout, mock_config=mock_config,
                  account_concurrency=args.account_concurrency,
                  enforce_iam=False if args.no_iam else None) as deployment, Console(deployment) as console:
        deployment.aws.clock.set_speed(args.speed)
        if args.paused:
            deployment.aws.clock.pause()
        print(f"Local AWS listening at {deployment.aws.endpoint_url}")
        print("Use it from another shell with:")
        for key, value in deployment.aws.environment.items():
            print(f"  export {key}={value}")
        concurrency = deployment.aws.concurrency
        print(f"Lambda concurrency: the account's quota {concurrency.quota}, {concurrency.unreserved()} unreserved")
        print(f"Slack stand-in (webhook secret value): {deployment.slack.url}")
        if deployment.slack.interactive:
            print(f"Slack app interactivity: request URL {deployment.slack.request_url}, "
                  f"signing secret in Secrets Manager {SLACK_SIGNING_SECRET_NAME}")
        for command, url in deployment.slack.slash_commands.items():
            print(f"Slack app slash command {command}: URL {url} (send one from the console's Slack page)")
        print("IAM: enforced for handlers and executions (each acts as its role; the keys above are the account's "
              "administrator's)" if deployment.aws.iam is not None else "IAM: not enforced (--no-iam or EMULATOR_IAM=off)")
        print("Stack outputs:")
        print(json.dumps(deployment.documented_outputs, indent=2))
        for line in clock_lines(deployment.aws.clock_status()):
            print(line)
        if mock_config is not None:
            for line in mock_config_lines(mock_config, deployment):
                print(line)
        print(f"Console: {console.url}")
        print(f"Slack messages as a person sees them, buttons to click: {console.url}#/slack")
        print(f"Phone: the account's number {PHONE_NUMBER} ({PHONE_NUMBER_ID}), in the SMS and voice sandbox; "
              f"texts, calls and a reply box: {console.url}#/phone; mail SES sent: {console.url}#/email")
        print("Scheduled rules fire on the simulated clock. Ctrl-C stops.", flush=True)
        watcher = None
        if args.watch:
            print("Watching the app (cdk watch): a saved change to a handler or a definition is hot-swapped, "
                  "any other change deployed in full.", flush=True)
            watcher = watch(deployment.aws, APP_CONTEXT)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print("\nStopping.")
        finally:
            if watcher is not None:
                stop_watch(watcher)
    return 0


def _mock_config() -> MockConfig | None:
    """The mock configuration named by SFN_MOCK_CONFIG, read and checked before anything is deployed."""
    path = os.environ.get(MOCK_CONFIG_VARIABLE)
    return MockConfig.load(path) if path else None


def mock_config_lines(config: MockConfig, deployment: Deployment) -> list[str]:
    """What `serve` says about the mock configuration: the test cases, and names matching no machine."""
    lines = [f"Mocked service integrations ({MOCK_CONFIG_VARIABLE}={config.source}): start an execution on "
             "<state machine ARN>#<test case> to run one of"]
    lines += [f"  {case}" for case in config.test_cases()] or ["  (no test case)"]
    deployed_names = [arn.rpartition(":")[2] for arn in deployment.machine_names()]
    for machine in config.unknown_machines(deployed_names + sorted(MACHINES)):
        lines.append(f"  warning: no deployed state machine is named {machine!r} (the app's: {', '.join(sorted(MACHINES))})")
    return lines


def _run(args: argparse.Namespace) -> int:
    try:
        payload, source, alert_item = run_input(args.machine, args.input, args.alert_item)
    except samples.InputFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"Input ({source}): {json.dumps(payload)}", flush=True)
    with deployed(progress=sys.stdout) as deployment:
        return run_deployed(deployment, args.machine, payload, alert_item)


def run_input(machine: str, input_file: str | None, alert_item_file: str | None) -> tuple[object, str, Path | None]:
    """`run`'s input, where it came from and the alert item file; refuses a bad file before any deploy.

    The input is ``input_file``, else the --alert-item's ``alert_id``, else the machine's first sample.
    """
    alert_item = Path(alert_item_file) if alert_item_file else None
    if alert_item is not None and machine != "alert":
        raise samples.InputFileError("--alert-item is for `run alert`")
    item = samples.read_alert_item(alert_item) if alert_item is not None else None
    if input_file:
        return samples.read_json(Path(input_file)), input_file, alert_item
    if item is not None:
        return {"alert_id": item["alert_id"]["S"]}, str(alert_item), alert_item
    first = next(iter(samples.for_machine(machine)), None)
    if first is None:
        raise samples.InputFileError(f"no sample input for {machine} in samples/{machine}/: pass --input FILE")
    return first.input, first.relative_path, None


def run_deployed(deployment: Deployment, machine: str, payload: object, alert_item: Path | None = None) -> int:
    """`run` once the app is deployed: put what the machine reads, start, follow, summarize."""
    for line in deployment.seed(machine, payload, alert_item):
        print(line, flush=True)
    result = deployment.run(machine, payload, out=sys.stdout)
    print("summary:")
    for line in result.summary_lines():
        print(line)
    return 0 if result.status == "SUCCEEDED" else 1


def _concurrency(text: str) -> int:
    try:
        return configured_quota(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc) if "1 or more" in str(exc) else f"not a whole number: {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m emulator", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser(
        "serve", help="deploy the app, keep the endpoint up for the AWS CLI / boto3, serve the console",
        epilog=f"{MOCK_CONFIG_VARIABLE}=FILE: a Step Functions Local mock configuration; start an execution on "
               "<state machine ARN>#<test case> to run one of its test cases with mocked service integrations.")
    serve.add_argument("--speed", type=clock_speed, default=INSTANT,
                       help="simulated-clock speed: instant (default: jump to the next wake-up when idle) or a factor (1 = real time)")
    serve.add_argument("--paused", action="store_true", help="start with the simulated clock paused")
    serve.add_argument("--no-iam", action="store_true",
                       help=f"do not enforce IAM (handlers and executions may do anything; also {SWITCH}=off)")
    serve.add_argument("--account-concurrency", type=_concurrency, default=None, metavar="N",
                       help=f"the account's Lambda concurrency quota (default: ${VARIABLE}, else "
                            f"{DEFAULT_ACCOUNT_CONCURRENCY}); {NEW_ACCOUNT_CONCURRENCY} is a new account's, "
                            "where no function may reserve concurrency")
    serve.add_argument("--watch", action="store_true",
                       help="then run `cdk watch` against it: saved changes are hot-swapped, or deployed in full")
    run = commands.add_parser("run", help="deploy the app, start one execution and follow it")
    run.add_argument("machine", choices=sorted(MACHINES))
    run.add_argument("--input", help="JSON file with the execution input (default: the machine's first file in samples/MACHINE/, "
                                     "or the --alert-item's alert_id)")
    run.add_argument("--alert-item", help="alert item to put first, in DynamoDB's typed form (default: samples/alert-items/ALERT_ID.json)")
    commands.add_parser("demo", help="deploy the app and run every machine's sample scenarios")
    add_clock_command(commands)  # a module of its own, which `python -m emulator clock` runs alone (__main__.py)
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "run":
        return _run(args)
    if args.command == "clock":
        return clock_command(args)
    return demo.main()

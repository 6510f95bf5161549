"""Command line of the local emulator: `python -m emulator serve | run MACHINE | demo`."""

from __future__ import annotations

import argparse
import json
import sys
import threading
from pathlib import Path

from emulator import demo
from emulator.session import MACHINES, deployed


def _serve(args: argparse.Namespace) -> int:
    with deployed(auto_schedules=True) as deployment:
        print(f"Local AWS listening at {deployment.aws.endpoint_url}")
        print("Use it from another shell with:")
        for key, value in deployment.aws.environment.items():
            print(f"  export {key}={value}")
        print(f"Slack stand-in (webhook secret value): {deployment.slack.url}")
        print("Stack outputs:")
        print(json.dumps(deployment.outputs, indent=2))
        print("Scheduled rules fire on the simulated clock. Ctrl-C stops.", flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            print("\nStopping.")
    return 0


def _run(args: argparse.Namespace) -> int:
    payload = json.loads(Path(args.input).read_text()) if args.input else {}
    with deployed() as deployment:
        if not deployment.has_machine(args.machine):
            print(f"No {args.machine} machine is deployed", file=sys.stderr)
            return 2
        result = deployment.run(args.machine, payload, out=sys.stdout)
        print("summary:")
        for line in result.summary_lines():
            print(line)
        return 0 if result.status == "SUCCEEDED" else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m emulator", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve", help="deploy the app and keep the endpoint up for the AWS CLI / boto3")
    run = commands.add_parser("run", help="deploy the app, start one execution and follow it")
    run.add_argument("machine", choices=sorted(MACHINES))
    run.add_argument("--input", help="JSON file with the execution input")
    commands.add_parser("demo", help="deploy the app and run every machine's sample scenarios")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "run":
        return _run(args)
    return demo.main()


if __name__ == "__main__":
    sys.exit(main())

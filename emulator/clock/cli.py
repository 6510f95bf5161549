"""`python -m emulator clock ACTION`: shows or moves the simulated clock of a running `serve`.

Its own module, run without the rest of the command line (emulator/__main__.py): it only speaks HTTP
to the emulator's clock endpoint, and importing the emulator's AWS side (moto, the deployment) took
each call most of a second of CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from datetime import datetime, timezone

from emulator.clock import CLOCK_PATH, INSTANT, parse_speed
from emulator.follow import duration


def add_clock_command(commands: argparse._SubParsersAction) -> None:
    """The ``clock`` command and its actions, under ``commands`` (the command line's subcommands)."""
    clock = commands.add_parser("clock", help="show or control the simulated clock of the running `serve` (AWS_ENDPOINT_URL)")
    actions = clock.add_subparsers(dest="action", required=True)
    actions.add_parser("status", help="simulated time, speed, what waits on the clock")
    actions.add_parser("pause", help="stop simulated time: executions wait at their next Wait, back-off or timeout")
    actions.add_parser("resume", help="let simulated time run again at its speed")
    actions.add_parser("advance", help="move simulated time forward, firing each event it passes at its own time").add_argument(
        "value", metavar="SECONDS", type=_seconds)
    actions.add_parser("speed", help="instant, or a factor: 1 real time, 60 a minute per second").add_argument(
        "value", metavar="FACTOR", type=clock_speed)


def main(argv: list[str]) -> int:
    """`python -m emulator clock ...` (``argv`` from ``clock`` on), parsed as the whole command line parses it."""
    parser = argparse.ArgumentParser(prog="python -m emulator")
    add_clock_command(parser.add_subparsers(dest="command", required=True))
    return clock_command(parser.parse_args(argv))


def clock_command(args: argparse.Namespace) -> int:
    """`clock ACTION`: asks the running `serve` (AWS_ENDPOINT_URL) and prints the clock as it answers."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if not endpoint:
        print("error: AWS_ENDPOINT_URL is not set: export the lines `python -m emulator serve` prints", file=sys.stderr)
        return 2
    url = endpoint.rstrip("/") + CLOCK_PATH
    body = None
    if args.action != "status":
        url += f"/{args.action}"
        body = {"seconds": args.value} if args.action == "advance" else {"speed": args.value} if args.action == "speed" else {}
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    # An advance answers once every event it passes has fired and run: a long one takes a while.
    timeout = 600 if args.action == "advance" else 10
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status = json.load(response)
    except urllib.error.HTTPError as exc:
        print(f"error: {json.loads(exc.read() or b'{}').get('error', exc.reason)}", file=sys.stderr)
        return 2
    except (urllib.error.URLError, OSError) as exc:
        print(f"error: no emulator answers at {endpoint} ({getattr(exc, 'reason', exc)}): is `python -m emulator serve` running?",
              file=sys.stderr)
        return 2
    for line in clock_lines(status):
        print(line)
    return 0


def clock_lines(status: dict) -> list[str]:
    """The clock as `clock status` prints it: time and mode, then what waits on it."""
    now = status["now"]
    speed = status["speed"]
    mode = "instant (jumps to the next wake-up when idle)" if speed == INSTANT else f"{speed:g}x real time"
    lines = [f"Clock: {_when(now)}, " + (f"paused; on resume: {mode}" if status["paused"] else mode)]
    if status["next_wakeup"] is not None:
        lines.append(f"  next wake-up in {duration(status['next_wakeup'] - now)} ({status['waiting']} waiting)")
    for schedule in status["schedules"]:
        lines.append(f"  next firing of {schedule['rule']} in {duration(schedule['at'] - now)} ({_when(schedule['at'])})")
    for schedule in status.get("scheduler", []):
        lines.append(f"  schedule {schedule['group']}/{schedule['name']} {schedule['expression']} ({schedule['time_zone']}): "
                     f"next firing in {duration(schedule['next'] - now)} ({_when(schedule['next'])})")
    return lines


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"seconds must be 0 or more, got {text!r}")
    return value


def clock_speed(text: str) -> str | float:
    """A clock speed given on the command line (`clock speed`, `serve --speed`)."""
    try:
        return parse_speed(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None

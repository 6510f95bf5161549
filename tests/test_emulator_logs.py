"""A function's log lines in the emulator's CloudWatch Logs, read back as on AWS (boto3 and the real AWS CLI).

Each test uses a small function of its own in an emulator of its own (no deployment). Pages followed:
- The runtime's START / END / REPORT lines, Init Duration on a cold start and billed with the
  invocation, the stream per instance named ``YYYY/MM/DD/[$LATEST]<32 hex>``:
  https://docs.aws.amazon.com/lambda/latest/dg/python-logging.html
- The group: ``LoggingConfig.LogGroup``, else ``/aws/lambda/<function name>``:
  https://docs.aws.amazon.com/lambda/latest/api/API_LoggingConfig.html
- FilterLogEvents interleaves every stream in time order whatever ``interleaved`` says, and
  ``logStreamNamePrefix`` narrows the streams:
  https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_FilterLogEvents.html
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path

import pytest

from emulator.server import LocalAws
from tests.emulator_helpers import create_function, function_log, permissive_role, unique, wait_for

ROOT = Path(__file__).resolve().parents[1]
AWS_CLI = ROOT / ".venv-awscli" / "bin" / "aws"

# These tests start an emulator of their own, whose patches to moto are process-wide: they run with the
# tests on the deployment (conftest.py), not beside the handler tests on moto.
pytestmark = pytest.mark.emulator

# Prints a line at its import (the cold start's init), and per invocation a line, then after a simulated
# minute's sleep a JSON line as Powertools' Logger does.
SLEEPER_CODE = '''
import json, time

print("importing the sleeper")

def lambda_handler(event, context):
    print("before the nap", context.log_group_name, context.log_stream_name)
    time.sleep(60)
    print(json.dumps({"level": "INFO", "message": "after the nap", "function_request_id": context.aws_request_id}))
    return "rested"
'''
# Waits (in real time, whatever the simulated clock does) until its event's file exists, so two
# invocations are running at once and need two execution environments.
WAITER_CODE = '''
import os, threading

def lambda_handler(event, context):
    while not os.path.exists(event["release"]):
        threading.Event().wait(0.05)
    print("released", context.aws_request_id)
    return "done"
'''
STREAM = re.compile(r"^(\d{4}/\d{2}/\d{2})/\[\$LATEST\][0-9a-f]{32}$")
REPORT = re.compile(r"^REPORT RequestId: (?P<id>\S+)\tDuration: (?P<duration>\d+\.\d\d) ms\tBilled Duration: (?P<billed>\d+) ms"
                    r"\tMemory Size: (?P<size>\d+) MB\tMax Memory Used: (?P<used>\d+) MB(\tInit Duration: (?P<init>\d+\.\d\d) ms)?$")


@pytest.fixture(scope="module")
def aws():
    with LocalAws(enforce_iam=False) as running:
        yield running


@pytest.fixture(scope="module")
def role_arn(aws):
    return permissive_role(aws, "logs-test")


def invoke(aws, name: str, payload: dict | None = None) -> None:
    response = aws.client("lambda").invoke(FunctionName=name, Payload=json.dumps(payload or {}).encode())
    assert "FunctionError" not in response, response["Payload"].read()


def request_ids(aws, name: str) -> list[str]:
    """The request ids ``name``'s invocations ran with, in order (the handler's context.aws_request_id)."""
    return [record["request_id"] for record in aws.runtime.invocations if record["function"] == name]


def all_events(logs, group: str, **kwargs) -> list[dict]:
    events, token = [], None
    while True:
        page = logs.filter_log_events(logGroupName=group, **kwargs, **({"nextToken": token} if token else {}))
        events += page["events"]
        token = page.get("nextToken")
        if not token:
            return events


def billed_of(*printed: str) -> range:
    """The billed milliseconds a REPORT line's figures allow: their exact sum rounded up to the next
    millisecond, each figure printed to two decimals, so each may be up to 0.005 ms off (a run billed
    60014 for "60003.06" plus "9.94": the exact sum passed 60013)."""
    total, slack = sum(Decimal(figure) for figure in printed), Decimal("0.005") * len(printed)
    return range(math.ceil(total - slack), math.ceil(total + slack) + 1)


def test_a_functions_lines_go_to_its_group_in_one_stream_framed_by_the_runtimes_lines(aws, role_arn):
    # Given: a function of 256 MB that prints, sleeps a simulated minute and prints again
    name = create_function(aws, role_arn, "sleeper", "sleeper", SLEEPER_CODE, MemorySize=256, Timeout=120)["FunctionName"]
    group = f"/aws/lambda/{name}"
    # When: it is invoked twice, one after the other (the second on the warm instance)
    before = aws.clock.now()
    invoke(aws, name)
    invoke(aws, name)
    first, second = request_ids(aws, name)

    # Then: its group has one stream, named and dated as Lambda names an instance's
    logs = aws.client("logs")
    streams = logs.describe_log_streams(logGroupName=group)["logStreams"]
    assert len(streams) == 1
    stream = streams[0]["logStreamName"]
    assert STREAM.match(stream).group(1) == datetime.fromtimestamp(before, timezone.utc).strftime("%Y/%m/%d")
    # and each invocation's lines, in order: START, what the handler printed, END, REPORT
    events = all_events(logs, group)
    messages = [event["message"] for event in events]
    for rid in (first, second):
        start = messages.index(f"START RequestId: {rid} Version: $LATEST")
        assert messages[start + 1] == f"before the nap {group} {stream}"
        assert json.loads(messages[start + 2]) == {"level": "INFO", "message": "after the nap", "function_request_id": rid}
        assert messages[start + 3] == f"END RequestId: {rid}"
        report = REPORT.match(messages[start + 4])
        assert report and report["id"] == rid and report["size"] == "256"
        # The handler slept a simulated minute: the line after the nap is stamped a minute after the
        # one before it (the test ran in far less real time), and so is the duration.
        stamps = [event["timestamp"] for event in events[start:start + 5]]
        assert stamps[2] - stamps[1] >= 60_000
        assert stamps[1] >= stamps[0] and stamps[4] >= stamps[3] >= stamps[2]
        assert float(report["duration"]) >= 60_000
        assert int(report["used"]) > 0
    # What the init printed comes first, once: before the cold start's START line
    assert messages[0] == "importing the sleeper" and len(messages) == 11
    # Only the cold start reports (and is billed) its init: billed is duration plus init, rounded up.
    cold, warm = (REPORT.match(messages[i]) for i in (5, 10))
    assert cold["init"] is not None and warm["init"] is None
    assert int(cold["billed"]) in billed_of(cold["duration"], cold["init"])
    assert int(warm["billed"]) in billed_of(warm["duration"])
    assert events[0]["timestamp"] >= int(before * 1000)


def test_a_function_with_a_configured_group_logs_there_and_says_so(aws, role_arn):
    # Given: a function whose LoggingConfig names a group of the team's
    group = unique("team-logs")
    name = create_function(aws, role_arn, "sleeper", "sleeper", SLEEPER_CODE, Timeout=120,
                           LoggingConfig={"LogGroup": group})["FunctionName"]
    # When: it is invoked
    invoke(aws, name)
    [rid] = request_ids(aws, name)
    # Then: its configuration shows the group, its lines are there, and none went to the default group
    assert aws.client("lambda").get_function_configuration(FunctionName=name)["LoggingConfig"]["LogGroup"] == group
    logs = aws.client("logs")
    messages = [event["message"] for event in all_events(logs, group)]
    assert messages[1] == f"START RequestId: {rid} Version: $LATEST"
    assert messages[2].startswith(f"before the nap {group} ")
    assert not logs.describe_log_groups(logGroupNamePrefix=f"/aws/lambda/{name}")["logGroups"]


def test_two_instances_at_once_write_two_streams_read_back_interleaved(aws, role_arn, tmp_path):
    # Given: a function whose invocations wait until released
    name = create_function(aws, role_arn, "waiter", "waiter", WAITER_CODE)["FunctionName"]
    group = f"/aws/lambda/{name}"
    release = tmp_path / "release"
    # When: two invocations run at once, then are released
    with ThreadPoolExecutor(2) as pool:
        calls = [pool.submit(invoke, aws, name, {"release": str(release)}) for _ in range(2)]
        # Then: both run at once (so on two instances), and each one's START is readable while it still
        # runs, as `aws logs tail --follow` shows it
        wait_for(lambda: [m.startswith("START RequestId: ") for m in function_log(aws, name)] == [True, True],
                 "both STARTs while both invocations run")
        release.touch()
        for call in calls:
            call.result()
    ids = set(request_ids(aws, name))
    # Then: two streams, each holding one invocation whole, each a cold start
    logs = aws.client("logs")
    streams = [s["logStreamName"] for s in logs.describe_log_streams(logGroupName=group)["logStreams"]]
    assert len(streams) == 2
    seen = set()
    for stream in streams:
        messages = [e["message"] for e in all_events(logs, group, logStreamNames=[stream])]
        rid = messages[0].removeprefix("START RequestId: ").removesuffix(" Version: $LATEST")
        seen.add(rid)
        assert messages[1:3] == [f"released {rid}", f"END RequestId: {rid}"]
        assert REPORT.match(messages[3])["init"] is not None
    assert seen == ids
    # And FilterLogEvents, asked not to interleave, still gives the group's lines in time order
    events = all_events(logs, group, interleaved=False)
    assert len(events) == 8
    assert [e["timestamp"] for e in events] == sorted(e["timestamp"] for e in events)


def test_filter_log_events_interleaves_streams_and_honours_a_stream_prefix(aws):
    # Given: a group with two streams, whose events alternate in time
    logs = aws.client("logs")
    group = unique("interleave")
    logs.create_log_group(logGroupName=group)
    base = int(aws.clock.now() * 1000)
    for stream, offsets in (("a/1", (0, 2000)), ("b/1", (1000, 3000))):
        logs.create_log_stream(logGroupName=group, logStreamName=stream)
        logs.put_log_events(logGroupName=group, logStreamName=stream,
                            logEvents=[{"timestamp": base + o, "message": f"{stream} +{o}"} for o in offsets])
    # When / Then: the whole group comes back in time order, not stream by stream
    assert [e["message"] for e in all_events(logs, group)] == ["a/1 +0", "b/1 +1000", "a/1 +2000", "b/1 +3000"]
    # and a stream prefix keeps only the streams it starts
    assert [e["message"] for e in all_events(logs, group, logStreamNamePrefix="b/")] == ["b/1 +1000", "b/1 +3000"]
    assert all_events(logs, group, logStreamNamePrefix="c/") == []


def test_the_aws_cli_reads_a_functions_log_from_the_emulator(aws, role_arn):
    # Given: a function invoked once
    name = create_function(aws, role_arn, "sleeper", "sleeper", SLEEPER_CODE, Timeout=120)["FunctionName"]
    today = datetime.fromtimestamp(aws.clock.now(), timezone.utc).strftime("%Y/%m/%d/")
    invoke(aws, name)
    [rid] = request_ids(aws, name)
    group = f"/aws/lambda/{name}"
    # When: a person reads it with the AWS CLI pointed at the emulator. The pinned CLI is v1, which has
    # no `aws logs tail`; tail (v2) pages FilterLogEvents with interleaved=true and a startTime, as here.
    env = {**os.environ, **aws.environment, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    since = str(int((aws.clock.now() - 600) * 1000))
    done = subprocess.run([str(AWS_CLI), "logs", "filter-log-events", "--log-group-name", group, "--interleaved",
                           "--start-time", since, "--log-stream-name-prefix", today,
                           "--output", "json"], env=env, capture_output=True, text=True, timeout=120)
    # Then: it prints the invocation's lines, START to REPORT
    assert done.returncode == 0, done.stderr
    messages = [event["message"] for event in json.loads(done.stdout)["events"]]
    assert messages[:2] == ["importing the sleeper", f"START RequestId: {rid} Version: $LATEST"]
    assert messages[4] == f"END RequestId: {rid}"
    assert REPORT.match(messages[5])["id"] == rid

"""`make demo`: deploy the app locally and run each machine's sample scenarios, with timelines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any, Callable, TextIO

from emulator import samples
from emulator.deploy import ROOT
from emulator.follow import ExecutionResult, follow
from emulator.session import Deployment, deployed
from emulator.sms import verify_destination

Scenario = Callable[[Deployment, TextIO], None]


def _title(out: TextIO, text: str) -> None:
    print(f"\n{'=' * 100}\n{text}\n{'=' * 100}", file=out, flush=True)


def _run(deployment: Deployment, out: TextIO, machine: str, title: str, sample: str) -> ExecutionResult:
    found = samples.sample(machine, sample)
    payload = found.input
    print(f"\n--- {title}\n    input ({found.relative_path}): {json.dumps(payload)}", file=out, flush=True)
    for line in deployment.seed(machine, payload):
        print(f"    {line}", file=out, flush=True)
    result = deployment.run(machine, payload, out=out)
    print("  summary:", file=out)
    for line in result.summary_lines():
        print(line, file=out)
    return result


def alert_scenario(deployment: Deployment, out: TextIO) -> None:
    _title(out, "Alert notification: 3 users x 3 rounds, 5 minutes apart (seeds 000/001, repaired)")
    before = len(deployment.slack.posts)
    _run(deployment, out, "alert", "Notify every user each round until the count is reached", "disk-full-web-1")
    _print_posts(deployment, out, before)
    before = len(deployment.slack.posts)
    _run(deployment, out, "alert", "Page whoever the on-call schedule 'primary' has on call now, round by round",
         "paging-on-call")
    _print_posts(deployment, out, before)


def phone_scenario(deployment: Deployment, out: TextIO) -> None:
    _title(out, "Reaching a phone: Slack at once, a text at minute 1, a call at minute 3, a reply that acknowledges (issue 39)")
    clock, sms = deployment.aws.clock, deployment.aws.sms
    person_file = samples.SAMPLES / "people" / "U0ANA00001.json"
    person = samples.read_json(person_file)
    number = person["contact_methods"][0]["address"]
    # As a deployer in End User Messaging's sandbox: the number is a verified destination first.
    code = verify_destination(deployment.aws, number)
    print(f"\n    Verified {number} in the SMS sandbox with the code AWS texted it ({code})", file=out)
    people_table = deployment.output("AlertNotificationStack", "PeopleTableName")
    # As an administrator writes a person: the checked writer, run against the emulator's endpoint.
    command = ["-m", "tools.people", "put", str(person_file.relative_to(ROOT)), "--table", people_table]
    print(f"    python {' '.join(command)}", file=out)
    written = subprocess.run([sys.executable, *command], cwd=ROOT, env={**os.environ, **deployment.aws.environment},
                             capture_output=True, text=True, check=True)
    print(f"    {written.stdout.strip()}", file=out)
    found = samples.sample("alert", "reaching-a-phone")
    for line in deployment.seed("alert", found.input):
        print(f"    {line}", file=out)
    # The clock stands still while the demo plays the person: it moves only as far as the demo says.
    logged = len(sms.phone_log)
    deployment.aws.scheduler.fire_on_clock({"contact-*"})
    clock.pause()
    try:
        execution = deployment.client("stepfunctions").start_execution(
            stateMachineArn=deployment.machine_arn("alert"), input=json.dumps(found.input))["executionArn"]
        started = clock.now()
        _wait(lambda: any(p for p in deployment.slack.delivered if "reaching-a-phone" in str(p.body)), "the Slack post")
        print(f"\n  minute 0: Slack post for {person['name']}, and her rules armed", file=out)
        for minute, kind in ((1, "sms"), (3, "voice")):
            clock.advance(started + minute * 60 + 30 - clock.now())
            entry = _wait(lambda: next((e for e in sms.phone_log[logged:] if e["kind"] == kind), None), f"the {kind}")
            said = "texted" if kind == "sms" else "called"
            print(f"  minute {minute}: {said} {entry['to']} from {entry['from']}: {entry['body']!r}", file=out)
        reply = sms.phone_log[logged]["body"].rsplit("reply ", 1)[1].split("a ", 1)[0] + "a"
        clock.advance(started + 4 * 60 - clock.now())
        print(f"  minute 4: {person['name']} replies {reply!r} from {number}", file=out)
        sms.receive(number, reply)
        answer = _wait(lambda: next((e for e in sms.phone_log[logged:] if e["to"] == number and e["kind"] == "sms"
                                     and e is not sms.phone_log[logged]), None), "the answer to the reply")
        print(f"           texted back: {answer['body']!r}", file=out)
    finally:
        clock.resume()
        deployment.aws.scheduler.fire_on_clock(set())
    result = follow(deployment.aws, execution)
    item = deployment.client("dynamodb").get_item(
        TableName=deployment.output("AlertNotificationStack", "AlertTableName"),
        Key={"alert_id": {"S": "reaching-a-phone"}}, ConsistentRead=True)["Item"]
    print(f"  the alert item: status {item['status']['S']}, acknowledged_by {item['acknowledged_by']['S']}", file=out)
    print(f"  the execution: {result.status}, {result.entered('Notify User')} Slack post, "
          f"{result.transitions} transitions (the text and the call cost it none)", file=out)


def _wait(found: Callable[[], Any], what: str, seconds: float = 30) -> Any:
    deadline = time.monotonic() + seconds
    while not (value := found()):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the demo waited {seconds:.0f} s for {what}")
        time.sleep(0.05)
    return value


def _print_posts(deployment: Deployment, out: TextIO, before: int) -> None:
    print("  Slack webhook POSTs received by the stand-in:", file=out)
    for post in deployment.slack.posts[before:]:
        print(f"    #{post.seq} {post.status}  {post.body.get('text') if isinstance(post.body, dict) else post.body}", file=out)


def poller_scenario(deployment: Deployment, out: TextIO) -> None:
    # The demo runner is a Lambda (15-minute ceiling, minus time to report): an 880-second job.
    _title(out, "Job poller: an 880-second job, S3-backed polling vs. callback (seed 004)")
    tuned = _run(deployment, out, "poller", "Initial wait of 14 minutes (the job's expected minimum), then poll every 60 s",
                 "initial-wait-then-poll-every-minute")
    untuned = deployment.run("poller", samples.sample("poller", "poll-every-minute").input)
    callback = _run(deployment, out, "callback", "Callback variant: the runner reports back with the task token", "880-second-job")
    print("\n  the same job, per execution:", file=out)
    for label, result in (("poll every 60 s, no initial wait", untuned), ("initial wait + poll every 60 s", tuned),
                          ("callback (no polling)", callback)):
        print(f"    {label:36s} {result.status:9s} {result.transitions:4d} transitions  "
              f"${result.cost_usd * 1e6:,.2f} per million executions", file=out)
    _run(deployment, out, "export-poller", "SDK-integration variant: export a table to S3, poll describeExport", "defaults")


def map_retry_scenario(deployment: Deployment, out: TextIO) -> None:
    _title(out, "Map retry-failed: one item fails once, only that item is retried (seed 002, pattern 2)")
    result = _run(deployment, out, "map-retry", "Three items, B-456 fails its first attempt", "one-item-fails-once")
    if isinstance(result.output, dict):
        print(f"  attempts per item: {json.dumps(result.output.get('attempts'))}", file=out)


def monitoring_scenario(deployment: Deployment, out: TextIO) -> None:
    _title(out, "Monitoring: a failed execution announces itself on the status topic (seed 003)")
    topic = deployment.output("MonitoringStack", "StatusTopicArn")
    sqs = deployment.client("sqs")
    queue_url = sqs.create_queue(QueueName="demo-status-inbox")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    deployment.client("sns").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn,
                                       Attributes={"RawMessageDelivery": "true"})
    _run(deployment, out, "poller", "A job that fails", "job-that-fails")
    deadline = time.monotonic() + 10
    messages: list[dict] = []
    while not messages and time.monotonic() < deadline:
        messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", [])
        time.sleep(0.1)
    print("  notification delivered to the status topic:", file=out)
    for message in messages:
        body = message["Body"]
        try:
            body = json.dumps(json.loads(body), indent=4)
        except ValueError:
            pass
        print("    " + body.replace("\n", "\n    "), file=out)
    if not messages:
        print("    (none arrived)", file=out)


SCENARIOS: list[Scenario] = [alert_scenario, phone_scenario, poller_scenario, map_retry_scenario, monitoring_scenario]


def main(out: TextIO = sys.stdout) -> int:
    started = time.monotonic()
    with deployed(progress=out) as deployment:
        for stack, outputs in deployment.documented_outputs.items():
            for key, value in outputs.items():
                print(f"  {stack}.{key} = {value}", file=out)
        for scenario in SCENARIOS:
            scenario(deployment, out)
    print(f"\nDemo finished in {time.monotonic() - started:.1f} s of wall time.", file=out)
    return 0

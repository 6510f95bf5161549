"""docs/deploying.md, run: its `<!-- run: … -->` blocks, in order, against the app in the local emulator.

The emulator is what `python -m emulator serve` runs (the app deployed with the real cdk CLI, the
Slack stand-in as an app with interactivity on) and its endpoint is given to the blocks as serve
prints it (AWS_ENDPOINT_URL and credentials). The blocks run with the real AWS CLI and the project's
commands; between them the test does what the page says a person does in Slack (press Acknowledge).
Only the values a person copies from Slack's pages are given, as the page's shell variables.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from emulator.follow import follow
from patterns_common.alert_executions import alert_key, alert_key_of
from tests.conftest import ROOT
from tests.emulator_helpers import wait_for

# For tests/parallel.py's shards: the page's dozen AWS CLI processes and the alarm's round trip run
# about as long as 15 ordinary deployment tests.
SHARD_WEIGHT = 15
PAGE = ROOT / "docs" / "deploying.md"
# The pinned AWS CLI `make setup` installs (requirements-awscli.txt), after .venv on PATH: the page runs
# `aws` from it and `python` from .venv.
AWS_CLI_BIN = ROOT / ".venv-awscli" / "bin"
STACK = "AlertNotificationStack"
BLOCK = re.compile(r"<!-- (run|slack): ([\w -]+) -->\n```(?:bash|text)\n(.*?)```", re.DOTALL)
# The steps the page takes a team through, in order; the Slack steps are done by the test.
RUN_ORDER = ["outputs", "secrets", "first-alert", "raise", "check", "resolve"]
WEBHOOK_SECRET, SIGNING_SECRET = "alert-notifier/slack-webhook", "step-functions-patterns/slack-signing-secret"
ALERT, ALARM, MEMBER = "orders-db-cpu", "orders-db-cpu-high", "U0123ABCD"


def page_blocks() -> tuple[dict[str, str], dict[str, str]]:
    blocks = {"run": {}, "slack": {}}
    for kind, name, body in BLOCK.findall(PAGE.read_text()):
        blocks[kind][name] = body
    return blocks["run"], blocks["slack"]


class Shell:
    """Runs the page's blocks one after another, each seeing the variables the earlier ones set."""

    def __init__(self, env: dict[str, str], state: Path) -> None:
        self.env, self.state = env, state

    def run(self, block: str) -> str:
        script = f"set -euo pipefail\nset -a\n{block}\nenv -0 > {self.state}\n"
        done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, f"{block}\nexited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        self.env = dict(line.split("=", 1) for line in self.state.read_text().split("\0") if "=" in line)
        return done.stdout


def test_the_page_runs_the_runnable_steps_in_order():
    runnable, slack = page_blocks()
    assert list(runnable) == RUN_ORDER
    assert list(slack) == ["round 1"]


def test_the_deploy_page_ends_with_a_first_alert_acknowledged_from_slack(deployment, tmp_path):
    runnable, slack_shown = page_blocks()
    secrets = deployment.client("secretsmanager")
    cloudwatch = deployment.client("cloudwatch")
    dynamodb = deployment.client("dynamodb")
    table = deployment.output(STACK, "AlertTableName")
    # What Slack's pages give the person (step 3): the stand-in's webhook URL and the app's signing
    # secret. The emulator stored both before deploying; the page stores them after, so they go first.
    copied = {name: secrets.get_secret_value(SecretId=name)["SecretString"] for name in (WEBHOOK_SECRET, SIGNING_SECRET)}
    for name in copied:
        secrets.delete_secret(SecretId=name, ForceDeleteWithoutRecovery=True)
    env = {**os.environ, **deployment.aws.environment,
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), str(AWS_CLI_BIN), os.environ["PATH"]]),
           "SLACK_WEBHOOK_URL": copied[WEBHOOK_SECRET], "SLACK_SIGNING_SECRET": copied[SIGNING_SECRET]}
    shell = Shell(env, tmp_path / "page.env")
    # Step 2: deployed without alertEmail (as the emulator deploys), the real cdk CLI printed the
    # warning the page quotes
    [quoted] = re.findall(r"print a warning \(`(.*?)`\)", PAGE.read_text(), re.DOTALL)
    assert " ".join(quoted.split()) in " ".join((deployment.aws.workdir / "cdk.log").read_text().split())
    try:
        # The test holds the simulated clock: it flows, but never jumps the 300 s between rounds.
        with deployment.aws.clock.busy():
            # Step 2: the outputs, and the Slack app's manifest with its Request URL filled in
            manifest = json.loads(shell.run(runnable["outputs"]))
            assert manifest["settings"]["interactivity"] == {
                "is_enabled": True, "request_url": deployment.output(STACK, "AlertActionsUrl")}
            # and /oncall, whose URL is the same Request URL (https://api.slack.com/reference/manifests)
            assert [(c["command"], c["url"]) for c in manifest["features"]["slash_commands"]] == [
                ("/oncall", deployment.output(STACK, "AlertActionsUrl"))]
            assert "commands" in manifest["oauth_config"]["scopes"]["bot"]
            assert shell.env["ALERT_TABLE"] == table
            assert deployment.slack.request_url == manifest["settings"]["interactivity"]["request_url"]
            # Step 4: the secrets, under the names the app reads
            assert shell.run(runnable["secrets"]).split() == [WEBHOOK_SECRET, SIGNING_SECRET]
            assert {name: secrets.get_secret_value(SecretId=name)["SecretString"] for name in copied} == copied
            # Step 5: the first alert, checked and written
            assert shell.run(runnable["first-alert"]).startswith(f"Put into {table}: alert {ALERT}: status resolved")
            # Step 6: the alarm raises it; step 7: one post per person within seconds, as the page shows them
            shell.run(runnable["raise"])
            wait_for(lambda: len(posts_about(deployment.slack)) == 2, "the first round's two posts", timeout=60)
            posts = posts_about(deployment.slack)
            assert sorted(post.body["text"] for post in posts) == sorted(slack_shown["round 1"].splitlines())
            # The member presses Acknowledge in Slack: Slack opens the link and sends the signed click
            [mine] = [post for post in posts if post.body["text"].startswith(f"<@{MEMBER}>")]
            clicked = deployment.slack.click(mine.seq, block=1, element=0, user=MEMBER)
            assert clicked["interaction"]["status"] == 200
            assert shell.run(runnable["check"]) == f"acknowledged\t{MEMBER}\n"
            wait_for(lambda: followups(deployment.slack) == 1, "the follow-up post saying who acknowledged", timeout=30)
            # The alarm returns to OK: resolved by it
            shell.run(runnable["resolve"])
            wait_for(lambda: item_status(dynamodb, table) == "resolved", "the OK to resolve the alert", timeout=60)
        # The escalation ends at its next status read, and no second round was posted
        [execution] = [e for e in deployment.client("stepfunctions").list_executions(
            stateMachineArn=deployment.machine_arn("alert"))["executions"] if alert_key_of(e["name"]) == alert_key(ALERT)]
        result = follow(deployment.aws, execution["executionArn"])
        assert result.status == "SUCCEEDED" and result.output["rounds_completed"] == 1
        assert len(posts_about(deployment.slack)) == 2
    finally:
        for name, value in copied.items():
            if not secrets.list_secrets(Filters=[{"Key": "name", "Values": [name]}])["SecretList"]:
                secrets.create_secret(Name=name, SecretString=value)
        cloudwatch.delete_alarms(AlarmNames=[ALARM])
        # The item is kept, resolved: its execution ends at its next status read (deleted, it would fail)
        if item_status(dynamodb, table) not in (None, "resolved"):
            dynamodb.update_item(TableName=table, Key={"alert_id": {"S": ALERT}}, UpdateExpression="SET #s = :r",
                                 ExpressionAttributeNames={"#s": "status"}, ExpressionAttributeValues={":r": {"S": "resolved"}})


def posts_about(slack) -> list:
    return [post for post in slack.posts if isinstance(post.body, dict) and "blocks" in post.body
            and f" alert {ALERT} is active" in post.body.get("text", "")]


def followups(slack) -> int:
    return sum(1 for post in slack.posts if isinstance(post.body, dict)
               and post.body.get("text", "").startswith(f"Alert {ALERT} was acknowledged by <@{MEMBER}> at "))


def item_status(dynamodb, table: str) -> str | None:
    item = dynamodb.get_item(TableName=table, Key={"alert_id": {"S": ALERT}}, ConsistentRead=True).get("Item", {})
    return item.get("status", {}).get("S")

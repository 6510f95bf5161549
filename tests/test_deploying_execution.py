"""docs/deploying.md, run: its `<!-- run: … -->` blocks, in order and as written, against a fresh emulator
as `python -m emulator serve` leaves it; and the on-call page's commands (docs/on-call-schedules.md) the same way.

The emulator is the session's deployment, made by the function `serve` runs (`emulator.session.deployed`:
the app deployed with the real cdk CLI, the Slack secrets stored, the Slack stand-in as the app with
interactivity on). The blocks get what the page tells a person to give the shell: the `export` lines
`serve` prints (AWS_ENDPOINT_URL and credentials), in a shell with no AWS CLI of its own and nothing of
the project's on PATH; everything else (the AWS CLI, python, the Slack values, the clock's speed) comes
from the page's own blocks. Nothing is prepared for them. Between the blocks the test does what the
page says a person does in Slack (press Acknowledge).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from emulator.clock import INSTANT
from emulator.follow import follow
from patterns_common.alert_executions import alert_key, alert_key_of
from tests.conftest import ROOT
from tests.emulator_helpers import wait_for

PAGE = ROOT / "docs" / "deploying.md"
ON_CALL_PAGE = ROOT / "docs" / "on-call-schedules.md"
STACK = "AlertNotificationStack"
BLOCK = re.compile(r"<!-- (run|slack): ([\w -]+) -->\n```(?:bash|text)\n(.*?)```", re.DOTALL)
# The steps the page takes a team through, in order; the Slack steps are done by the test.
RUN_ORDER = ["set-up", "outputs", "rehearsal-slack-values", "secrets", "first-alert", "rehearsal-clock", "raise",
             "check", "resolve", "phone-limits", "rehearsal-phone-number", "two-way"]
WEBHOOK_SECRET, SIGNING_SECRET = "alert-notifier/slack-webhook", "step-functions-patterns/slack-signing-secret"
ALERT, ALARM, MEMBER = "orders-db-cpu", "orders-db-cpu-high", "U0123ABCD"
# Real seconds between a message appearing and a person's click on it: at real time 5 simulated seconds,
# at the instant clock enough for all three rounds, 300 s apart, to pass
A_PERSONS_PAUSE = 5


def page_blocks(page: Path | None = None) -> tuple[dict[str, str], dict[str, str]]:
    blocks = {"run": {}, "slack": {}}
    for kind, name, body in BLOCK.findall((page or PAGE).read_text()):
        blocks[kind][name] = body
    return blocks["run"], blocks["slack"]


def person_shell(deployment, state: Path) -> Shell:
    """A person's shell once they pasted serve's `export` lines: on a machine with no AWS CLI of its own
    (PATH keeps no directory holding an `aws`), and neither of the project's environments on PATH yet."""
    path = [entry for entry in os.environ["PATH"].split(os.pathsep)
            if entry and not (Path(entry) / "aws").exists() and not Path(entry).resolve().is_relative_to(ROOT.resolve())
            and not Path(entry).resolve().is_relative_to(Path(sys.prefix).resolve())]
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "PYTHONPATH")}
    return Shell({**env, **deployment.aws.environment, "PATH": os.pathsep.join(path)}, state)


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
    assert list(page_blocks(ON_CALL_PAGE)[0]) == ["schedule"]


def test_the_deploy_page_ends_with_a_first_alert_acknowledged_from_slack(deployment, tmp_path):
    runnable, slack_shown = page_blocks()
    secrets = deployment.client("secretsmanager")
    cloudwatch = deployment.client("cloudwatch")
    dynamodb = deployment.client("dynamodb")
    table = deployment.output(STACK, "AlertTableName")
    # Given: the emulator as serve leaves it: both Slack secrets stored (the page's step 4 meets them),
    # the webhook's value the URL serve prints, the clock instant
    stored = {name: secrets.get_secret_value(SecretId=name)["SecretString"] for name in (WEBHOOK_SECRET, SIGNING_SECRET)}
    assert stored[WEBHOOK_SECRET] == deployment.slack.url
    assert deployment.aws.clock.speed == INSTANT
    shell = person_shell(deployment, tmp_path / "page.env")
    # The session's earlier tests may have posted about the sample alert too: only the page's posts count
    since = len(deployment.slack.posts)
    # Step 2: deployed without alertEmail (as the emulator deploys), the real cdk CLI printed the
    # warning the page quotes
    [quoted] = re.findall(r"print a warning \(`(.*?)`\)", PAGE.read_text(), re.DOTALL)
    assert " ".join(quoted.split()) in " ".join((deployment.aws.workdir / "cdk.log").read_text().split())
    try:
        # Step 1: the shell's set-up alone puts the pinned AWS CLI and the project's python on PATH
        assert json.loads(shell.run(runnable["set-up"]))["Account"] == deployment.aws.environment["CDK_DEFAULT_ACCOUNT"]
        assert shell.run("command -v aws").strip() == str(ROOT / ".venv-awscli" / "bin" / "aws")
        assert Path(shell.run("command -v python").strip()).resolve() == (ROOT / ".venv" / "bin" / "python").resolve()
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
        # Step 3 in the rehearsal: the stand-in's values, as serve stored them
        shell.run(runnable["rehearsal-slack-values"])
        assert (shell.env["SLACK_WEBHOOK_URL"], shell.env["SLACK_SIGNING_SECRET"]) == (stored[WEBHOOK_SECRET], stored[SIGNING_SECRET])
        # Step 4: the secrets serve already stored are stored again, under the names the app reads
        # (CreateSecret of an existing name is ResourceExistsException; PutSecretValue gives a secret created
        # without a value its first version, AWSCURRENT: Secrets Manager API Reference)
        assert shell.run(runnable["secrets"]).split() == [WEBHOOK_SECRET, SIGNING_SECRET]
        assert {name: secrets.get_secret_value(SecretId=name)["SecretString"] for name in stored} == stored
        # Step 5: the first alert, checked and written
        assert shell.run(runnable["first-alert"]).startswith(f"Put into {table}: alert {ALERT}: status resolved")
        # Step 6: the clock at real time (at instant, the 300 s between rounds would pass before the
        # click below: the test no longer holds the clock), then the alarm raises the alert
        assert shell.run(runnable["rehearsal-clock"]).splitlines()[0].endswith(", 1x real time")
        assert deployment.aws.clock.speed == 1.0
        shell.run(runnable["raise"])
        # Step 7: one post per person within seconds, as the page shows them
        wait_for(lambda: len(posts_about(deployment.slack, since)) == 2, "the first round's two posts", timeout=60)
        posts = posts_about(deployment.slack, since)
        assert sorted(post.body["text"] for post in posts) == sorted(slack_shown["round 1"].splitlines())
        # The member reads them and presses Acknowledge a few seconds later, in real time: how much
        # simulated time that is depends on the clock's speed, and no second round may come meanwhile
        time.sleep(A_PERSONS_PAUSE)
        assert len(posts_about(deployment.slack, since)) == 2
        # Slack opens the link and sends the signed click
        [mine] = [post for post in posts if post.body["text"].startswith(f"<@{MEMBER}>")]
        clicked = deployment.slack.click(mine.seq, block=1, element=0, user=MEMBER)
        assert clicked["interaction"]["status"] == 200
        assert shell.run(runnable["check"]) == f"acknowledged\t{MEMBER}\n"
        wait_for(lambda: followups(deployment.slack, since) == 1, "the follow-up post saying who acknowledged", timeout=30)
        # The alarm returns to OK: resolved by it
        shell.run(runnable["resolve"])
        wait_for(lambda: item_status(dynamodb, table) == "resolved", "the OK to resolve the alert", timeout=60)
        # The page is done; the rest of the session runs at the instant clock it found, which also lets
        # the escalation's 300 s wait pass now
        deployment.aws.clock.set_speed(INSTANT)
        # The escalation ends at its next status read, and no second round was posted
        [execution] = [e for e in deployment.client("stepfunctions").list_executions(
            stateMachineArn=deployment.machine_arn("alert"))["executions"] if alert_key_of(e["name"]) == alert_key(ALERT)]
        result = follow(deployment.aws, execution["executionArn"])
        assert result.status == "SUCCEEDED" and result.output["rounds_completed"] == 1
        assert len(posts_about(deployment.slack, since)) == 2
    finally:
        deployment.aws.clock.set_speed(INSTANT)
        cloudwatch.delete_alarms(AlarmNames=[ALARM])
        # The item is kept, resolved: its execution ends at its next status read (deleted, it would fail)
        if item_status(dynamodb, table) not in (None, "resolved"):
            dynamodb.update_item(TableName=table, Key={"alert_id": {"S": ALERT}}, UpdateExpression="SET #s = :r",
                                 ExpressionAttributeNames={"#s": "status"}, ExpressionAttributeValues={":r": {"S": "resolved"}})


def test_the_secrets_step_creates_the_secrets_an_account_does_not_have_yet(deployment, tmp_path):
    # Given: a real account before step 4: neither secret exists, and the person has the values Slack's
    # pages showed (step 3; here the stand-in's, so the deployment goes on working)
    runnable, _ = page_blocks()
    secrets = deployment.client("secretsmanager")
    copied = {name: secrets.get_secret_value(SecretId=name)["SecretString"] for name in (WEBHOOK_SECRET, SIGNING_SECRET)}
    shell = person_shell(deployment, tmp_path / "page.env")
    shell.run(runnable["set-up"])
    shell.env.update(SLACK_WEBHOOK_URL=copied[WEBHOOK_SECRET], SLACK_SIGNING_SECRET=copied[SIGNING_SECRET])
    try:
        for name in copied:
            secrets.delete_secret(SecretId=name, ForceDeleteWithoutRecovery=True)
        # When: step 4, twice (a person who runs it again finds both)
        for _ in range(2):
            # Then: each is created, or found, and holds its value
            assert shell.run(runnable["secrets"]).split() == [WEBHOOK_SECRET, SIGNING_SECRET]
            assert {name: secrets.get_secret_value(SecretId=name)["SecretString"] for name in copied} == copied
    finally:
        for name, value in copied.items():
            if not secrets.list_secrets(Filters=[{"Key": "name", "Values": [name]}])["SecretList"]:
                secrets.create_secret(Name=name, SecretString=value)


def test_the_on_call_pages_commands_put_and_show_the_sample_schedule(deployment, tmp_path):
    # Given: a shell set up as the deploy page's step 1 says, on the emulator as serve leaves it
    [schedule_block] = page_blocks(ON_CALL_PAGE)[0].values()
    shell = person_shell(deployment, tmp_path / "page.env")
    shell.run(page_blocks()[0]["set-up"])
    on_call = deployment.output(STACK, "OnCallTableName")
    # When: the on-call page's block, as written
    put_line, *shown = shell.run(schedule_block).splitlines()
    # Then: the sample (2 layers, 1 override, Europe/Berlin) is checked and written as it is in the file
    assert shell.env["TABLE"] == on_call
    assert put_line == (f"Put into {on_call}: schedule primary (Europe/Berlin), 2 layer(s), 1 override(s); "
                        f"`python -m tools.oncall show primary --table {on_call}` shows its next two weeks")
    sample = json.loads((ROOT / "samples" / "oncall-schedules" / "primary.json").read_text())
    stored = deployment.client("dynamodb").get_item(TableName=on_call, Key={"schedule_id": {"S": "primary"}},
                                                    ConsistentRead=True)["Item"]
    assert stored == sample
    # and its next two weeks are printed from now (the machine's), a shift a line in Berlin time, nobody
    # missing: U0CCCCCC3 on weekdays 09:00-17:00 over the weekly rotation of U0AAAAAA1 and U0BBBBBB2 (and
    # U0DDDDDD4's override, when now is near Christmas). Fourteen days hold ten weekdays, of which at
    # least eight are whole U0CCCCCC3 days (now may fall inside one, the override takes Friday 2026-12-25)
    assert shown[0] == "primary (Europe/Berlin), the next 14 days:"
    line = re.compile(r"  (\w{3} [\d-]+ (\d\d:\d\d) CES?T) to (\w{3} [\d-]+ (\d\d:\d\d) CES?T)  (U0\w+)( {2}\(override\))?")
    shifts = [line.fullmatch(text).group(2, 4, 5) for text in shown[1:]]
    assert {member for _, _, member in shifts} - {"U0DDDDDD4"} == {"U0AAAAAA1", "U0BBBBBB2", "U0CCCCCC3"}
    assert sum(1 for shift in shifts if shift == ("09:00", "17:00", "U0CCCCCC3")) >= 8


def test_the_phone_steps_show_a_new_accounts_sandbox_and_point_the_numbers_replies_at_the_stack(deployment, tmp_path):
    # Given: a shell set up as the page's step 1 says, on the emulator as serve leaves it: End User
    # Messaging as a new account has it, owning the one number the page names for the rehearsal
    runnable, _ = page_blocks()
    shell = person_shell(deployment, tmp_path / "page.env")
    shell.run(runnable["set-up"])
    sms = deployment.client("pinpoint-sms-voice-v2")
    [before] = sms.describe_phone_numbers()["PhoneNumbers"]
    topic = deployment.output(STACK, "SmsRepliesTopicArn")
    try:
        # When / Then: the account is in the sandbox with its $1.00 monthly SMS spend limit, the figures the
        # page quotes ("SMS/MMS and Voice sandbox in AWS End User Messaging SMS"; DescribeSpendLimits'
        # EnforcedLimit and MaxLimit are whole dollars, Long, API Reference "SpendLimit")
        assert shell.run(runnable["phone-limits"]).split() == ["SANDBOXED", "1", "1"]
        # the rehearsal takes the id of the account's number, +12065550100
        shell.run(runnable["rehearsal-phone-number"])
        assert shell.env["PHONE_NUMBER_ID"] == before["PhoneNumberId"] and before["PhoneNumber"] == "+12065550100"
        # and its two-way channel becomes the stack's replies topic (UpdatePhoneNumber answers with the
        # number's TwoWayEnabled and TwoWayChannelArn, API Reference "UpdatePhoneNumber")
        assert shell.run(runnable["two-way"]).split() == ["+12065550100", "True", topic]
        [after] = sms.describe_phone_numbers()["PhoneNumbers"]
        assert (after["TwoWayEnabled"], after["TwoWayChannelArn"]) == (True, topic)
    finally:
        # The session's number as it was (its channel, if one was set, is kept by End User Messaging anyway)
        sms.update_phone_number(PhoneNumberId=before["PhoneNumberId"], TwoWayEnabled=before["TwoWayEnabled"],
                                **({"TwoWayChannelArn": before["TwoWayChannelArn"]} if before.get("TwoWayChannelArn") else {}))


def posts_about(slack, since: int) -> list:
    return [post for post in slack.posts[since:] if isinstance(post.body, dict) and "blocks" in post.body
            and f" alert {ALERT} is active" in post.body.get("text", "")]


def followups(slack, since: int) -> int:
    return sum(1 for post in slack.posts[since:] if isinstance(post.body, dict)
               and post.body.get("text", "").startswith(f"Alert {ALERT} was acknowledged by <@{MEMBER}> at "))


def item_status(dynamodb, table: str) -> str | None:
    item = dynamodb.get_item(TableName=table, Key={"alert_id": {"S": ALERT}}, ConsistentRead=True).get("Item", {})
    return item.get("status", {}).get("S")

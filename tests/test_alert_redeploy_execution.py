"""Deleting the alert stack and deploying it again on the tables it kept, with the real cdk CLI.

Issue 38: "Deleting and redeploying the stack starts from new, empty tables (the old ones are retained
under generated names), and every `schedule:` target is then unreadable." A copy of the alert stack
(the app's AlertNotificationStack class and context, under a stack name of its own so the session's
stack is not touched) is deployed, given a schedule and an alert, deleted, and deployed again with
`-c alertTableName=... -c onCallTableName=...` (docs/deploying.md, "Deleting the stack, and deploying
it again"). Who is paged is worked out by hand from the schedule written here.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from boto3.dynamodb.types import TypeSerializer

from emulator.deploy import run_cdk
from emulator.follow import run
from emulator.session import APP_CONTEXT
from tests.conftest import ROOT
from tests.emulator_helpers import unique, wait_for
from tests.test_alert_notification_execution import _users, notifications

# Shorter than AlertNotificationStack: moto generates a resource's name from the stack's without
# shortening it as CloudFormation does, and a state machine's name must fit in 80 characters.
STACK = "KeptTablesProbe"
# The app's alert stack under that name, configured from the context as app.py configures it.
APP = f'''
import os
import sys

sys.path.insert(0, {str(ROOT)!r})
from aws_cdk import App, Environment
from stacks.alert_notification.stack import AlertNotificationStack
from stacks.config import AppConfig

app = App()
account, region = os.environ.get("CDK_DEFAULT_ACCOUNT"), os.environ.get("CDK_DEFAULT_REGION")
AlertNotificationStack(app, {STACK!r}, config=AppConfig.from_context(app.node.try_get_context),
                       env=Environment(account=account, region=region) if account else None)
app.synth()
'''


@pytest.fixture(scope="module")
def copy(deployment, tmp_path_factory):
    """Deploys the copy with extra context; everything it leaves is removed afterwards."""
    app_dir: Path = tmp_path_factory.mktemp("kept-tables-app")
    (app_dir / "app.py").write_text(APP)
    (app_dir / "cdk.json").write_text((ROOT / "cdk.json").read_text())
    cfn, dynamodb = deployment.client("cloudformation"), deployment.client("dynamodb")
    kept: list[str] = []

    def deploy(**context: str) -> dict[str, str]:
        run_cdk(deployment.aws, ["deploy", STACK], app_dir=app_dir, outdir=app_dir / "cdk.out",
                context={**APP_CONTEXT, **context})
        [stack] = cfn.describe_stacks(StackName=STACK)["Stacks"]
        outputs = {output["OutputKey"]: output["OutputValue"] for output in stack["Outputs"]}
        kept.extend(outputs[key] for key in ("AlertTableName", "OnCallTableName", "PeopleTableName"))
        return outputs

    def standing() -> bool:
        return any(s["StackName"] == STACK and s["StackStatus"] != "DELETE_COMPLETE" for s in cfn.list_stacks()["StackSummaries"])

    def delete() -> None:
        cfn.delete_stack(StackName=STACK)
        wait_for(lambda: not standing(), f"{STACK} deleted", timeout=300)

    try:
        yield deploy, delete
    finally:
        if standing():
            delete()
        for name in set(kept):
            dynamodb.delete_table(TableName=name)


def put(deployment, table: str, **item) -> None:
    serialize = TypeSerializer().serialize
    deployment.client("dynamodb").put_item(TableName=table, Item={key: serialize(value) for key, value in item.items()})


def test_a_new_deployment_adopting_the_kept_tables_pages_the_schedule_and_takes_over_the_old_claim(deployment, copy):
    deploy, delete = copy
    slack = deployment.slack
    slack.reset()
    dynamodb = deployment.client("dynamodb")
    # Given: the first deployment, a schedule written by hand (member on call, a cover for the coverer
    # over the present hour) and an alert paging it, claimed by an execution of this deployment's machine
    first = deploy()
    (member, coverer) = _users("member", "coverer")
    now = datetime.fromtimestamp(deployment.aws.clock.now(), timezone.utc)
    schedule_id = unique("kept")
    put(deployment, first["OnCallTableName"], schedule_id=schedule_id, time_zone="UTC",
        layers=[{"members": [member], "start": f"{now - timedelta(days=7):%Y-%m-%dT%H:%M}", "shift": "P1W"}],
        overrides=[{"member": coverer, "start": f"{now - timedelta(hours=1):%Y-%m-%dT%H:%M}",
                    "end": f"{now + timedelta(hours=2):%Y-%m-%dT%H:%M}"}])
    alert_id = unique("kept-alert")
    old_execution = first["StateMachineArn"].replace(":stateMachine:", ":execution:") + ":escalating-when-deleted"
    put(deployment, first["AlertTableName"], alert_id=alert_id, notification_count=1,
        escalation=[[f"schedule:{schedule_id}"]], message="Replication lag above 60 s",
        escalation_execution_arn=old_execution,
        # the claim's 48 hours, far from over on the simulated clock the handlers read
        escalation_claim_expires_at=int(deployment.aws.clock.now()) + 2 * 86400)

    scheduler = deployment.client("scheduler")

    def groups() -> list[str]:
        return [g["Name"] for g in scheduler.list_schedule_groups()["ScheduleGroups"] if g["Name"].startswith(STACK)]

    # the handoff notices' group, with the hourly re-arm in it (beside it, the contact rules' group, empty)
    [group] = [r["PhysicalResourceId"] for r in deployment.client("cloudformation").list_stack_resources(
        StackName=STACK)["StackResourceSummaries"] if "HandoffSchedules" in r["LogicalResourceId"]]
    assert group in groups()
    assert [s["Name"] for s in scheduler.list_schedules(GroupName=group)["Schedules"]]

    # When: the stack is deleted
    delete()
    # Then: the three tables are still there (DeletionPolicy Retain), with their items
    for table in (first["AlertTableName"], first["OnCallTableName"], first["PeopleTableName"]):
        assert dynamodb.describe_table(TableName=table)["Table"]["TableStatus"] == "ACTIVE"
    assert dynamodb.get_item(TableName=first["OnCallTableName"], Key={"schedule_id": {"S": schedule_id}}).get("Item")
    # And: no Scheduler schedule is left: the handoff group went with the stack, its re-arm with it
    # (docs/deploying.md; EventBridge Scheduler API Reference, DeleteScheduleGroup)
    assert groups() == []
    assert [s["Name"] for s in scheduler.list_schedules()["Schedules"] if s["GroupName"] == group] == []

    # When: deployed again, adopting them
    second = deploy(alertTableName=first["AlertTableName"], onCallTableName=first["OnCallTableName"],
                    peopleTableName=first["PeopleTableName"])
    # Then: the new stack names the kept tables and has no table of its own but the notifier's records
    kept = ("AlertTableName", "OnCallTableName", "PeopleTableName")
    assert [second[key] for key in kept] == [first[key] for key in kept]
    resources = deployment.client("cloudformation").list_stack_resources(StackName=STACK)["StackResourceSummaries"]
    tables = [r["LogicalResourceId"] for r in resources if r["ResourceType"] == "AWS::DynamoDB::Table"]
    assert len(tables) == 1 and "IdempotencyTable" in tables[0]
    assert second["StateMachineArn"] != first["StateMachineArn"]

    # When: the kept alert is escalated by the new machine
    result = run(deployment.aws, second["StateMachineArn"], {"alert_id": alert_id})
    # Then: the old execution's claim did not hold it, and the schedule was read: its cover is paged
    assert result.status == "SUCCEEDED", result.cause
    assert [(n.round, n.user) for n in notifications(slack, alert_id)] == [(1, coverer)]

"""A redeploy that changes a declared schedule keeps the covers added at runtime, with the real cdk CLI.

The example team app (examples/, deployed with the session's app) declares `team-weekly`. Here it is
deployed again, through CloudFormation, with that declaration changed, as a team edits
examples/team_stack.py and runs `cdk deploy`; then as it was. Expected items are worked out by hand
from issue 38: the declared fields are replaced, a cover added at runtime stays, and one the new
declaration overlaps is dropped (the declaration wins, docs/on-call-schedules.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from emulator.deploy import run_cdk
from examples.team_stack import TEAM_ON_CALL
from tests.conftest import ROOT

STACK = "TeamPatternsStack"
# The team's app as examples/app.py builds it, with the declaration read from declared.json beside it
# (the one line a team would edit in examples/team_stack.py).
APP = f'''
import json
import os
import sys
from pathlib import Path

sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / "examples")!r}]
import team_stack
from aws_cdk import App, Environment

team_stack.TEAM_ON_CALL = json.loads((Path(__file__).parent / "declared.json").read_text())
app = App()
account, region = os.environ.get("CDK_DEFAULT_ACCOUNT"), os.environ.get("CDK_DEFAULT_REGION")
team_stack.TeamPatternsStack(app, "TeamPatternsStack", env=Environment(account=account, region=region) if account else None)
app.synth()
'''
A, B = TEAM_ON_CALL["layers"][0]["members"]


@pytest.fixture
def team_app(deployment, tmp_path: Path):
    """A copy of the team's app whose declaration the test sets; the example as declared again afterwards."""
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "cdk.json").write_text((ROOT / "examples" / "cdk.json").read_text())
    table = deployment.output(STACK, "OnCallTableName")
    client = deployment.client("dynamodb")
    deployed = [TEAM_ON_CALL]

    def deploy(declared: dict) -> None:
        (tmp_path / "declared.json").write_text(json.dumps(declared))
        deployed.append(declared)
        run_cdk(deployment.aws, ["deploy", STACK], app_dir=tmp_path, outdir=tmp_path / "cdk.out")

    def read() -> dict:
        item = client.get_item(TableName=table, Key={"schedule_id": {"S": "team-weekly"}}, ConsistentRead=True)["Item"]
        return {key: TypeDeserializer().deserialize(value) for key, value in item.items()}

    def cover(*overrides: dict) -> None:
        # As docs/on-call-schedules.md adds one by hand (`/oncall cover` appends the same way)
        serialize = TypeSerializer().serialize
        client.update_item(
            TableName=table, Key={"schedule_id": {"S": "team-weekly"}},
            UpdateExpression="SET overrides = list_append(if_not_exists(overrides, :none), :new)",
            ExpressionAttributeValues={":none": {"L": []}, ":new": serialize(list(overrides))},
        )

    try:
        yield deploy, read, cover
    finally:
        if deployed[-1] != TEAM_ON_CALL:
            deploy(TEAM_ON_CALL)
        # The example's item as the session deployed it, for the tests that read it
        client.put_item(TableName=table, Item={key: TypeSerializer().serialize(value) for key, value in TEAM_ON_CALL.items()})


def test_a_redeploy_that_changes_the_declared_schedule_keeps_the_runtime_cover_and_the_declaration_wins_an_overlap(
    team_app,
):
    deploy, read, cover = team_app
    # Given: two covers added at runtime: B over Tue 2030-01-08 (Lisbon), A over Sat 2030-01-12 09:00 to 21:00
    b_tuesday = {"member": B, "start": "2030-01-08T00:00", "end": "2030-01-09T00:00"}
    a_saturday = {"member": A, "start": "2030-01-12T09:00", "end": "2030-01-12T21:00"}
    cover(b_tuesday, a_saturday)
    # When: the team changes the rotation to two-week shifts and declares B for the weekend of 2030-01-12
    b_weekend = {"member": B, "start": "2030-01-11T18:00", "end": "2030-01-14T09:00"}
    changed = {**TEAM_ON_CALL, "layers": [{**TEAM_ON_CALL["layers"][0], "shift": "P2W"}], "overrides": [b_weekend]}
    deploy(changed)
    # Then: the new declaration, its override first; B's Tuesday cover kept; A's Saturday cover dropped,
    # as it overlaps the declared weekend (Sat 09:00 to 21:00 lies within Fri 18:00 to Mon 09:00)
    assert read() == {**changed, "overrides": [b_weekend, b_tuesday]}

    # When: the declaration goes back to weekly shifts without the weekend override
    deploy(TEAM_ON_CALL)
    # Then: the weekend override it removed is gone, the runtime cover still stays
    assert read() == {**TEAM_ON_CALL, "overrides": [b_tuesday]}

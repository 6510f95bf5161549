"""AlertNotificationStack template: the tables people keep, created and retained by default, or adopted by name.

Issue 38: deleting and redeploying the stack started from new, empty tables while the old ones stayed
under generated names. Context keys ``alertTableName`` and ``onCallTableName`` make a new deployment
adopt the kept tables: the template then has no table resource for them (the stack never creates nor
deletes them), and every grant and environment variable that named the created table names the kept
one. ``Table.from_table_name`` forms the ARN from the stack's partition, region and account (CDK API
reference, aws_dynamodb.Table.fromTableName); no KMS grant is needed either way, the tables being
encrypted with the AWS managed key (TableAttributes.encryptionKey: "if this table uses a
customer-managed encryption key").
"""

from __future__ import annotations

from typing import Any

import pytest
from aws_cdk.assertions import Template

from tests.app_config import CONTEXT, app_config
from tests.test_alert_notification_infrastructure import synthesize

ACCOUNT_REGION = {"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "123456789012"}
KEPT = {
    "AlertTable": "AlertNotificationStack-AlertTable1A2B3C4D-XYZ",
    "OnCallTable": "AlertNotificationStack-OnCallTable5E6F-XYZ",
    "PeopleTable": "AlertNotificationStack-PeopleTable7A8B-XYZ",
}


def kept_arn(name: str) -> str:
    return f"arn:aws:dynamodb:us-east-1:123456789012:table/{name}"


@pytest.fixture(scope="module")
def created() -> Template:
    return synthesize(app_config())


@pytest.fixture(scope="module")
def adopted() -> Template:
    return synthesize(
        app_config(
            alert_table_name=KEPT["AlertTable"],
            on_call_table_name=KEPT["OnCallTable"],
            people_table_name=KEPT["PeopleTable"],
        )
    )


def render(value: Any, tables: dict[str, str] | None = None) -> Any:
    """A template value as text: pseudo parameters filled in, joins joined; with ``tables``, a created
    table's Ref and Arn read as the kept table's name and ARN would."""
    tables = tables or {}
    if isinstance(value, list):
        return [render(v, tables) for v in value]
    if not isinstance(value, dict):
        return value
    if "Ref" in value:
        name = value["Ref"]
        return ACCOUNT_REGION.get(name) or tables.get(name) or f"<{name}>"
    if "Fn::GetAtt" in value:
        resource, attribute = value["Fn::GetAtt"]
        if resource in tables and attribute == "Arn":
            return kept_arn(tables[resource])
        return f"<{resource}.{attribute}>"
    if "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return separator.join(str(render(part, tables)) for part in parts)
    return {key: render(v, tables) for key, v in value.items()}


def grants(template: Template, tables: dict[str, str] | None = None) -> dict[str, list]:
    """Every IAM policy's statements, rendered, by the policy's logical id."""
    return {
        policy_id: render(policy["Properties"]["PolicyDocument"]["Statement"], tables)
        for policy_id, policy in template.find_resources("AWS::IAM::Policy").items()
    }


def environments(template: Template, tables: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        function_id: render(function["Properties"].get("Environment", {}).get("Variables", {}), tables)
        for function_id, function in template.find_resources("AWS::Lambda::Function").items()
    }


def test_by_default_the_three_tables_are_created_retained_encrypted_and_recoverable(created):
    tables = created.find_resources("AWS::DynamoDB::Table")
    for logical_id, key in (("AlertTable", "alert_id"), ("OnCallTable", "schedule_id"), ("PeopleTable", "member")):
        table = tables[logical_id]
        # Retain: deleting the stack (or replacing the table) leaves the table and its items in the account
        assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == ("Retain", "Retain")
        assert table["Properties"]["KeySchema"] == [{"AttributeName": key, "KeyType": "HASH"}]
        assert table["Properties"]["SSESpecification"] == {"SSEEnabled": True}
        assert table["Properties"]["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    created.has_output("AlertTableName", {"Value": {"Ref": "AlertTable"}})
    created.has_output("OnCallTableName", {"Value": {"Ref": "OnCallTable"}})
    created.has_output("PeopleTableName", {"Value": {"Ref": "PeopleTable"}})


def test_adopted_tables_are_not_in_the_template(adopted):
    # Then: the only table left is the notifier's short-lived idempotency table (its records expire)
    [(logical_id, table)] = adopted.find_resources("AWS::DynamoDB::Table").items()
    assert "IdempotencyTable" in logical_id
    assert table["Properties"]["KeySchema"] == [{"AttributeName": "id", "KeyType": "HASH"}]
    adopted.has_output("AlertTableName", {"Value": KEPT["AlertTable"]})
    adopted.has_output("OnCallTableName", {"Value": KEPT["OnCallTable"]})
    adopted.has_output("PeopleTableName", {"Value": KEPT["PeopleTable"]})


def test_adopted_tables_get_the_grants_the_created_ones_had(created, adopted):
    # Given: the created template with each created table read as the kept one
    expected = grants(created, KEPT)
    # Then: the adopted template's policies are those, statement for statement
    assert grants(adopted) == expected
    # And: they do name the kept tables (the alarm handler's index query included)
    rendered = str(expected)
    assert kept_arn(KEPT["AlertTable"]) in rendered and kept_arn(KEPT["OnCallTable"]) in rendered
    assert f"{kept_arn(KEPT['AlertTable'])}/index/AlarmName" in rendered
    assert "<AlertTable" not in str(grants(adopted)) and "<OnCallTable" not in str(grants(adopted))


def test_adopted_tables_are_named_in_every_environment_variable_the_created_ones_were(created, adopted):
    assert environments(adopted) == environments(created, KEPT)
    names = [value for variables in environments(adopted).values() for value in variables.values()]
    # FetchAlertConfig, DispatchAlerts, the alarm handler, the action endpoint; and the on-call functions
    assert names.count(KEPT["AlertTable"]) >= 4 and names.count(KEPT["OnCallTable"]) >= 3


def test_the_declared_schedules_resource_names_the_table_it_writes(created, adopted):
    [resource] = adopted.find_resources("Custom::DeclaredOnCallSchedules").values()
    assert resource["Properties"]["TableName"] == KEPT["OnCallTable"]
    [resource] = created.find_resources("Custom::DeclaredOnCallSchedules").values()
    assert resource["Properties"]["TableName"] == {"Ref": "OnCallTable"}


@pytest.mark.parametrize(
    ("key", "field", "own"),
    [("alertTableName", "alert_table_name", "AlertTable"), ("onCallTableName", "on_call_table_name", "OnCallTable"),
     ("peopleTableName", "people_table_name", "PeopleTable")],
)
def test_each_key_adopts_its_own_table_only(key, field, own):
    # Given: `cdk deploy -c <key>=...` alone
    from stacks.config import AppConfig

    config = AppConfig.from_context({**CONTEXT, key: "kept-table"}.get)
    assert getattr(config, field) == "kept-table"
    template = synthesize(config)
    # Then: the other tables are still created, under their logical ids, and its own is not
    created = set(template.find_resources("AWS::DynamoDB::Table"))
    assert {"AlertTable", "OnCallTable", "PeopleTable"} - created == {own}


@pytest.mark.parametrize("name", ["ab", "kept table", "a" * 256, "tables/alerts"])
def test_a_key_that_cannot_name_a_table_is_refused_at_synth(name):
    # DynamoDB table names: 3 to 255 of a-z, A-Z, 0-9, '_', '-', '.' (DynamoDB Developer Guide,
    # "Supported data types and naming rules in Amazon DynamoDB")
    from stacks.config import AppConfig

    with pytest.raises(ValueError, match=r"^onCallTableName must be the name of a DynamoDB table"):
        AppConfig.from_context({**CONTEXT, "onCallTableName": name}.get)


def test_an_empty_key_creates_the_table():
    from stacks.config import AppConfig

    config = AppConfig.from_context({**CONTEXT, "alertTableName": "", "onCallTableName": ""}.get)
    assert (config.alert_table_name, config.on_call_table_name) == (None, None)

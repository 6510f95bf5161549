"""CloudFormation resource types moto skips but the app's stacks need, modelled on moto's APIs.

A skipped resource cannot be the target of Ref/Fn::GetAtt (a topic policy naming an alarm's ARN
failed the whole stack), and what it configures is silently lost (a function's asynchronous
retries and on-failure destination). Importing this module registers the models with moto's
CloudFormation.
"""

from __future__ import annotations

import json
from typing import Any

from moto.core.common_models import CloudFormationModel


class CloudWatchAlarm(CloudFormationModel):
    """AWS::CloudWatch::Alarm, created through moto's CloudWatch PutMetricAlarm."""

    def __init__(self, alarm: Any) -> None:
        self.alarm = alarm

    @staticmethod
    def cloudformation_name_type() -> str:
        return "AlarmName"

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::CloudWatch::Alarm"

    @property
    def physical_resource_id(self) -> str:
        return self.alarm.name

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr == "Arn"

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        if attribute_name == "Arn":
            return self.alarm.alarm_arn
        from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

        raise UnformattedGetAttTemplateException()

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> "CloudWatchAlarm":
        from moto.cloudwatch.models import cloudwatch_backends

        p = cloudformation_json["Properties"]
        alarm = cloudwatch_backends[account_id][region_name].put_metric_alarm(
            name=p.get("AlarmName", resource_name),
            namespace=p.get("Namespace"),
            metric_name=p.get("MetricName"),
            comparison_operator=p["ComparisonOperator"],
            evaluation_periods=int(p["EvaluationPeriods"]),
            period=int(p["Period"]) if p.get("Period") else None,
            threshold=float(p["Threshold"]) if "Threshold" in p else None,
            statistic=p.get("Statistic"),
            description=p.get("AlarmDescription"),
            dimensions=[{"Name": d["Name"], "Value": d["Value"]} for d in p.get("Dimensions", [])],
            alarm_actions=p.get("AlarmActions", []),
            ok_actions=p.get("OKActions", []),
            insufficient_data_actions=p.get("InsufficientDataActions", []),
            datapoints_to_alarm=int(p["DatapointsToAlarm"]) if p.get("DatapointsToAlarm") else None,
            treat_missing_data=p.get("TreatMissingData"),
            actions_enabled=str(p.get("ActionsEnabled", True)).lower() == "true",
        )
        return cls(alarm)

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> None:
        from moto.cloudwatch.models import cloudwatch_backends

        cloudwatch_backends[account_id][region_name].delete_alarms([resource_name])


class EventInvokeConfig(CloudFormationModel):
    """AWS::Lambda::EventInvokeConfig, put through moto's PutFunctionEventInvokeConfig.

    Without it a function's asynchronous retries and destinations (emulator/awslambda/asynchronous.py) would
    always be Lambda's defaults: two retries and no destination.
    """

    def __init__(self, function_name: str, qualifier: str) -> None:
        self.function_name = function_name
        self.qualifier = qualifier

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::Lambda::EventInvokeConfig"

    @property
    def physical_resource_id(self) -> str:
        return f"{self.function_name}:{self.qualifier}"

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> "EventInvokeConfig":
        from moto.awslambda.models import lambda_backends

        p = cloudformation_json["Properties"]
        config: dict[str, Any] = {
            key: int(p[key]) for key in ("MaximumRetryAttempts", "MaximumEventAgeInSeconds") if key in p
        }
        if p.get("DestinationConfig"):
            config["DestinationConfig"] = p["DestinationConfig"]
        lambda_backends[account_id][region_name].put_function_event_invoke_config(p["FunctionName"], config)
        return cls(p["FunctionName"], p["Qualifier"])

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> None:
        from moto.awslambda.exceptions import UnknownFunctionException
        from moto.awslambda.models import lambda_backends

        # As for LambdaUrl below: the properties are unresolved here; the physical id is <function>:<qualifier>.
        try:
            lambda_backends[account_id][region_name].delete_function_event_invoke_config(resource_name.rsplit(":", 1)[0])
        except UnknownFunctionException:
            pass  # moto deleted the function first (CloudFormation would not): its config went with it


class SnsSubscription(CloudFormationModel):
    """AWS::SNS::Subscription, made through moto's Subscribe and SetSubscriptionAttributes.

    Without it a function a stack subscribes to a topic never hears from it (the SMS replies function
    on the replies topic). Its Ref is the subscription's ARN, as on AWS (AWS::SNS::Subscription, "Return values").
    """

    # The attributes a template may set that SetSubscriptionAttributes takes (FilterPolicyScope before
    # FilterPolicy: moto reads the scope when it checks the policy).
    ATTRIBUTES = ("DeliveryPolicy", "FilterPolicyScope", "FilterPolicy", "RawMessageDelivery", "RedrivePolicy",
                  "SubscriptionRoleArn")

    def __init__(self, arn: str) -> None:
        self.arn = arn

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::SNS::Subscription"

    @property
    def physical_resource_id(self) -> str:
        return self.arn

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> "SnsSubscription":
        from moto.sns.models import sns_backends

        p = cloudformation_json["Properties"]
        backend = sns_backends[account_id][region_name]
        subscription = backend.subscribe(p["TopicArn"], p["Endpoint"], p["Protocol"])
        for name in cls.ATTRIBUTES:
            if name in p:
                value = p[name]
                text = json.dumps(value) if isinstance(value, dict) else str(value).lower() if isinstance(value, bool) else value
                backend.set_subscription_attributes(subscription.arn, name, text)
        return cls(subscription.arn)

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> None:
        from moto.sns.models import sns_backends

        sns_backends[account_id][region_name].unsubscribe(resource_name)  # the physical id: its ARN


class SecretsManagerSecret(CloudFormationModel):
    """AWS::SecretsManager::Secret, created through moto's CreateSecret (GetRandomPassword for a generated value).

    Ref is the secret's ARN. With no Name, CloudFormation names the secret after its logical id and
    a random suffix; GenerateSecretString's defaults are GetRandomPassword's (32 characters, each
    included type required).
    """

    def __init__(self, arn: str) -> None:
        self.arn = arn

    @staticmethod
    def cloudformation_name_type() -> str:
        return "Name"

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::SecretsManager::Secret"

    @property
    def physical_resource_id(self) -> str:
        return self.arn

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> "SecretsManagerSecret":
        import json

        from moto.secretsmanager.models import secretsmanager_backends

        backend = secretsmanager_backends[account_id][region_name]
        p = cloudformation_json["Properties"]
        value = p.get("SecretString")
        generate = p.get("GenerateSecretString")
        if generate is not None:
            flag = lambda key, default=False: str(generate.get(key, default)).lower() == "true"  # noqa: E731
            password = json.loads(
                backend.get_random_password(
                    password_length=int(generate.get("PasswordLength", 32)),
                    exclude_characters=generate.get("ExcludeCharacters", ""),
                    exclude_numbers=flag("ExcludeNumbers"),
                    exclude_punctuation=flag("ExcludePunctuation"),
                    exclude_uppercase=flag("ExcludeUppercase"),
                    exclude_lowercase=flag("ExcludeLowercase"),
                    include_space=flag("IncludeSpace"),
                    require_each_included_type=flag("RequireEachIncludedType", True),
                )
            )["RandomPassword"]
            key = generate.get("GenerateStringKey")
            value = json.dumps({**json.loads(generate["SecretStringTemplate"]), key: password}) if key else password
        backend.create_secret(
            name=resource_name,
            secret_string=value,
            secret_binary=None,
            description=p.get("Description"),
            tags=p.get("Tags"),
            kms_key_id=p.get("KmsKeyId"),
            client_request_token=None,
            replica_regions=[],
            force_overwrite=False,
        )
        return cls(backend.secrets[resource_name].arn)

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> None:
        from moto.secretsmanager.models import secretsmanager_backends

        secretsmanager_backends[account_id][region_name].delete_secret(
            resource_name, recovery_window_in_days=None, force_delete_without_recovery=True
        )


class LambdaUrl(CloudFormationModel):
    """AWS::Lambda::Url, created through moto's CreateFunctionUrlConfig; FunctionUrl is its URL.

    That URL answers on loopback (emulator/awslambda/function_urls.py), ending with "/" as Lambda's do.
    """

    def __init__(self, config: Any) -> None:
        self.config = config

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::Lambda::Url"

    @property
    def physical_resource_id(self) -> str:
        return self.config.function.function_arn

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in ("FunctionArn", "FunctionUrl")

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        if attribute_name == "FunctionUrl":
            return self.config.url
        if attribute_name == "FunctionArn":
            return self.config.function.function_arn
        from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

        raise UnformattedGetAttTemplateException()

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> "LambdaUrl":
        from moto.awslambda.models import lambda_backends

        p = cloudformation_json["Properties"]
        config = {key: p[key] for key in ("AuthType", "Cors", "InvokeMode") if key in p}
        return cls(lambda_backends[account_id][region_name].create_function_url_config(p["TargetFunctionArn"], config))

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> None:
        from moto.awslambda.exceptions import UnknownFunctionException
        from moto.awslambda.models import lambda_backends

        # moto deletes a stack's resource with the template's unresolved properties (TargetFunctionArn
        # is still a Fn::GetAtt) and its physical id as ``resource_name``: here the function's ARN.
        try:
            lambda_backends[account_id][region_name].delete_function_url_config(resource_name)
        except UnknownFunctionException:
            pass  # moto deleted the function first (CloudFormation would not): its URL went with it


def _scheduler_name(resource_name: str) -> str:
    """A generated name within Scheduler's 64 characters: moto's ``<stack>-<logical id>-<suffix>``,
    shortened in the middle so the random suffix still tells two deployments apart."""
    return resource_name if len(resource_name) <= 64 else resource_name[:51] + resource_name[-13:]


class SchedulerScheduleGroup(CloudFormationModel):
    """AWS::Scheduler::ScheduleGroup, created through moto's CreateScheduleGroup; Ref is its name.

    Deleting it deletes its schedules, as DeleteScheduleGroup does (EventBridge Scheduler API Reference).
    """

    def __init__(self, group: Any) -> None:
        self.group = group

    @staticmethod
    def cloudformation_name_type() -> str:
        return "Name"

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::Scheduler::ScheduleGroup"

    @property
    def physical_resource_id(self) -> str:
        return self.group.name

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr == "Arn"

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        if attribute_name == "Arn":
            return self.group.arn
        from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

        raise UnformattedGetAttTemplateException()

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> "SchedulerScheduleGroup":
        from moto.scheduler.models import scheduler_backends

        backend = scheduler_backends[account_id][region_name]
        return cls(backend.create_schedule_group(_scheduler_name(resource_name), cloudformation_json["Properties"].get("Tags", [])))

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> None:
        from moto.scheduler.models import scheduler_backends

        scheduler_backends[account_id][region_name].schedule_groups.pop(_scheduler_name(resource_name), None)


class SchedulerSchedule(CloudFormationModel):
    """AWS::Scheduler::Schedule, created through moto's CreateSchedule (emulator/scheduler fires it); Ref is its name."""

    def __init__(self, schedule: Any) -> None:
        self.schedule = schedule

    @staticmethod
    def cloudformation_name_type() -> str:
        return "Name"

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::Scheduler::Schedule"

    @property
    def physical_resource_id(self) -> str:
        return self.schedule.name

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr == "Arn"

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        if attribute_name == "Arn":
            return self.schedule.arn
        from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

        raise UnformattedGetAttTemplateException()

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> "SchedulerSchedule":
        from moto.scheduler.models import scheduler_backends

        p = cloudformation_json["Properties"]
        schedule = scheduler_backends[account_id][region_name].create_schedule(
            description=p.get("Description"),
            end_date=p.get("EndDate"),
            flexible_time_window=p["FlexibleTimeWindow"],
            group_name=p.get("GroupName"),
            kms_key_arn=p.get("KmsKeyArn"),
            name=_scheduler_name(resource_name),
            schedule_expression=p["ScheduleExpression"],
            schedule_expression_timezone=p.get("ScheduleExpressionTimezone"),
            start_date=p.get("StartDate"),
            state=p.get("State"),
            target=p["Target"],
            action_after_completion=p.get("ActionAfterCompletion"),
        )
        return cls(schedule)

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> None:
        from moto.scheduler.models import scheduler_backends

        # A stack's deletion gives the template's properties unresolved (GroupName may still be a Ref) and
        # the schedule's name as ``resource_name``: it is looked for in the group named, or in every group.
        groups = scheduler_backends[account_id][region_name].schedule_groups
        group_name = cloudformation_json["Properties"].get("GroupName") or "default"
        for group in [groups.get(group_name)] if isinstance(group_name, str) else list(groups.values()):
            if group is not None:  # its group may have gone first, with it
                group.schedules.pop(_scheduler_name(resource_name), None)

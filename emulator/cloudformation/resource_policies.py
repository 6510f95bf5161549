"""AWS::SNS::TopicPolicy and AWS::SQS::QueuePolicy, which moto's CloudFormation skips.

With IAM enforced (emulator/iam/), a topic's or queue's policy decides whether EventBridge may
deliver to it; moto left every topic with its default policy and every queue with none. Each is
set through moto's own SetTopicAttributes / SetQueueAttributes. Importing this module registers
the models with moto's CloudFormation (which takes direct subclasses of CloudFormationModel only).
"""

from __future__ import annotations

import json
from typing import Any

from moto.core.common_models import CloudFormationModel


def _document(cloudformation_json: Any) -> str:
    document = cloudformation_json["Properties"]["PolicyDocument"]
    return document if isinstance(document, str) else json.dumps(document)


class TopicPolicy(CloudFormationModel):
    def __init__(self, resource_name: str) -> None:
        self.resource_name = resource_name

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::SNS::TopicPolicy"

    @property
    def physical_resource_id(self) -> str:
        return self.resource_name

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> "TopicPolicy":
        from moto.sns.models import sns_backends

        for topic_arn in cloudformation_json["Properties"]["Topics"]:
            sns_backends[account_id][region_name].set_topic_attribute(topic_arn, "policy", _document(cloudformation_json))
        return cls(resource_name)

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[misc]
        cls, original_resource: Any, new_resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> "TopicPolicy":
        return cls.create_from_cloudformation_json(new_resource_name, cloudformation_json, account_id, region_name)


class QueuePolicy(CloudFormationModel):
    def __init__(self, resource_name: str) -> None:
        self.resource_name = resource_name

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::SQS::QueuePolicy"

    @property
    def physical_resource_id(self) -> str:
        return self.resource_name

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> "QueuePolicy":
        from moto.sqs.models import sqs_backends

        for queue_url in cloudformation_json["Properties"]["Queues"]:  # CloudFormation names queues by URL
            sqs_backends[account_id][region_name].set_queue_attributes(
                queue_url.rstrip("/").rpartition("/")[2], {"Policy": _document(cloudformation_json)})
        return cls(resource_name)

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[misc]
        cls, original_resource: Any, new_resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> "QueuePolicy":
        return cls.create_from_cloudformation_json(new_resource_name, cloudformation_json, account_id, region_name)

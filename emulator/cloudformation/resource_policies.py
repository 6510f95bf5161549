"""AWS::SNS::TopicPolicy and AWS::SQS::QueuePolicy, which moto's CloudFormation skips.

With IAM enforced (emulator/iam/), a topic's or queue's policy decides whether EventBridge may
deliver to it; moto left every topic with its default policy and every queue with none. Each is
set through moto's own SetTopicAttributes / SetQueueAttributes. Importing this module registers
the models with moto's CloudFormation (which takes direct subclasses of CloudFormationModel only,
so the shared part is a mixin beside it, not a base class between).
"""

from __future__ import annotations

import json
from typing import Any

from moto.core.common_models import CloudFormationModel


class _ResourcePolicy:
    """A policy resource: sets its document on every resource it lists, on create and on update alike."""

    CLOUDFORMATION_TYPE: str

    def __init__(self, resource_name: str) -> None:
        self.resource_name = resource_name

    @property
    def physical_resource_id(self) -> str:
        return self.resource_name

    @classmethod
    def cloudformation_type(cls) -> str:
        return cls.CLOUDFORMATION_TYPE

    @staticmethod
    def set_policy(properties: Any, document: str, account_id: str, region_name: str) -> None:
        raise NotImplementedError

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> _ResourcePolicy:
        properties = cloudformation_json["Properties"]
        document = properties["PolicyDocument"]
        cls.set_policy(properties, document if isinstance(document, str) else json.dumps(document), account_id, region_name)
        return cls(resource_name)

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[misc]
        cls, original_resource: Any, new_resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> _ResourcePolicy:
        return cls.create_from_cloudformation_json(new_resource_name, cloudformation_json, account_id, region_name)


class TopicPolicy(_ResourcePolicy, CloudFormationModel):
    CLOUDFORMATION_TYPE = "AWS::SNS::TopicPolicy"

    @staticmethod
    def set_policy(properties: Any, document: str, account_id: str, region_name: str) -> None:
        from moto.sns.models import sns_backends

        for topic_arn in properties["Topics"]:
            sns_backends[account_id][region_name].set_topic_attribute(topic_arn, "policy", document)


class QueuePolicy(_ResourcePolicy, CloudFormationModel):
    CLOUDFORMATION_TYPE = "AWS::SQS::QueuePolicy"

    @staticmethod
    def set_policy(properties: Any, document: str, account_id: str, region_name: str) -> None:
        from moto.sqs.models import sqs_backends

        for queue_url in properties["Queues"]:  # CloudFormation names queues by URL
            queue_name = queue_url.rstrip("/").rpartition("/")[2]
            sqs_backends[account_id][region_name].set_queue_attributes(queue_name, {"Policy": document})

"""The chunk journal of the Map retry-failed machine's S3 mode: each item's outcome, written to
DynamoDB the moment a chunk processor finishes the item, so a chunk whose invocation dies later
(timed out, out of memory, crashed) keeps the items it finished and none of them runs again.

Why DynamoDB: the journal costs one write per item attempt, and an on-demand write of an item
under 1 KB is $0.625 per million at us-east-1 list prices, where an S3 PUT (an object per item, or
a per-chunk progress object rewritten after each item) is $5.00 per million; it also answers in a
few milliseconds, which the chunk's Lambda bills, where an S3 PUT takes tens. A write is
conditional (``attribute_not_exists``): the first outcome recorded for an entry is the one that
counts, so a second invocation of the same chunk cannot turn a recorded success into a failure.
A chunk's records share a partition (its chunk object's key), so one strongly consistent Query
reads them all.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from patterns_common.map_retry import Journal

# Records are read only while their execution runs (at most 12 hours, the machine's TimeoutSeconds)
# or is redriven (up to 14 days after it ends); DynamoDB's TTL deletes them after that, free.
RECORD_LIFETIME_SECONDS = 15 * 24 * 3600
PARALLEL_REQUESTS = 16


class ChunkJournal:
    def __init__(self, dynamodb: Any, table_name: str, clock: Callable[[], float] = time.time) -> None:
        self.dynamodb = dynamodb
        self.table_name = table_name
        self.clock = clock

    def record(self, chunk_key: str, position: int, error: str | None) -> str | None:
        """Record entry ``position``'s outcome (``None``: it succeeded) unless one is recorded already;
        return the outcome that stands."""
        item = {
            "chunk_key": {"S": chunk_key},
            "position": {"N": str(position)},
            "expires_at": {"N": str(int(self.clock()) + RECORD_LIFETIME_SECONDS)},
            **({"error": {"S": error}} if error is not None else {}),
        }
        try:
            self.dynamodb.put_item(
                TableName=self.table_name,
                Item=item,
                ConditionExpression="attribute_not_exists(chunk_key)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            return _error_of(exc.response["Item"])
        return error

    def read(self, chunk_key: str) -> Journal:
        """Every outcome recorded for the chunk, by position."""
        journal: dict[int, str | None] = {}
        query: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "chunk_key = :chunk",
            "ExpressionAttributeValues": {":chunk": {"S": chunk_key}},
            "ProjectionExpression": "#position, #error",
            "ExpressionAttributeNames": {"#position": "position", "#error": "error"},
            "ConsistentRead": True,  # a record written just before the invocation died must be seen
        }
        while True:
            page = self.dynamodb.query(**query)
            journal.update({int(item["position"]["N"]): _error_of(item) for item in page["Items"]})
            if "LastEvaluatedKey" not in page:
                return journal
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def read_many(self, chunk_keys: Iterable[str]) -> dict[str, Journal]:
        chunk_keys = list(chunk_keys)
        with ThreadPoolExecutor(PARALLEL_REQUESTS) as pool:
            return dict(zip(chunk_keys, pool.map(self.read, chunk_keys)))


def _error_of(item: dict[str, Any]) -> str | None:
    return item["error"]["S"] if "error" in item else None

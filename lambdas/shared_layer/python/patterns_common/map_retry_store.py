"""S3 reads and writes of the Map retry-failed machine's S3 mode (items bucket, runs/ prefix)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from patterns_common.map_retry import (
    CHUNK_SIZE,
    InvalidItems,
    PendingEntry,
    RunPaths,
    parse_items_document,
    plan_pass,
)

# Chunk objects are small and many: a few parallel requests cut a 400-chunk pass from seconds to
# well under one (boto3 clients are thread-safe).
PARALLEL_REQUESTS = 16
_MISSING = {"404", "NoSuchKey", "NotFound"}
_UNREADABLE = _MISSING | {"403", "AccessDenied"}


class RunStore:
    def __init__(self, s3: Any, bucket: str) -> None:
        self.s3 = s3
        self.bucket = bucket

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def read_items(self, key: str, max_bytes: int) -> Any:
        """The user's items document, refused (InvalidItems) when absent, unreadable or too large."""
        try:
            response = self.s3.get_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            code = error.response["Error"]["Code"]
            if code in _UNREADABLE:
                raise InvalidItems(f"cannot read {self.uri(key)} ({code})") from None
            raise
        body = response["Body"]
        if response["ContentLength"] > max_bytes:
            body.close()
            raise InvalidItems(f"{self.uri(key)} is {response['ContentLength']} bytes, more than the {max_bytes} accepted")
        return parse_items_document(body.read(), self.uri(key))

    def read_json(self, key: str) -> Any:
        return json.loads(self.s3.get_object(Bucket=self.bucket, Key=key)["Body"].read())

    def read_many(self, keys: Iterable[str]) -> dict[str, Any]:
        keys = list(keys)
        with ThreadPoolExecutor(PARALLEL_REQUESTS) as pool:
            return dict(zip(keys, pool.map(self.read_json, keys)))

    def write_json(self, key: str, value: Any) -> None:
        self.s3.put_object(
            Bucket=self.bucket,
            Key=key,
            Body=json.dumps(value, separators=(",", ":")).encode(),
            ContentType="application/json",
        )

    def write_many(self, objects: Mapping[str, Any]) -> None:
        with ThreadPoolExecutor(PARALLEL_REQUESTS) as pool:
            list(pool.map(lambda key: self.write_json(key, objects[key]), objects))

    def exists(self, key: str) -> bool:
        try:
            self.s3.head_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            if error.response["Error"]["Code"] in _MISSING:
                return False
            raise
        return True

    def write_pass(
        self, paths: RunPaths, pass_number: int, pending: Sequence[PendingEntry], chunk_size: int = CHUNK_SIZE
    ) -> list[dict[str, Any]]:
        """Write a pass's chunk objects, then its manifest (the Distributed Map's ItemReader input)."""
        manifest, chunks = plan_pass(paths, pass_number, pending, chunk_size)
        self.write_many(chunks)
        self.write_json(paths.manifest_key(pass_number), manifest)
        return manifest

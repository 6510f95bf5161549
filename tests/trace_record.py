"""Records what the handlers' Powertools Tracer gives X-Ray, and what their Logger writes.

Tracer's ``capture_lambda_handler`` opens one subsegment per invocation on its provider and puts the
handler's response (``capture_response``) or exception (``capture_error``) on it as metadata, both on
by default (Powertools for AWS Lambda (Python), Tracer:
https://docs.powertools.aws.dev/lambda/python/latest/core/tracer/). The tests run each real handler
with the real decorator and this provider in X-Ray's place, so a handler that records what it must
not shows up as metadata here. Logs are what the Logger writes (its JSON lines, metrics' EMF too).
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest


@dataclass
class RecordedSubsegment:
    name: str
    metadata: list[tuple[str, Any]] = field(default_factory=list)
    annotations: dict[str, Any] = field(default_factory=dict)

    def put_metadata(self, key: str, value: Any, namespace: str = "default") -> None:
        self.metadata.append((key, value))

    def put_annotation(self, key: str, value: Any) -> None:
        self.annotations[key] = value


@dataclass
class RecordingProvider:
    subsegments: list[RecordedSubsegment] = field(default_factory=list)

    @contextmanager
    def in_subsegment(self, name: str, **_: Any) -> Iterator[RecordedSubsegment]:
        subsegment = RecordedSubsegment(name)
        self.subsegments.append(subsegment)
        yield subsegment

    def recorded_text(self) -> str:
        """Every metadata value as text, as X-Ray would store it (an exception as its message)."""
        return json.dumps([[key, value] for s in self.subsegments for key, value in s.metadata], default=repr)


@dataclass
class Recorded:
    trace: RecordingProvider
    logs: io.StringIO
    capsys: Any  # what is printed: the metrics' EMF documents
    printed: str = ""

    def handler_subsegments(self) -> list[RecordedSubsegment]:
        """The subsegments the handler decorator opened (``## lambda_handler``), one per invocation."""
        return [s for s in self.trace.subsegments if s.name == "## lambda_handler"]

    def everything(self) -> str:
        """The trace metadata, the log lines and the printed metrics so far, as one text."""
        self.printed += self.capsys.readouterr().out
        return "\n".join((self.trace.recorded_text(), self.logs.getvalue(), self.printed))


@pytest.fixture
def recorded(monkeypatch, capsys) -> Iterator[Recorded]:
    """The trace and logs of the handlers a test runs (the tracer is shared by every function's handler)."""
    from patterns_common.observability import logger, tracer

    provider = RecordingProvider()
    monkeypatch.setattr(tracer, "provider", provider)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    logger.addHandler(handler)
    record = Recorded(provider, stream, capsys)
    yield record
    logger.handlers.remove(handler)

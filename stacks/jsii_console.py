"""Node's own warnings (an untested or end-of-life release, a deprecation) shown as text during synthesis.

The Python CDK runs on jsii, which starts Node and reads its stderr: lines Node's program wraps as
console output it writes as they are, but a line Node itself prints (its warnings, jsii's banner
about the Node release) it prints as a Python bytes literal, ``b'!!  This software has not been
tested with node v25.0.0 ...\\n'`` (aws/jsii issues 3171 and 4065). ``install()``, called before
aws_cdk is imported, hands those lines to jsii as console output too, so they read as Node wrote them.
"""

from __future__ import annotations

import base64
import json
from typing import IO, Any


class _AsConsoleOutput:
    """Node's stderr as jsii reads it, each line not already jsii's console output wrapped as such."""

    def __init__(self, reader: IO[bytes]) -> None:
        self._reader = reader

    def readline(self) -> bytes:
        line = self._reader.readline()
        if not line:
            return line
        try:
            if isinstance(json.loads(line), dict):
                return line
        except ValueError:
            pass
        return json.dumps({"stderr": base64.b64encode(line).decode()}).encode() + b"\n"


def install() -> None:
    """Before Node starts (the first import of aws_cdk starts it): jsii's reader of its stderr is
    looked up when the process starts, so the one given here is the one used."""
    from jsii._kernel.providers import process

    sink = process.stderr_sink

    def stderr_sink(reader: Any) -> None:
        sink(_AsConsoleOutput(reader))

    process.stderr_sink = stderr_sink

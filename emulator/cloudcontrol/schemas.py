"""CloudFormation registry schemas of resource types, as `cloudformation describe-type` returns them.

The schemas come from cfn-lint (pinned in requirements-dev.txt), which ships the registry's schemas
per region: one copy of AWS's facts (create-only, read-only, write-only properties, the primary
identifier) rather than a hand-written one. Its files are read directly: importing cfn-lint takes
seconds, and `cdk deploy --hotswap` waits on the first DescribeType.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path


class UnknownType(LookupError):
    pass


@functools.cache
def _schemas_dir() -> Path:
    spec = importlib.util.find_spec("cfnlint")
    if spec is None or spec.origin is None:
        raise RuntimeError("cfn-lint is not installed: run `make setup`")
    return Path(spec.origin).parent / "data" / "schemas"


@functools.cache
def _region_index(region: str) -> dict[str, str]:
    """Schema file names by type name, for ``region``."""
    return json.loads((_schemas_dir() / "providers" / f"{region}.json").read_text())


@functools.cache
def schema(region: str, type_name: str) -> dict:
    """The registry schema of ``type_name`` in ``region``; UnknownType if the registry has none."""
    name = _region_index(region).get(type_name)
    if name is None:
        raise UnknownType(type_name)
    return json.loads((_schemas_dir() / "resources" / f"{name}.json").read_text())


def top_level(pointers: list[str]) -> set[str]:
    """``["/properties/A", "/properties/B/C"]`` -> ``{"A", "B"}``: the properties a schema list names."""
    return {pointer.split("/")[2] for pointer in pointers if pointer.startswith("/properties/")}

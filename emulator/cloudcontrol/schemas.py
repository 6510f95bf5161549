"""CloudFormation registry schemas of resource types, as `cloudformation describe-type` returns them.

The schemas come from cfn-lint (pinned in requirements-dev.txt), which ships the registry's schemas
per region: one copy of AWS's facts (create-only, read-only, write-only properties, the primary
identifier) rather than a hand-written one.
"""

from __future__ import annotations

import functools


class UnknownType(LookupError):
    pass


@functools.cache
def schema(region: str, type_name: str) -> dict:
    """The registry schema of ``type_name`` in ``region``; UnknownType if the registry has none."""
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER, ResourceNotFoundError

    try:
        return PROVIDER_SCHEMA_MANAGER.get_resource_schema(region, type_name).schema
    except ResourceNotFoundError:
        raise UnknownType(type_name) from None


def top_level(pointers: list[str]) -> set[str]:
    """``["/properties/A", "/properties/B/C"]`` -> ``{"A", "B"}``: the properties a schema list names."""
    return {pointer.split("/")[2] for pointer in pointers if pointer.startswith("/properties/")}

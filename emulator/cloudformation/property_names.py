"""CloudFormation property names and the API's member names for the same values: PascalCase against
camelCase, nested members too (``LoggingConfiguration.IncludeExecutionData`` is the API's
``loggingConfiguration.includeExecutionData``). Plain logic."""

from __future__ import annotations

from typing import Any


def api_names(value: Any) -> Any:
    """``value`` (a CloudFormation property's) with the API's member names: each key's first letter lower-cased."""
    return _rename(value, str.lower)


def property_names(value: Any) -> Any:
    """``value`` (an API member's) with CloudFormation's property names: each key's first letter upper-cased."""
    return _rename(value, str.upper)


def _rename(value: Any, first_letter: Any) -> Any:
    if isinstance(value, dict):
        return {first_letter(key[:1]) + key[1:]: _rename(item, first_letter) for key, item in value.items()}
    if isinstance(value, list):
        return [_rename(item, first_letter) for item in value]
    return value

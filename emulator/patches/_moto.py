"""Helpers the patches share for replacing a name inside moto's modules."""

from __future__ import annotations

import sys
import types
from typing import Any


def modules_importing(module: types.ModuleType, name: str, value: Any) -> list[str]:
    """Step Functions modules other than ``module`` that imported ``value`` as ``name``."""
    return [
        mod_name
        for mod_name, mod in list(sys.modules.items())
        if mod_name.startswith("moto.stepfunctions") and mod is not module and getattr(mod, name, None) is value
    ]


def states_error(env: Any, error: str, cause: str) -> Exception:
    """The exception that fails the running state with the ``States.*`` error ``error``."""
    from moto.stepfunctions.parser.api import ExecutionFailedEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.component.common.error_name.failure_event import (
        FailureEvent,
        FailureEventException,
    )
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    error_name = StatesErrorName.from_name(error)
    return FailureEventException(
        failure_event=FailureEvent(
            env=env,
            error_name=error_name,
            event_type=HistoryEventType.ExecutionFailed,
            event_details=EventDetails(
                executionFailedEventDetails=ExecutionFailedEventDetails(error=error_name.error_name, cause=cause)
            ),
        )
    )


def error_name(error_name: str | None) -> Any:
    """The engine's name for the error ``error_name`` (moto passes it by that keyword): a ``States.*``
    name matches as AWS's own errors do; any other is a custom error."""
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.error_name import ErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName

    if error_name is not None and error_name.startswith("States."):
        try:
            return StatesErrorName.from_name(error_name)
        except ValueError:
            return ErrorName(error_name=error_name)
    return CustomErrorName(error_name=error_name)

"""Corrections to moto's CloudWatch Logs FilterLogEvents (what `aws logs tail` pages and polls)."""

from __future__ import annotations

import json
from typing import Any


def install_filter_log_events() -> None:
    """AWS: FilterLogEvents always interleaves the group's streams in time order ("As of June 17, 2019,
    this parameter is ignored and the value is assumed to be true"), and ``logStreamNamePrefix`` keeps the
    streams whose names start with it; giving it with ``logStreamNames`` is an InvalidParameterException.
    https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_FilterLogEvents.html
    moto answered stream by stream unless asked to interleave (two functions' instances, or two instances
    of one, read as blocks, not as they happened) and ignored the prefix.
    """
    from moto.logs.exceptions import InvalidParameterException, ResourceNotFoundException
    from moto.logs.models import LogGroup
    from moto.logs.responses import LogsResponse

    original_filter = LogGroup.filter_log_events

    def filter_log_events(self: Any, *args: Any) -> Any:
        # moto's interleaving is a stable sort on the timestamp: each stream's lines keep their order.
        return original_filter(self, *args[:-1], True)

    LogGroup.filter_log_events = filter_log_events

    original_response = LogsResponse.filter_log_events

    def filter_log_events_response(self: Any) -> str:
        prefix = self._get_param("logStreamNamePrefix")
        if not prefix:
            return original_response(self)
        if self._get_param("logStreamNames"):
            raise InvalidParameterException("Cannot specify both logStreamNames and logStreamNamePrefix")
        group = self.logs_backend.groups.get(self._get_param("logGroupName"))
        if group is None:
            raise ResourceNotFoundException()
        names = [name for name in group.streams if name.startswith(prefix)]
        if not names:
            return json.dumps({"events": [], "searchedLogStreams": []})
        get_param = self._get_param  # as if the caller had named those streams
        self._get_param = lambda name, if_none=None: names if name == "logStreamNames" else get_param(name, if_none)
        return original_response(self)

    LogsResponse.filter_log_events = filter_log_events_response

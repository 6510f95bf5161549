"""Speed, not behaviour: moto's response serializer, which every service's answers go through, made cheaper."""

from __future__ import annotations

import functools
from typing import Any


def install_absent_members_skipped() -> None:
    """A member a result that is a plain dict does not hold is skipped without looking for it.

    moto looks every member of a structure up in the result under each name it may go by (its own,
    its snake_case form, its shape's name...), whether the result holds it or not: a Step Functions
    history event has about 60 possible members and holds 5 or 6, so serializing a 1,000-event page
    of GetExecutionHistory cost about 0.4 s of CPU. For a plain dict those names depend only on the
    member (a dict has no ``Meta`` aliases and one class name), so they are worked out once per
    member; when none of them is in the dict, moto would have found no value and written nothing, and
    nothing is written. Anything else (another kind of result, a response transformer that may turn
    a missing value into one, a dotted name) goes moto's way.
    """
    from moto.core.serialize import AttributePickerContext, ResponseSerializer

    original = ResponseSerializer._serialize_structure_member

    def names(serializer: Any, shape: Any, key: str) -> tuple[str, ...] | None:
        picker = serializer._value_picker
        cache = shape.__dict__.setdefault("_emulator_dict_names", {})
        cache_key = (type(picker), key)
        if cache_key not in cache:
            if not hasattr(picker, "get_possible_keys"):  # moto's DefaultAttributePicker: the key itself
                found: tuple[str, ...] = (key,)
            else:
                found = tuple(picker.get_possible_keys(AttributePickerContext(obj={}, key=key, shape=shape)))
            cache[cache_key] = None if any("." in name for name in found) else found
        return cache[cache_key]

    def serialize_structure_member(self: Any, serialized: Any, value: Any, shape: Any, key: str) -> None:
        if type(value) is dict and not getattr(self._value_picker, "response_transformers", None):
            found = names(self, shape, key)
            if found is not None and not any(name in value for name in found):
                return
        original(self, serialized, value, shape, key)

    ResponseSerializer._serialize_structure_member = serialize_structure_member


def install_timestamps_converted_once() -> None:
    """A timestamp held as text is converted once per text and format, not at every answer.

    moto keeps many timestamps as ISO 8601 text (every Step Functions history event's) and parses the
    text with dateutil each time it serializes it, about a tenth of a history page's cost; events
    recorded at the same simulated moment share the text. The conversion depends on nothing else.
    """
    from moto.core.serialize import TimestampSerializer

    original = TimestampSerializer._convert_timestamp_to_str
    converted = functools.lru_cache(maxsize=65_536)(
        lambda value, timestamp_format: original(TimestampSerializer(timestamp_format), value, timestamp_format))

    def convert_timestamp_to_str(self: Any, value: Any, timestamp_format: str) -> Any:
        if isinstance(value, str):
            return converted(value, timestamp_format)
        return original(self, value, timestamp_format)

    TimestampSerializer._convert_timestamp_to_str = convert_timestamp_to_str

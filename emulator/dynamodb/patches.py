"""DynamoDB: table exports take time and are named as on AWS; a malformed expression is refused as AWS refuses it."""

from __future__ import annotations

import importlib
import threading
import uuid
from typing import Any

from emulator.clock import SimClock

# How long a table export takes. AWS takes minutes even for a tiny table; moto finishes at once.
DYNAMODB_EXPORT_SECONDS = 240


def install_dynamodb_exports(clock: SimClock) -> None:
    """Table exports as AWS runs them: named under their table, and taking time."""
    from moto.dynamodb.models.table_export import TableExport

    original_init = TableExport.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        # AWS: <table ARN>/export/<id>, which IAM policies scope DescribeExport by; moto nested
        # the whole table ARN after "table/" and said "import".
        self.arn = f"{self.table.table_arn}/export/{uuid.uuid4().hex}"
        self._emulator_done_at = clock.now() + DYNAMODB_EXPORT_SECONDS

    # The export's status is IN_PROGRESS until DYNAMODB_EXPORT_SECONDS of simulated time have
    # passed, then whatever moto's export (done at once) ended with.
    def get_status(self: Any) -> str:
        if clock.now() < getattr(self, "_emulator_done_at", float("inf")):
            return "IN_PROGRESS"
        return self._emulator_status

    def set_status(self: Any, value: str) -> None:
        self._emulator_status = value

    TableExport.__init__ = __init__
    TableExport.status = property(get_status, set_status)



def install_atomic_writes() -> None:
    """Writes to a table are atomic: a condition is checked and the item written as one step.

    AWS: a conditional write succeeds only if its condition holds when it is applied, so of 200
    concurrent "only if still active" updates exactly one wins (DynamoDB Developer Guide, "Condition
    expressions"). moto checks the condition and writes the item in plain Python with no lock, so two
    requests served by two threads can both pass the check. One lock per backend serialises writes.
    """
    import threading

    from moto.dynamodb.models import DynamoDBBackend

    locks: dict[int, threading.Lock] = {}
    registry = threading.Lock()

    def serialised(original: Any) -> Any:
        def write(self: Any, *args: Any, **kwargs: Any) -> Any:
            with registry:
                lock = locks.setdefault(id(self), threading.Lock())
            with lock:
                return original(self, *args, **kwargs)

        return write

    for name in ("put_item", "update_item", "delete_item", "transact_write_items"):
        setattr(DynamoDBBackend, name, serialised(getattr(DynamoDBBackend, name)))


# The actions whose condition parser reads a FilterExpression; every other reads a ConditionExpression.
# What AWS names in its refusal.
_FILTERING_ACTIONS = {"Query", "Scan"}


def install_malformed_expressions_refused() -> None:
    """A condition or filter expression that does not parse, or names a placeholder the request does not
    define, is refused with a ValidationException, as DynamoDB refuses it: "Invalid ConditionExpression:
    Syntax error; ...", "... An expression attribute name used in the document path is not defined;
    attribute name: #x" (the same with FilterExpression for a Query or Scan).

    moto's parser raises ValueError or KeyError there, which its server answered with a 500: the SDK
    retried the request as a server fault, then raised an internal error naming nothing of the expression.
    """
    from moto.dynamodb import comparisons
    from moto.dynamodb.exceptions import MockValidationException
    from moto.dynamodb.responses import DynamoHandler

    reading = threading.local()  # .expression: the expression the request being handled here reads
    original_call_action = DynamoHandler.call_action

    def call_action(self: Any) -> Any:
        # Every DynamoDB request is dispatched here, whichever action it names.
        reading.expression = "FilterExpression" if self._get_action() in _FILTERING_ACTIONS else "ConditionExpression"
        try:
            return original_call_action(self)
        finally:
            del reading.expression  # a parse this thread reaches later, outside a request, names no action's

    DynamoHandler.call_action = call_action
    original_parse = comparisons.ConditionExpressionParser.parse

    def parse(self: Any) -> Any:
        try:
            return original_parse(self)
        except (ValueError, KeyError) as error:
            invalid = f"Invalid {getattr(reading, 'expression', 'ConditionExpression')}:"
            if isinstance(error, ValueError):
                raise MockValidationException(f"{invalid} Syntax error; {error}") from None
            [placeholder] = error.args
            if str(placeholder).startswith(":"):
                raise MockValidationException(f"{invalid} An expression attribute value used in expression is not "
                                              f"defined; attribute value: {placeholder}") from None
            raise MockValidationException(f"{invalid} An expression attribute name used in the document path is not "
                                          f"defined; attribute name: {placeholder}") from None

    comparisons.ConditionExpressionParser.parse = parse


def install_condition_expressions_parsed_once() -> None:
    """Speed, not behaviour: a condition expression is parsed once per text, names and values.

    moto parses a write's ``ConditionExpression`` twice at every request: once as the request is
    read, for the names and values it uses (an unused one is a ValidationException), and again as the
    item is written, for the condition to evaluate; the two were a sixth of a conditional PutItem's CPU
    in the emulator, and the Map retry-failed machine's chunk journal writes 10,000 of them with the
    one text and no values. The parse is a function of those three alone, and its tree is only
    evaluated afterwards, never changed, so one serves every request that repeats them. An expression
    that does not parse is parsed again, and raises where it did, at every request; it is not kept.
    """
    import functools
    import json
    from types import SimpleNamespace

    from moto.dynamodb import comparisons, responses

    original_parser, original_filter = comparisons.create_condition_expression_parser, comparisons.get_filter_expression

    @functools.lru_cache(maxsize=1024)
    def parsed(expr: str | None, names: str, values: str) -> tuple[Any, tuple[str, ...], tuple[str, ...]]:
        parser = original_parser(expr, json.loads(names), json.loads(values))
        return parser.parse(), tuple(parser.expr_attr_names_found), tuple(parser.expr_attr_values_found)

    def kept(expr: str | None, names: dict | None, values: dict | None) -> tuple[Any, tuple[str, ...], tuple[str, ...]] | None:
        """The kept parse; None for a value JSON cannot hold or an expression that does not parse (moto's way then)."""
        try:
            return parsed(expr, json.dumps(names, sort_keys=True), json.dumps(values, sort_keys=True))
        except Exception:
            return None

    def parsed_once(expr: str | None, names: dict | None, values: dict | None) -> Any:
        found = kept(expr, names, values)
        if found is None:
            return original_parser(expr, names, values)
        tree, names_found, values_found = found
        # What the request's reading does with a parser: parse() and the names and values it found,
        # lists of its own for the caller to extend.
        return SimpleNamespace(parse=lambda: tree, expr_attr_names_found=list(names_found),
                               expr_attr_values_found=list(values_found))

    def get_filter_expression(expr: str | None, names: dict | None, values: dict | None) -> Any:
        found = kept(expr, names, values)
        return original_filter(expr, names, values) if found is None else found[0]

    responses.create_condition_expression_parser = parsed_once
    for module_name in ("moto.dynamodb.comparisons", "moto.dynamodb.models", "moto.dynamodb.models.table"):
        module = importlib.import_module(module_name)
        if getattr(module, "get_filter_expression", None) is original_filter:
            module.get_filter_expression = get_filter_expression


def install_queries_read_one_partition() -> None:
    """Speed, not behaviour: a Query of a table (not of an index) reads the one partition it names.

    moto lists and sorts every item of the table at each Query, then keeps those whose partition key
    matches: a Query of one 40-item partition of a 3,500-item table cost 30 ms of CPU, 7 ms reading
    the partition alone. The chunk journal's table holds an item per item attempt of every run, and
    each chunk reads its own back. The partition's items are those the filter kept; moto sorts them
    by sort key next, as before, so the answer (items, order, pages, counts) is the same.
    """
    import threading

    from moto.dynamodb.models.table import Table

    original_query, original_all_items = Table.query, Table.all_items
    querying = threading.local()  # the (table, partition key) of the Query this thread is serving

    def query(self: Any, hash_key: Any, range_comparison: Any, range_objs: Any, limit: Any, exclusive_start_key: Any,
              scan_index_forward: Any, projection_expressions: Any, index_name: str | None = None, *args: Any,
              **kwargs: Any) -> Any:
        arguments = (self, hash_key, range_comparison, range_objs, limit, exclusive_start_key, scan_index_forward,
                     projection_expressions, index_name, *args)
        if index_name is not None or hash_key is None:
            return original_query(*arguments, **kwargs)
        querying.partition = (self, hash_key)
        try:
            return original_query(*arguments, **kwargs)
        finally:
            querying.partition = None

    def all_items(self: Any) -> list:
        partition = getattr(querying, "partition", None)
        if partition is None or partition[0] is not self:
            return original_all_items(self)
        found = self.items.get(partition[1])
        if found is None:
            return []
        return list(found.values()) if self.range_key_attr else [found]

    Table.query, Table.all_items = query, all_items

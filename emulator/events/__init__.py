"""EventBridge as the app needs it: execution status-change events, rule targets, schedules.

moto's Step Functions emits no events and moto's EventBridge delivers to neither SNS, Lambda nor
Step Functions targets. This module builds the documented "Step Functions Execution Status
Change" event when an execution starts or ends, matches it with moto's own pattern matcher
against every rule of the default bus, renders input transformers and delivers to the targets.
Scheduled rules (``rate()``, and ``cron()`` in UTC) fire on demand, and by the simulated clock: the
rule router is one of the clock's timers, so an advance stops at each firing (emulator/clock).
"""

from __future__ import annotations

import datetime as _datetime
import json
import re
import threading
from typing import Any, Callable

from emulator.awslambda.trace import new_trace_id, trace_root
from emulator.clock import SimClock
from emulator.events.envelope import aws_event
from emulator.scheduler import UnplayedExpression, next_cron, rate_seconds

STATUS_CHANGE = "Step Functions Execution Status Change"
# A placeholder, an escape, a quote, or a run of anything else: enough to know what is in a string.
_TEMPLATE_TOKEN = re.compile(r'<(?P<name>[A-Za-z0-9_.\-]+)>|\\.|"|[^<\\"]+|[<\\]', re.DOTALL)


def _millis(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, _datetime.datetime):
        return int(value.timestamp() * 1000)
    return int(float(value) * 1000)


def status_change_event(execution: Any, now: float, status: str | None = None) -> dict:
    """The event AWS sends for ``execution`` (a moto parser Execution) in ``status`` (default: current)."""
    if status is None:
        status = execution.exec_status.value if hasattr(execution.exec_status, "value") else str(execution.exec_status)
    ended = status != "RUNNING"
    output = None
    if status == "SUCCEEDED":
        output = json.dumps(execution.output, separators=(",", ":"))
    return aws_event(
        source="aws.states", detail_type=STATUS_CHANGE, account=execution.account_id, region=execution.region_name,
        at=now, resources=[execution.exec_arn],
        detail={
            "executionArn": execution.exec_arn,
            "stateMachineArn": execution.state_machine_arn,
            "name": execution.name,
            "status": status,
            "startDate": _millis(execution.start_date),
            "stopDate": _millis(execution.stop_date) if ended else None,
            "input": json.dumps(execution.input_data, separators=(",", ":")),
            "output": output,
            "inputDetails": {"included": True},
            "outputDetails": {"included": True} if output is not None else None,
            "error": execution.error if ended else None,
            "cause": execution.cause if ended else None,
        },
    )


def _lookup(event: dict, path: str) -> tuple[bool, Any]:
    """Resolve an EventBridge InputPath ($.a.b, $.list[0]) against ``event``."""
    node: Any = event
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path.removeprefix("$").lstrip(".")):
        if part.startswith("["):
            index = int(part[1:-1])
            if not isinstance(node, list) or index >= len(node):
                return False, None
            node = node[index]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return False, None
    return True, node


def render_input_transformer(transformer: dict, event: dict) -> str:
    """The text EventBridge sends a target for ``event`` through ``transformer``.

    As the EventBridge user guide documents it ("Amazon EventBridge input transformation"):
    in a JSON object or array template, a placeholder outside quotes becomes the JSON value (a
    string gets quotes and escapes). Inside a quoted string, and anywhere in any other template,
    the value is spliced in as text and not escaped; an object or array loses its internal
    quotes. A path missing from the event gives nothing inside a string and "" as a value (as
    observed on AWS). A string template keeps its quotes; JSON reaches the target minified.
    """
    values = {name: _lookup(event, path) for name, path in transformer.get("InputPathsMap", {}).items()}
    values["aws.events.event.json"] = (True, event)
    template = transformer["InputTemplate"]
    json_template = template.lstrip()[:1] in ("{", "[")
    parts: list[str] = []
    in_string = False
    for token in _TEMPLATE_TOKEN.finditer(template):
        name = token.group("name")
        if name is not None and name in values:
            found, value = values[name]
            parts.append(_as_json_value(found, value) if json_template and not in_string else _as_text(found, value))
            continue
        if token.group(0) == '"':
            in_string = not in_string
        parts.append(token.group(0))
    rendered = "".join(parts)
    try:
        return _minified(json.loads(rendered))
    except ValueError:
        return rendered  # the documented hazard of splicing unescaped text: it goes out as it is


def _as_json_value(found: bool, value: Any) -> str:
    return _minified(value) if found else '""'


def _as_text(found: bool, value: Any) -> str:
    if not found:
        return ""
    return value if isinstance(value, str) else _minified(value).replace('"', "")


def _minified(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def send(arn: str, message: str, trace_id: str | None = None) -> None:
    """Deliver ``message`` to an SNS topic, an SQS queue or (asynchronously) a Lambda function.

    What EventBridge targets and Lambda's asynchronous-invocation destinations have in common. A
    Lambda function's AWS calls carry ``trace_id`` (its X-Amzn-Trace-Id).
    """
    service, region, account = arn.split(":")[2:5]
    if service == "sns":
        from moto.sns.models import sns_backends

        sns_backends[account][region].publish(message, arn=arn)
    elif service == "sqs":
        from moto.sqs.models import sqs_backends

        sqs_backends[account][region].send_message(arn.split(":")[5], message)
    elif service == "lambda":
        from moto.awslambda.models import lambda_backends

        function = lambda_backends[account][region].get_function(arn)
        headers = {"x-amz-invocation-type": "Event", **({"x-amzn-trace-id": trace_id} if trace_id else {})}
        function.invoke(message, headers, {})
    else:
        raise NotImplementedError(f"The emulator does not deliver to {arn}")


def _start_execution(arn: str, message: str) -> str:
    """Start an execution of the machine ``arn`` with ``message`` as its input; returns its ARN."""
    from moto.stepfunctions.parser.models import stepfunctions_parser_backends

    region, account = arn.split(":")[3:5]
    return stepfunctions_parser_backends[account][region].start_execution(arn, None, message).execution_arn


class EventRouter:
    """Delivers events to the targets of matching rules on the default bus."""

    def __init__(self, clock: SimClock, account_id: str, region: str, auto_schedules: bool = False,
                 refused: Callable[..., str | None] | None = None) -> None:
        self.clock = clock
        # Why a delivery is not allowed (emulator.iam.deliveries.refused), or None when IAM is not enforced.
        self._refused = refused
        self.undelivered: list[dict] = []  # {"rule", "target", "error_code", "error_message"}: refused deliveries
        self.account_id = account_id
        self.region = region
        self.delivered: list[dict] = []  # {"rule", "target", "event"} for summaries and tests
        # Execution ARN -> {"rule", "target", "event"}: the event that started it, for the console.
        # Directly, when the rule targets the machine; through a Lambda target, when the function's
        # StartExecution carries the trace the delivery gave it (``traced_start``).
        self.started_by: dict[str, dict] = {}
        self._traced: dict[str, dict] = {}  # trace root -> {"rule", "target", "event"}
        self._schedule_next: dict[str, float] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        # Which scheduled rules fire on the simulated clock: all (None) or the names given. Off by
        # default: tests and the demo fire schedules when they mean to.
        self._clock_rules: set[str] | None = None if auto_schedules else set()
        self._firing = threading.Lock()  # the poll and the clock's advance fire one at a time
        clock.add_timer(self)
        threading.Thread(target=self._run_schedules, name="schedules", daemon=True).start()

    def fire_on_clock(self, rule_names: set[str] | None) -> None:
        """Let these scheduled rules (None: every one) fire as simulated time passes their period."""
        with self._lock:
            self._clock_rules = None if rule_names is None else set(rule_names)
            self._schedule_next.clear()

    # -- status changes -------------------------------------------------------------------------
    def on_execution_status(self, execution: Any, status: str | None = None) -> None:
        event = status_change_event(execution, self.clock.now(), status)
        self.put(event, account_id=execution.account_id, region=execution.region_name)

    # -- delivery -------------------------------------------------------------------------------
    def _backend(self, account_id: str | None = None, region: str | None = None) -> Any:
        from moto.events.models import events_backends

        return events_backends[account_id or self.account_id][region or self.region]

    def put(self, event: dict, account_id: str | None = None, region: str | None = None) -> int:
        """Send ``event`` to every matching enabled rule of the default bus; returns deliveries."""
        backend = self._backend(account_id, region)
        bus = backend.describe_event_bus("default")
        count = 0
        for rule in list(bus.rules.values()):
            if rule.state != "ENABLED" or rule.scheduled_expression:
                continue
            if not rule.event_pattern.matches_event(event):
                continue
            count += self._deliver(rule, event)
        return count

    def _deliver(self, rule: Any, event: dict) -> int:
        count = 0
        for target in rule.targets:
            text = self._target_input(target, event)
            service = target["Arn"].split(":")[2]
            self.delivered.append({"rule": rule.name, "target": target["Arn"], "event": event, "input": text})
            cause = {"rule": rule.name, "target": target["Arn"], "event": event}
            refusal = self._refused and self._refused(target["Arn"], "events.amazonaws.com", rule.arn, target.get("RoleArn"))
            if refusal:
                self._dead_letter(rule, target, text, "NO_PERMISSIONS", refusal)
                continue
            if service == "states":
                self.started_by[_start_execution(target["Arn"], text)] = cause
            elif service == "lambda":
                trace_id = new_trace_id(self.clock.now())
                with self._lock:
                    self._traced[trace_root(trace_id) or ""] = cause
                send(target["Arn"], text, trace_id)
            else:
                send(target["Arn"], text)
            count += 1
        return count

    def _dead_letter(self, rule: Any, target: dict, text: str, code: str, message: str) -> None:
        """AWS: a delivery refused for permissions is not retried; it goes to the target's dead-letter
        queue, if it has one the rule may send to, with why (EventBridge User Guide, "Using
        dead-letter queues to process undelivered events")."""
        self.undelivered.append({"rule": rule.name, "target": target["Arn"], "error_code": code, "error_message": message})
        queue_arn = (target.get("DeadLetterConfig") or {}).get("Arn")
        if not queue_arn or self._refused(queue_arn, "events.amazonaws.com", rule.arn):
            return
        from moto.sqs.models import sqs_backends

        region, account, name = queue_arn.split(":")[3:6]
        attributes = {"RULE_ARN": rule.arn, "TARGET_ARN": target["Arn"], "ERROR_CODE": code, "ERROR_MESSAGE": message}
        sqs_backends[account][region].send_message(
            name, text, message_attributes={k: {"DataType": "String", "StringValue": v} for k, v in attributes.items()})

    @staticmethod
    def _target_input(target: dict, event: dict) -> str:
        """The text the target receives: constant Input as given, else JSON or transformed text."""
        if "Input" in target:
            return target["Input"]
        if "InputPath" in target:
            return _minified(_lookup(event, target["InputPath"])[1])
        if "InputTransformer" in target:
            return render_input_transformer(target["InputTransformer"], event)
        return _minified(event)

    def traced_start(self, trace_header: str, response: bytes) -> None:
        """A StartExecution answered ``response``: if its trace began at a delivery, that event started it."""
        with self._lock:
            cause = self._traced.get(trace_root(trace_header) or "")
        if cause is None:
            return
        try:
            arn = json.loads(response)["executionArn"]
        except (ValueError, KeyError, TypeError):
            return  # refused: no execution started
        self.started_by[arn] = cause

    # -- schedules ------------------------------------------------------------------------------
    def scheduled_rules(self) -> list[Any]:
        bus = self._backend().describe_event_bus("default")
        return [rule for rule in bus.rules.values() if rule.scheduled_expression]

    def next_firings(self) -> list[tuple[str, float]]:
        """(rule name, simulated epoch) of the next firing of each rule on the clock, soonest first."""
        names = {rule.arn: rule.name for rule in self.scheduled_rules()}
        with self._lock:
            due = [(names[arn], at) for arn, at in self._schedule_next.items() if arn in names and at != float("inf")]
        return sorted(due, key=lambda pair: pair[1])

    def fire_schedule(self, rule_name: str) -> int:
        """Fire a scheduled rule now, as EventBridge does at its scheduled time."""
        rule = next((r for r in self.scheduled_rules() if r.name == rule_name), None)
        if rule is None:
            raise KeyError(f"No scheduled rule named {rule_name}")
        event = aws_event(source="aws.events", detail_type="Scheduled Event", account=rule.account_id,
                          region=rule.region_name, at=self.clock.now(), resources=[rule.arn], detail={})
        return self._deliver(rule, event)

    def _clock_schedules(self) -> list[tuple[Any, float]]:
        """Each enabled rule that fires on the clock, with its next firing (learnt the first time it is seen)."""
        try:
            rules = self.scheduled_rules()
        except Exception:  # noqa: BLE001 - the backend may be mid-reset between runs
            return []
        now, armed = self.clock.now(), []
        for rule in rules:
            enabled = self._clock_rules is None or rule.name in self._clock_rules
            if rule.state != "ENABLED" or not enabled:
                continue
            with self._lock:
                due = self._schedule_next.get(rule.arn)
                if due is None:
                    due = _following(rule.scheduled_expression, now)
                    if due is None:
                        continue
                    self._schedule_next[rule.arn] = due
            armed.append((rule, due))
        return armed

    def next_due(self, until: float) -> float | None:
        """The clock's timer (emulator.clock.Timed): the soonest firing of a rule on the clock."""
        return min((due for _, due in self._clock_schedules()), default=None)

    def fire_due(self) -> None:
        """Fire each rule whose time the clock has passed, once per occurrence passed (an advance
        stops at each; a clock running fast may pass several between two looks)."""
        with self._firing:
            now = self.clock.now()
            for rule, due in self._clock_schedules():
                missed = 0
                while due <= now and missed < 100:
                    due, missed = _following(rule.scheduled_expression, due), missed + 1
                    if due is None:
                        break
                with self._lock:
                    self._schedule_next[rule.arn] = due if due is not None else float("inf")
                for _ in range(missed):
                    with self.clock.busy():
                        self.fire_schedule(rule.name)

    def _run_schedules(self) -> None:
        while not self._stop.wait(0.05):
            self.fire_due()

    def stop(self) -> None:
        self._stop.set()
        self.clock.remove_timer(self)


def _following(expression: str, after: float) -> float | None:
    """A scheduled rule's first occurrence after ``after``: one period on for ``rate()``; for
    ``cron()`` (UTC, EventBridge User Guide "Schedule expressions for rules") the next matching minute.
    None for an expression the emulator does not play."""
    period = rate_seconds(expression)
    if period is not None:
        return after + period
    try:
        return next_cron(expression, None, after)
    except UnplayedExpression:
        return None

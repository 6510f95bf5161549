"""The running CloudWatch of one LocalAws: metrics in, alarms evaluated on the simulated clock, changes out.

A state change, whether SetAlarmState's or an evaluation's, puts the "CloudWatch Alarm State
Change" event on the default bus through the EventRouter and runs the actions of the new state
(SNS topics: the documented notification). Evaluation runs on a thread that watches the simulated
clock: at each period boundary an alarm's window passes, as many as the clock skipped. It is one of
the clock's timers too: an advance or a jump stops at each boundary where an alarm changes state, so
the change and its actions run at their own time (emulator/clock).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Iterator

from emulator.clock import SimClock
from emulator.cloudwatch import alarms as logic
from emulator.cloudwatch.metrics import (
    SQS_INTERVAL,
    SQS_NAMESPACE,
    STATES_NAMESPACE,
    MetricStore,
    emf_metric_data,
    execution_metrics,
    queue_metrics,
)
from emulator.events import EventRouter

_POLL_SECONDS = 0.05
_log = logging.getLogger(__name__)


def _backend(account: str, region: str) -> Any:
    from moto.cloudwatch.models import cloudwatch_backends

    return cloudwatch_backends[account][region]


class CloudWatch:
    def __init__(self, clock: SimClock, router: EventRouter, account_id: str, region: str) -> None:
        self.clock = clock
        self.router = router
        self.account_id = account_id
        self.region = region
        # Each state change and what became of its actions, for the console: {"alarm", "from", "to",
        # "reason", "time", "actions": [{"target", "error"}]}.
        self.changes: list[dict] = []
        self._store = MetricStore()
        self._evaluated: dict[int, int] = {}  # id(moto alarm) -> the last boundary evaluated
        self._queues_sampled = 0
        self._lock = threading.RLock()
        self._stop = threading.Event()
        clock.add_timer(self)
        threading.Thread(target=self._run, name="cloudwatch-alarms", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        self.clock.remove_timer(self)

    # -- changes ----------------------------------------------------------------------------------
    def state_changed(self, model: Any, previous: logic.State) -> None:
        """``model`` (moto's alarm) has just left ``previous``: send the event, run the actions."""
        alarm, current = logic.Alarm.of(model), logic.State.of(model)
        event = logic.state_change_event(alarm, previous, current, self.account_id, self.region)
        change = {"alarm": alarm.name, "from": previous.value, "to": current.value, "reason": current.reason,
                  "time": current.timestamp, "actions": []}
        self.changes.append(change)
        self.router.put(event, account_id=self.account_id, region=self.region)
        if not alarm.actions_enabled:
            return
        for arn in alarm.actions_for(current.value):
            change["actions"].append({"target": arn, "error": self._run_action(arn, alarm, previous, current)})

    def _run_action(self, arn: str, alarm: logic.Alarm, previous: logic.State, current: logic.State) -> str | None:
        """Publish the notification to the action's topic; what went wrong, if anything."""
        if arn.split(":")[2] != "sns":
            return "the emulator runs SNS alarm actions only"
        from moto.sns.models import sns_backends

        subject, message = logic.sns_notification(alarm, previous, current, self.account_id, self.region)
        region, account = arn.split(":")[3:5]
        try:
            sns_backends[account][region].publish(message, arn=arn, subject=subject)
        except Exception as exc:  # noqa: BLE001 - a missing topic fails this action only, as on AWS
            _log.warning("Alarm %s could not notify %s: %s", alarm.name, arn, exc)
            return str(exc)
        return None

    def set_state(self, model: Any, state: logic.State) -> None:
        """An evaluation's verdict, recorded as moto records SetAlarmState's, then acted on."""
        self.state_changed(model, logic.record_state(model, state))

    # -- metrics in -------------------------------------------------------------------------------
    def on_execution_status(self, execution: Any, status: str | None = None) -> None:
        """Step Functions' execution metrics for an execution that started or ended."""
        if status is None:
            status = execution.exec_status.value if hasattr(execution.exec_status, "value") else str(execution.exec_status)
        start = logic.as_epoch(execution.start_date) if execution.start_date is not None else self.clock.now()
        data = execution_metrics(status, execution.state_machine_arn, now=self.clock.now(), start=start,
                                 redriven=getattr(execution, "redrive_count", 0) > 0)
        if data:
            _backend(execution.account_id, execution.region_name).put_metric_data(STATES_NAMESPACE, data)

    def read_function_log(self, lines: list[str]) -> None:
        """Take the embedded-metric-format lines of one invocation's log."""
        backend = _backend(self.account_id, self.region)
        for line in lines:
            for namespace, data in emf_metric_data(line):
                backend.put_metric_data(namespace, data)

    def sample_queues(self) -> None:
        """The depth of each queue an alarm watches, once a minute of simulated time, as SQS pushes it.

        At most one sample per look: a clock that jumped an hour gives one, of the depth now. Only
        watched metrics are sampled, so a clock that jumps all day does not fill memory with depths.
        """
        minute = logic.period_start(self.clock.now(), SQS_INTERVAL)
        if minute <= self._queues_sampled:
            return
        previous, self._queues_sampled = self._queues_sampled, minute
        from moto.sqs.models import sqs_backends

        backend = _backend(self.account_id, self.region)
        watched: dict[str, set[str]] = {}
        for alarm in list(backend.alarms.values()):
            if alarm.namespace == SQS_NAMESPACE:
                for dimension in alarm.dimensions:
                    if dimension.name == "QueueName":
                        watched.setdefault(dimension.value, set()).add(alarm.metric_name)
        queues = sqs_backends[self.account_id][self.region].queues
        for name, metric_names in watched.items():
            queue = queues.get(name)
            if queue is None:
                continue
            # Sent since the last sample: the messages still in the queue stamped in that span (one
            # received and deleted within a minute of its sending goes uncounted here).
            sent = sum(1 for m in list(queue._messages) if previous * 1000 < (m.sent_timestamp or 0) <= minute * 1000)
            data = queue_metrics(name, visible=queue.approximate_number_of_messages,
                                 not_visible=queue.approximate_number_of_messages_not_visible,
                                 delayed=queue.approximate_number_of_messages_delayed, sent=sent, now=minute)
            backend.put_metric_data(SQS_NAMESPACE, [d for d in data if d["MetricName"] in metric_names])

    # -- evaluation -------------------------------------------------------------------------------
    def evaluate(self) -> None:
        """Evaluate every alarm at each of its period boundaries the clock has passed since the last look."""
        with self._lock:
            self.sample_queues()
            backend = _backend(self.account_id, self.region)
            self._store.index(id(backend), backend.metric_data)
            now = self.clock.now()
            for model, alarm in self._alarms_with_a_boundary_passed(backend, now):
                self._evaluate_alarm(model, alarm, now)

    def _alarms_with_a_boundary_passed(self, backend: Any, until: float) -> Iterator[tuple[Any, logic.Alarm]]:
        """Each evaluable alarm with a period boundary passed since its last evaluation, up to ``until``
        (lock held), with its configuration. Whether one has passed is known from the alarm's period and
        last look alone: reading every alarm's whole configuration (``Alarm.of``) at each look, 20 a
        second and before each jump of the clock, took a quarter of a shard's busy time once a few
        hundred alarms existed."""
        for model in list(backend.alarms.values()):
            period = int(model.period or 0)
            if period <= 0:
                continue  # not evaluable
            updated = model.configuration_updated_timestamp
            updated_epoch = logic.as_epoch(updated) if updated is not None else 0.0
            if logic.period_start(until, period) <= self._last_look(model, period, updated_epoch):
                continue
            alarm = logic.Alarm.of(model)
            if alarm.evaluable:
                yield model, alarm

    def _last_look(self, model: Any, period: int, configuration_updated: float) -> int:
        """The boundary the alarm was last evaluated at; before that, the start of the period it was
        created (or updated) in, at whose end it is first evaluated."""
        return self._evaluated.get(id(model), logic.period_start(configuration_updated, period))

    def _boundaries(self, model: Any, alarm: logic.Alarm, until: float) -> tuple[dict, list[int]]:
        """The alarm's datapoints by period, and the boundaries after its last evaluation up to
        ``until`` at which its state can change (lock held)."""
        period, n = alarm.period, alarm.evaluation_periods
        latest = logic.period_start(until, period)
        last = self._last_look(model, period, alarm.configuration_updated)
        if latest <= last:
            return {}, []
        # Only boundaries where the window holds data, or has just lost it, can change the state;
        # between them every window is empty and gives what the first empty one gave.
        periods = self._store.periods(alarm, last - (n + 1) * period, latest)
        boundaries = {last + period, latest} | {s + k * period for s in periods for k in range(1, n + 2)}
        return periods, sorted(b for b in boundaries if last < b <= latest)

    def _evaluate_alarm(self, model: Any, alarm: logic.Alarm, now: float) -> None:
        periods, boundaries = self._boundaries(model, alarm, now)
        for at in boundaries:
            verdict = logic.evaluate(alarm, periods, at, logic.State.of(model))
            if verdict is not None:
                with self.clock.busy():
                    self.set_state(model, verdict)
        if boundaries:
            self._evaluated[id(model)] = boundaries[-1]

    # -- on the clock -------------------------------------------------------------------------------
    def next_due(self, until: float) -> float | None:
        """The clock's timer (emulator.clock.Timed): the first boundary up to ``until`` at which an
        alarm's state changes on the data there is now. Evaluations that change nothing are no event:
        an advance of a day does not stop at each of its 1,440 minutes."""
        with self._lock:
            backend = _backend(self.account_id, self.region)
            self._store.index(id(backend), backend.metric_data)
            changes = []
            for model, alarm in self._alarms_with_a_boundary_passed(backend, until):
                periods, boundaries = self._boundaries(model, alarm, until)
                state = logic.State.of(model)
                changes += [at for at in boundaries if logic.evaluate(alarm, periods, at, state) is not None][:1]
            return min(changes, default=None)

    def fire_due(self) -> None:
        self.evaluate()

    def _run(self) -> None:
        while not self._stop.wait(_POLL_SECONDS):
            try:
                self.evaluate()
            except Exception:  # noqa: BLE001 - keep evaluating; say what went wrong
                _log.exception("Alarm evaluation failed")

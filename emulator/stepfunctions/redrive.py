"""RedriveExecution: resume an unsuccessful Standard execution from the state that did not succeed.

moto raises NotImplementedError. Here a redrive starts a new engine run of the same execution (same
ARN, definition and history) at the top-level state that was entered and never exited, with the
input that state had and the variables the execution held; states that succeeded are not run again.
https://docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html
https://docs.aws.amazon.com/step-functions/latest/apireference/API_RedriveExecution.html
"""

from __future__ import annotations

import contextlib
import copy
import datetime as _datetime
import json
import threading
from typing import Any

from moto.core.exceptions import AWSError

from emulator.stepfunctions.patches import HISTORY_LIMIT_CAUSE

REDRIVABLE_STATUSES = ("FAILED", "TIMED_OUT", "ABORTED")
REDRIVABLE_PERIOD = _datetime.timedelta(days=14)  # from the execution's end


# On an execution's Environment: {inline Map or Parallel state: {iteration or branch index: output}}
# of the iterations or branches that succeeded in the state's latest run, and the ones a redrive
# carries into its next run.
PART_RESULTS, PART_CARRIED = "_emulator_part_results", "_emulator_part_carried"


class ExecutionNotRedrivable(AWSError):
    TYPE = "ExecutionNotRedrivable"
    STATUS = 400


def redrive_status(execution: Any) -> tuple[str, str | None]:
    """DescribeExecution's ``redriveStatus`` and ``redriveStatusReason`` for ``execution``, with
    the reasons the DescribeExecution page lists."""
    if execution.sm_type != "STANDARD":
        return "NOT_REDRIVABLE", "Redrive is not supported for EXPRESS state machines."
    if execution.status not in REDRIVABLE_STATUSES:
        return "NOT_REDRIVABLE", f"Execution is {execution.status} and cannot be redriven."
    if execution.cause == HISTORY_LIMIT_CAUSE:
        return "NOT_REDRIVABLE", "Execution history event limit exceeded."
    now = _datetime.datetime.now(_datetime.timezone.utc)  # moto's datetime: the simulated clock
    if execution.stop_date is not None and now - _as_utc(execution.stop_date) > REDRIVABLE_PERIOD:
        return "NOT_REDRIVABLE", "Execution redrivable period exceeded."
    return "REDRIVABLE", None


def _as_utc(moment: _datetime.datetime) -> _datetime.datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=_datetime.timezone.utc)


def _resume_point(events: list[dict], top_level_states: set[str]) -> tuple[str, Any]:
    """The top-level state entered last and never exited, and the input it was entered with."""
    open_states: dict[str, Any] = {}
    for event in events:
        if event["type"].endswith("StateEntered"):
            details = event["stateEnteredEventDetails"]
            if details["name"] in top_level_states:
                open_states[details["name"]] = json.loads(details.get("input") or "null")
        elif event["type"].endswith("StateExited"):
            open_states.pop(event["stateExitedEventDetails"]["name"], None)
    if not open_states:
        raise ExecutionNotRedrivable("Execution has no unsuccessful state to redrive from")
    return next(reversed(open_states.items()))


def install_redrive(on_status_change: Any) -> None:
    """AWS: RedriveExecution restarts a Standard execution that ended FAILED, TIMED_OUT or ABORTED
    in the last 14 days from its unsuccessful state, with that state's original input; succeeded
    states are not run again. The execution keeps its ARN, definition and history, which gains an
    ``ExecutionRedriven`` event; ``redriveCount`` (also ``$$.Execution.RedriveCount``) and
    ``redriveDate`` are set, the machine's TimeoutSeconds starts again and the status-change event
    is emitted again. An execution that is not redrivable (SUCCEEDED, RUNNING, Express, ended by
    the history event limit or more than 14 days ago) is refused with ``ExecutionNotRedrivable``.
    """
    from moto.stepfunctions import responses as sfn_responses
    from moto.stepfunctions.parser.api import ExecutionRedrivenEventDetails, ExecutionStatus, HistoryEventType
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventHistoryContext
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    class RedriveWorker(ExecutionWorker):
        """An engine run that continues ``previous``'s history and variables at ``state_name``."""

        def __init__(self, previous: Any, state_name: str, state_input: Any, redrive_count: int, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self._previous, self._state_name, self._state_input = previous, state_name, state_input
            self._redrive_count = redrive_count

        def _execution_logic(self) -> None:
            program = self._get_evaluation_entrypoint()
            self.env = env = self._get_evaluation_environment()
            env.states.context_object.context_object_data["Execution"]["RedriveCount"] = self._redrive_count
            manager = self._previous.event_manager
            manager.execution_env = env  # the history limit counts the whole history
            env.event_manager = manager
            env.variable_store = self._previous.variable_store
            # An inline Map or Parallel resumed here keeps the iterations or branches that succeeded.
            setattr(env, PART_CARRIED, {self._state_name: getattr(self._previous, PART_RESULTS, {}).get(self._state_name, {})})
            redriven_id = manager.add_event(
                context=EventHistoryContext(previous_event_id=len(manager._history_event_list)),
                event_type=HistoryEventType.ExecutionRedriven,
                event_details=EventDetails(
                    executionRedrivenEventDetails=ExecutionRedrivenEventDetails(redriveCount=self._redrive_count)
                ),
                update_source_event_id=False,
            )
            env.event_history_context = EventHistoryContext(previous_event_id=redriven_id)
            env.states.reset(input_value=self._state_input)
            program.start_at.start_at_name = self._state_name
            program.eval(env)
            self._execution_communication.terminated()

    def redrive_execution(self: Any) -> Any:
        arn = self._get_param("executionArn")
        execution = self.stepfunction_backend.describe_execution(arn)
        status, reason = redrive_status(execution)
        if status != "REDRIVABLE":
            raise ExecutionNotRedrivable(reason)
        previous = execution.exec_worker.env
        definition = json.loads(execution.state_machine.definition)
        state_name, state_input = _resume_point(previous.event_manager.get_event_history(), set(definition["States"]))
        execution.redrive_count = getattr(execution, "redrive_count", 0) + 1
        execution.redrive_date = _datetime.datetime.now(_datetime.timezone.utc)
        execution.exec_status, execution.stop_date = ExecutionStatus.RUNNING, None
        execution.error = execution.cause = execution.output = None
        original = execution.exec_worker
        execution.exec_worker = RedriveWorker(
            previous, state_name, state_input, execution.redrive_count,
            evaluation_details=original._evaluation_details,
            exec_comm=execution._get_start_execution_worker_comm(),
            cloud_watch_logging_session=original._cloud_watch_logging_session,
            activity_store=original._activity_store,
            mock_test_case=original._mock_test_case,  # a mocked execution stays mocked, its counts go on
        )
        execution.exec_worker.start()
        on_status_change(execution, "RUNNING")
        return sfn_responses.ActionResult({"redriveDate": execution.redrive_date})

    sfn_responses.StepFunctionResponse.redrive_execution = redrive_execution


def install_redrive_filter() -> None:
    """AWS: ListExecutions' ``redriveFilter`` lists only the executions that were redriven
    (REDRIVEN) or never were (NOT_REDRIVEN); moto ignored it.
    https://docs.aws.amazon.com/step-functions/latest/apireference/API_ListExecutions.html
    """
    from moto.stepfunctions import responses as sfn_responses
    from moto.stepfunctions.models import StepFunctionBackend
    from moto.stepfunctions.utils import PAGINATION_MODEL
    from moto.utilities.paginator import paginate

    listing = threading.local()
    original_response = sfn_responses.StepFunctionResponse.list_executions
    unpaginated = StepFunctionBackend.list_executions.__wrapped__

    def list_executions_response(self: Any) -> Any:
        listing.redrive_filter = self._get_param("redriveFilter")
        try:
            return original_response(self)
        finally:
            listing.redrive_filter = None

    # The filter applies before paging, so every page holds only matching executions.
    @paginate(pagination_model=PAGINATION_MODEL)
    def list_executions(self: Any, state_machine_arn: str, status_filter: str | None = None) -> list:
        executions = unpaginated(self, state_machine_arn, status_filter)
        wanted = getattr(listing, "redrive_filter", None)
        if wanted is None:
            return executions
        return [e for e in executions if (getattr(e, "redrive_count", 0) > 0) == (wanted == "REDRIVEN")]

    sfn_responses.StepFunctionResponse.list_executions = list_executions_response
    StepFunctionBackend.list_executions = list_executions


@contextlib.contextmanager
def _state_run(env: Any, name: str) -> Any:
    """One run of the Map or Parallel state ``name``: it records its parts' outputs afresh, and only
    its first run after a redrive finds the carried ones to reuse."""
    execution_env = env.event_manager.execution_env
    carried = getattr(execution_env, PART_CARRIED, {})
    carried.setdefault(name, {})
    setattr(execution_env, PART_CARRIED, carried)
    results = getattr(execution_env, PART_RESULTS, {})
    results[name] = {}
    setattr(execution_env, PART_RESULTS, results)
    try:
        yield
    finally:
        carried.pop(name, None)


def install_inline_map_redrive() -> None:
    """AWS: a redriven inline Map runs again only the iterations that failed, were aborted or never
    started; the others keep the output they had. (A Map inside a Map iteration runs again whole.)
    https://docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html
    """
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.inline_iteration_component import (
        InlineIterationComponent,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.inline_item_processor_worker import (
        InlineItemProcessorWorker,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iterator.inline_iterator_worker import (
        InlineIteratorWorker,
    )

    def eval_body(self: Any, env: Any, _original: Any = InlineIterationComponent._eval_body) -> None:
        with _state_run(env, env.stack[-1].state_name):
            _original(self, env)

    InlineIterationComponent._eval_body = eval_body

    for worker in (InlineItemProcessorWorker, InlineIteratorWorker):
        original_job = worker._eval_job

        def eval_job(self: Any, env: Any, job: Any, _original: Any = original_job) -> None:
            execution_env = env.event_manager.execution_env
            carried = getattr(execution_env, PART_CARRIED, {}).get(self._work_name, {})
            if job.job_index in carried:
                job.job_output = copy.deepcopy(carried[job.job_index])
            else:
                _original(self, env, job)
            if not isinstance(job.job_output, Exception):
                getattr(execution_env, PART_RESULTS)[self._work_name][job.job_index] = job.job_output

        worker._eval_job = eval_job


def install_parallel_redrive() -> None:
    """AWS: a redriven Parallel state runs again only the branches that did not succeed; the others
    keep the output they had. (A Parallel inside a branch or a Map iteration runs again whole.)
    https://docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html
    """
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branch_worker import BranchWorker
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel.branches_decl import BranchesDecl
    from moto.stepfunctions.parser.asl.eval.program_state import ProgramEnded

    def eval_body(self: Any, env: Any, _original: Any = BranchesDecl._eval_body) -> None:
        name = env.states.context_object.context_object_data["State"]["Name"]
        for index, program in enumerate(self.programs):
            program._emulator_branch = (env.event_manager.execution_env, name, index)
        with _state_run(env, name):
            _original(self, env)

    def thread_routine(self: Any) -> None:
        execution_env, name, index = self._program._emulator_branch
        carried = getattr(execution_env, PART_CARRIED, {}).get(name, {})
        if index in carried:
            self.env.states.reset(input_value=copy.deepcopy(carried[index]))
        else:
            self._program.eval(self.env)
            if isinstance(self.env.program_state(), ProgramEnded):
                getattr(execution_env, PART_RESULTS)[name][index] = self.env.states.get_input()
        self._branch_worker_comm.on_terminated(env=self.env)

    BranchesDecl._eval_body = eval_body
    BranchWorker._thread_routine = thread_routine

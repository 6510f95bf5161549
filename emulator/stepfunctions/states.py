"""Choice, Map, Parallel and Task states as AWS documents them: Assign on rules, variable scopes, inner errors, payload limits."""

from __future__ import annotations

import json
from typing import Any

from emulator.patches._moto import error_name, states_error


def install_choice_rule_assign() -> None:
    """AWS: a JSONPath Choice rule may carry ``Assign``; moto's parser dropped it (``assign=None``)
    unless the rule was wrapped in ``And``/``Or``, so a loop counting by rule-level Assign never ended.
    https://docs.aws.amazon.com/step-functions/latest/dg/state-choice.html
    """
    from moto.stepfunctions.parser.asl.antlr.runtime.ASLParser import ASLParser
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    original = Preprocessor.visitChoice_rule_comparison_variable

    def visit(self: Any, ctx: Any) -> Any:
        rule = original(self, ctx)
        if rule.assign is None:
            for child in ctx.children:  # each a Comparison_variable_stmtContext around one field
                field = child.getChild(0) if isinstance(child, ASLParser.Comparison_variable_stmtContext) else None
                if isinstance(field, ASLParser.Assign_declContext):
                    rule.assign = self.visit(field)
        return rule

    Preprocessor.visitChoice_rule_comparison_variable = visit


def install_no_choice_matched() -> None:
    """AWS: a Choice state whose rules all fail and that has no Default fails the state with
    ``States.NoChoiceMatched``, which Retry and Catch can match; moto raised States.Runtime.
    https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html
    """
    from moto.stepfunctions.parser.asl.component.state.choice.state_choice import StateChoice

    original = StateChoice._eval_state

    def eval_state(self: Any, env: Any) -> None:
        try:
            original(self, env)
        except RuntimeError:
            if self.default_state is not None:
                raise
            cause = f"No Choice Rule of state '{self.name}' matched and it has no Default."
            raise states_error(env, "States.NoChoiceMatched", cause) from None

    StateChoice._eval_state = eval_state


def install_variable_comparison_order() -> None:
    """AWS: ``"Variable": "$i", "NumericLessThanPath": "$n"`` is true when i < n. When the path is a
    workflow variable, moto compared n < i: every *Path operator on a variable ran backwards.
    https://docs.aws.amazon.com/step-functions/latest/dg/state-choice.html
    """
    from moto.stepfunctions.parser.asl.component.state.choice.comparison.comparison_func import (
        ComparisonFuncStringVariableSample,
        ComparisonFuncValue,
    )

    def eval_body(self: Any, env: Any) -> None:
        # The stack holds [..., compared value]; the operator pops the compared value and reads the
        # path ("$") from what lies under it, so the sampled variable goes beneath.
        self.string_variable_sample.eval(env=env)
        env.stack[-1], env.stack[-2] = env.stack[-2], env.stack[-1]
        ComparisonFuncValue._eval_body(self, env)
        del env.stack[-2]

    ComparisonFuncStringVariableSample._eval_body = eval_body


def install_inner_error_names() -> None:
    """AWS: a ``States.*`` error raised inside a Map iteration or a Parallel branch reaches the
    outer state (its Retry and Catch) with its own name and cause. moto rebuilt it as a custom
    error name, which refuses the ``States.`` prefix, so the outer state saw a ValueError instead.
    https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html
    """
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import iteration_worker
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel import branches_decl
    from moto.stepfunctions.parser.asl.component.state.fail import state_fail

    iteration_worker.CustomErrorName = error_name
    branches_decl.CustomErrorName = error_name
    state_fail.CustomErrorName = error_name  # a Fail state may name a States.* error too


def install_distributed_map_scope() -> None:
    """AWS: a Distributed Map's child workflow executions cannot read the parent's variables (pass
    them in with ItemSelector); an inline Map iteration or Parallel branch can read them but not
    write them. moto gave distributed children the parent's variables too.
    https://docs.aws.amazon.com/step-functions/latest/dg/workflow-variables.html
    """
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.itemprocessor.distributed_item_processor_worker import (
        DistributedItemProcessorWorker,
    )
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.iterator.distributed_iterator_worker import (
        DistributedIteratorWorker,
    )
    from moto.stepfunctions.parser.asl.eval.variable_store import VariableStore

    for worker in (DistributedItemProcessorWorker, DistributedIteratorWorker):
        original_eval_input = worker._eval_input

        # The ItemSelector is evaluated in the Map state's scope; the child starts with none.
        def eval_input(self: Any, env_frame: Any, _original: Any = original_eval_input) -> None:
            _original(self, env_frame=env_frame)
            env_frame.variable_store = VariableStore()

        worker._eval_input = eval_input


def install_map_items_default() -> None:
    """AWS: a JSONata Map without ``Items`` iterates over its state input, as a JSONPath Map without
    ``ItemsPath`` does, and an input that is not an array fails the state with
    ``States.QueryEvaluationError``, "Map state input must be an array but was: <value>" (AWS's recorded
    executions); moto iterated over nothing and failed with States.Runtime.
    https://docs.aws.amazon.com/step-functions/latest/dg/state-map-inline.html
    """
    from moto.stepfunctions.parser.asl.component.common.string.string_expression import StringJSONata
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.items.items import ItemsJSONata
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.state_map import StateMap

    from emulator.stepfunctions.jsonata import compact, evaluation_failed

    class StateInputItems(ItemsJSONata):
        def _eval_body(self, env: Any) -> None:
            self.string_jsonata.eval(env=env)
            if not isinstance(env.stack[-1], list):
                raise evaluation_failed(env, f"Map state input must be an array but was: {compact(env.stack[-1])}")

    original = StateMap.from_state_props

    def from_state_props(self: Any, state_props: Any) -> None:
        original(self, state_props)
        if not self._is_language_query_jsonpath() and self.items is None and self.item_reader is None:
            self.items = StateInputItems(StringJSONata("$states.input"))

    StateMap.from_state_props = from_state_props


def install_distributed_map_tolerated_failures() -> None:
    """AWS: a Distributed Map fails with ``States.ExceedToleratedFailureThreshold`` once more of
    its items fail (or time out) than ``ToleratedFailureCount`` / ``ToleratedFailurePercentage``
    allow, both 0 by default; moto parsed both and enforced neither, so a failed child left null
    in the results and the Map succeeded.
    https://docs.aws.amazon.com/step-functions/latest/dg/state-map-distributed.html
    """
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.distributed_iteration_component import (
        DistributedIterationComponent,
    )

    original = DistributedIterationComponent._map_run

    def map_run(self: Any, env: Any, eval_input: Any) -> None:
        original(self, env, eval_input)
        items = eval_input.map_run_record.item_counter
        failed, total = items.failed.get() + items.timed_out.get(), items.total.get()
        if failed > eval_input.tolerated_failure_count or (
            total and 100 * failed / total > eval_input.tolerated_failure_percentage
        ):
            cause = "The specified tolerated failure threshold was exceeded"
            raise states_error(env, "States.ExceedToleratedFailureThreshold", cause)

    DistributedIterationComponent._map_run = map_run


# "The maximum input or output size for a task, state, or execution is 256 KiB of data as a UTF-8
# encoded string" (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html).
PAYLOAD_LIMIT_BYTES = 256 * 1024


def install_task_result_limit() -> None:
    """AWS: a Lambda task whose function answers more than 256 KiB fails with
    ``States.DataLimitExceeded`` (the connector's output is over the payload quota), whatever the
    state keeps of it; moto passed any answer on.
    https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html
    """
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    original = lambda_eval_utils.execute_lambda_function_integration

    def execute_lambda_function_integration(env: Any, *args: Any, **kwargs: Any) -> None:
        original(env, *args, **kwargs)
        payload = env.stack[-1].get("Payload") if isinstance(env.stack[-1], dict) else None
        size = len(json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode())
        if size > PAYLOAD_LIMIT_BYTES:
            env.stack.pop()
            cause = (
                f"The state/task 'lambda' returned a result with a size exceeding the maximum number of bytes "
                f"service limit ({size} bytes, limit {PAYLOAD_LIMIT_BYTES})."
            )
            raise states_error(env, "States.DataLimitExceeded", cause)

    lambda_eval_utils.execute_lambda_function_integration = execute_lambda_function_integration


def install_states_all_exceptions() -> None:
    """AWS: ``States.ALL`` matches any error but ``States.DataLimitExceeded`` and ``States.Runtime``;
    a Retry or Catch must name ``States.DataLimitExceeded`` to match it, and nothing matches
    ``States.Runtime``. moto's ``States.ALL`` matched both.
    https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html
    """
    from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl

    original = ErrorEqualsDecl._eval_body

    def eval_body(self: Any, env: Any) -> None:
        error_name = env.stack[-1]
        name = getattr(error_name, "error_name", None)
        if name == "States.Runtime" or (
            name == "States.DataLimitExceeded" and all(n.error_name != name for n in self.error_names)
        ):
            env.stack.pop()
            env.stack.append(False)
            return
        original(self, env)

    ErrorEqualsDecl._eval_body = eval_body


def install_item_reader_failed() -> None:
    """AWS: a Distributed Map whose ItemReader cannot read its source (S3 throttling, a missing
    object...) fails with ``States.ItemReaderFailed``, which Retry and Catch can match; moto let the
    S3 client's error through under the client's own name.
    https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html
    """
    from botocore.exceptions import ClientError
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.item_reader.eval.resource_eval_s3 import (
        ResourceEvalS3,
    )

    original = ResourceEvalS3.eval_resource

    def eval_resource(self: Any, env: Any) -> None:
        try:
            original(self, env)
        except ClientError as error:
            raise states_error(env, "States.ItemReaderFailed", f"Item reader failed: {error}") from None

    ResourceEvalS3.eval_resource = eval_resource


_PENDING_ASSIGNMENTS = "_emulator_pending_assignments"


def install_assign_after_output() -> None:
    """AWS: every field of a state reads the variables as they were when the state was entered, its
    output included; what ``Assign`` sets is seen from the next state on (AWS's recorded executions:
    a Pass state that assigns ``answer`` outputs the old ``answer`` through ``OutputPath: $answer``).
    moto set each variable as soon as Assign was evaluated, before OutputPath or Output.
    https://docs.aws.amazon.com/step-functions/latest/dg/workflow-variables.html
    """
    from moto.stepfunctions.parser.asl.component.common.assign.assign_decl import AssignDecl
    from moto.stepfunctions.parser.asl.component.state.state import CommonStateField

    def assign(self: Any, env: Any) -> None:
        declarations: dict[str, Any] = {}
        for binding in self.declaration_bindings:
            binding.eval(env=env)
            declarations.update(env.stack.pop())
        getattr(env, _PENDING_ASSIGNMENTS).update(declarations)

    original_body = CommonStateField._eval_body

    def eval_body(self: Any, env: Any) -> None:
        setattr(env, _PENDING_ASSIGNMENTS, {})  # a failed attempt that a Retry repeats assigns nothing
        original_body(self, env)

    original_exited = CommonStateField._get_state_exited_event_details

    def exited_event_details(self: Any, env: Any) -> Any:
        # Reached once the state's output is final, just before StateExited reports what it assigned.
        for name, value in getattr(env, _PENDING_ASSIGNMENTS, {}).items():
            env.variable_store.set(variable_identifier=name, variable_value=value)
        setattr(env, _PENDING_ASSIGNMENTS, {})
        return original_exited(self, env)

    AssignDecl._eval_body = assign
    CommonStateField._eval_body = eval_body
    CommonStateField._get_state_exited_event_details = exited_event_details

"""Choice, Map and Parallel states as AWS documents them: Assign on rules, variable scopes, inner errors."""

from __future__ import annotations

from typing import Any


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


def install_choice_assign() -> None:
    """AWS: a Choice's state-level ``Assign`` applies whichever rule matched (or Default), beside the
    matched rule's own ``Assign``; like the bindings of one Assign, all of them read the values from
    before the state. moto applied the state-level Assign only when Default was taken, and a rule's
    Assign as soon as the rule matched. Where both assign one variable, the rule's value is kept.
    https://docs.aws.amazon.com/step-functions/latest/dg/state-choice.html
    """
    from moto.stepfunctions.parser.asl.component.state.choice.state_choice import StateChoice

    def declarations(assign_decl: Any, env: Any) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for binding in assign_decl.declaration_bindings:
            binding.eval(env=env)
            values.update(env.stack.pop())
        return values

    def eval_state(self: Any, env: Any) -> None:
        matched = None
        for rule in self.choices_decl.rules:
            rule.comparison.eval(env)
            if env.stack.pop() is True:
                if not rule.next_stmt:
                    raise RuntimeError(f"Missing Next definition for state_choice rule '{rule}' in choices '{self}'.")
                matched = rule
                break
        if matched is None and self.default_state is None:
            raise RuntimeError(f"No branching option reached in state {self.name}")
        assigned: dict[str, Any] = {}
        for assign_decl in (self.assign_decl, matched.assign if matched else None):
            if assign_decl is not None:
                assigned.update(declarations(assign_decl, env))
        for name, value in assigned.items():
            env.variable_store.set(variable_identifier=name, variable_value=value)
        if matched is not None and matched.output:
            matched.output.eval(env=env)
        env.stack.append(matched.next_stmt.name if matched else self.default_state.state_name)

    def eval_state_output(self: Any, env: Any) -> None:
        next_state_name: str = env.stack.pop()
        if self.default_state and self.default_state.state_name == next_state_name and self.output:
            self.output.eval(env=env)
        if self._is_language_query_jsonpath():
            if self.output_path:
                self.output_path.eval(env=env)
            else:
                env.states.reset(input_value=env.stack.pop())
        env.next_state_name = next_state_name

    StateChoice._eval_state = eval_state
    StateChoice._eval_state_output = eval_state_output


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
    from moto.stepfunctions.parser.asl.component.common.error_name.custom_error_name import CustomErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.error_name import ErrorName
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration import iteration_worker
    from moto.stepfunctions.parser.asl.component.state.exec.state_parallel import branches_decl
    from moto.stepfunctions.parser.asl.component.state.fail import state_fail

    def error_name(error_name: str | None) -> ErrorName:
        if error_name is not None and error_name.startswith("States."):
            try:
                return StatesErrorName.from_name(error_name)
            except ValueError:
                return ErrorName(error_name=error_name)
        return CustomErrorName(error_name=error_name)

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

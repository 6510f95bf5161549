"""Changes to moto that make the deployed app behave as it does on AWS: the one list of them.

Every patch but those under "Speed" corrects a difference between moto (the release requirements-dev.txt pins) and
documented AWS behaviour; its docstring states that behaviour and tests/test_emulator_fidelity.py (or
tests/test_emulator_conformance.py; for CloudWatch tests/test_emulator_cloudwatch.py; for CloudWatch Logs tests/test_emulator_logs.py; for SES tests/test_emulator_sms.py; for what `cdk deploy
--hotswap` calls tests/test_emulator_hotswap_apis.py; for IAM tests/test_iam_execution.py) pins it. Those under "Speed" change only how fast
moto works.
Patches are process-wide and installed once, in this order, by ``install_all``; none installs another.
Each lives beside the rest of its service's emulation (``emulator/<service>/patches.py`` and, for
Step Functions, the engine's modules in ``emulator/stepfunctions/``); this list is the one place that
says which run.
"""

from __future__ import annotations

from typing import Any, Callable

from emulator.awslambda import patches as awslambda
from emulator.clock import SimClock
from emulator.cloudformation import custom_resources
from emulator.cloudformation import patches as cloudformation
from emulator.cloudwatch import patches as cloudwatch
from emulator.dynamodb import patches as dynamodb
from emulator.iam import enforcement
from emulator.logs import patches as logs
from emulator.patches import dispatch, serialize
from emulator.ses import patches as ses
from emulator.stepfunctions import engine_clock, jsonata, mocks, redrive, states, test_state
from emulator.stepfunctions import patches as stepfunctions


def install_all(
    clock: SimClock, *, lambda_runtime: Any, on_status_change: Callable[..., None], on_alarm_change: Callable[..., None],
    mock_config: Callable[[], Any], account_concurrency: Callable[[], int], iam: Callable[[], Any],
    email_sandbox: Callable[[], bool],
) -> None:
    """``iam()`` is the running emulator's ``emulator.iam.enforcement.Iam``, or None when IAM is not enforced;
    ``email_sandbox()`` whether its SES account is in the sandbox."""
    # Simulated time in the Step Functions engine.
    engine_clock.install_engine_clock(clock)
    engine_clock.install_program_timeout(clock)
    engine_clock.install_wait_timestamp_utc(clock)
    engine_clock.install_progress_reports(clock)
    engine_clock.install_engine_calls_hand_over(clock, lambda role_arn: iam().credentials(role_arn) if iam() else None)
    engine_clock.install_service_clock(clock)
    # Step Functions API and engine.
    stepfunctions.install_executing_backend()
    stepfunctions.install_empty_filter_result()
    stepfunctions.install_start_execution_checks()
    stepfunctions.install_describe_execution()
    stepfunctions.install_stop_execution()
    stepfunctions.install_status_change_events(on_status_change)
    stepfunctions.install_history_limit()
    stepfunctions.install_callback_tasks()
    stepfunctions.install_context_object()
    stepfunctions.install_history_paging()
    stepfunctions.install_definition_string_escapes()
    stepfunctions.install_jsonpath_bracket_keys()
    stepfunctions.install_execution_logging()
    stepfunctions.install_query_language_scopes_per_parse()
    states.install_inner_error_names()
    states.install_task_result_limit()
    states.install_states_all_exceptions()
    states.install_item_reader_failed()
    # JSONata and workflow variables.
    jsonata.install_jsonata_evaluator()
    jsonata.install_field_paths()
    jsonata.install_integer_fields()
    jsonata.install_jsonata_clock(clock)
    jsonata.install_jsonata_wait_timestamp()
    jsonata.install_jsonata_map_items()
    states.install_choice_rule_assign()
    states.install_no_choice_matched()
    states.install_variable_comparison_order()
    states.install_assign_after_output()
    states.install_distributed_map_scope()
    states.install_map_items_default()
    states.install_distributed_map_tolerated_failures()
    # TestState and RedriveExecution.
    test_state.install_test_state()
    redrive.install_redrive(on_status_change)
    redrive.install_redrive_filter()
    stepfunctions.install_list_executions_paging()  # pages the listing the redrive filter narrows
    redrive.install_inline_map_redrive()
    redrive.install_parallel_redrive()
    # Mocked service integrations (Step Functions Local's mock configuration).
    mocks.install_mocked_integrations(mock_config)
    # Lambda.
    awslambda.install_lambda_runtime(lambda_runtime)
    awslambda.install_function_urls(lambda_runtime)
    awslambda.install_lambda_invocation_type()
    awslambda.install_lambda_task_error_names()
    awslambda.install_reserved_concurrency_minimum(account_concurrency)
    awslambda.install_account_settings(account_concurrency)
    awslambda.install_logging_config()
    # DynamoDB.
    dynamodb.install_dynamodb_exports(clock)
    dynamodb.install_atomic_writes()
    dynamodb.install_malformed_expressions_refused()
    # CloudFormation.
    cloudformation.install_cloudformation_fidelity()
    cloudformation.install_describe_type()
    cloudformation.install_change_sets_by_stack()
    cloudformation.install_previous_ssm_parameter_values()
    cloudformation.install_resource_failures()
    cloudformation.install_dependents_first_deletion()
    cloudformation.install_retained_on_removal()
    custom_resources.install_custom_resources(clock)  # after install_cloudformation_fidelity: it wraps its change sets
    # CloudWatch.
    cloudwatch.install_initial_alarm_state()
    cloudwatch.install_alarm_state_changes(on_alarm_change)
    cloudwatch.install_describe_alarm_history()
    cloudwatch.install_account_wide_dashboards()
    # CloudWatch Logs.
    logs.install_filter_log_events()
    # SES v2.
    ses.install_identities_verified_at_creation()
    ses.install_sandbox_and_mail_log(email_sandbox)
    # IAM.
    enforcement.install_enforcement(iam)
    enforcement.install_trust_checks(iam)
    # Speed.
    stepfunctions.install_parse_once_per_definition()
    stepfunctions.install_jsonpath_parse_once()
    dynamodb.install_condition_expressions_parsed_once()
    dynamodb.install_queries_read_one_partition()
    dispatch.install_service_found_once_per_host()
    dispatch.install_backend_found_without_the_lock()
    dispatch.install_actions_listed_once_per_class()
    dispatch.install_request_lines_made_only_when_logged()
    cloudformation.install_json_templates_read_as_json()
    serialize.install_absent_members_skipped()
    serialize.install_timestamps_converted_once()

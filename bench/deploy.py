"""Deploys what the benchmark adds beside the app: the seed machines with their stand-in Lambdas,
and the bench-only job runners, all through the emulator's APIs (boto3), as zip functions."""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

from emulator.session import Deployment
from stacks.common.definitions import fill_placeholders

BENCH_DIR = Path(__file__).resolve().parent
SEEDS_DIR = BENCH_DIR / "seeds"
RUNNERS_DIR = BENCH_DIR / "runners"
SHARED_CODE_DIR = BENCH_DIR.parent / "lambdas" / "shared_layer" / "python"

SEED004_BUCKET = "bench-seed004-data"
SEED002_ATTEMPTS_TABLE = "bench-seed002-attempts"
# Lambda's default; the seeds name no memory size.
SEED_MEMORY_MB = 128
# Far more than the stand-ins need, so a loaded machine never turns into a Sandbox.Timedout.
SEED_TIMEOUT_SECONDS = 60
# The bench runners sleep through the whole job: one hour plus a margin. The emulator honours any
# timeout; on AWS a job this long runs on Batch or ECS, which the machines drive the same way.
RUNNER_TIMEOUT_SECONDS = 2 * 3600


@dataclass(frozen=True)
class BenchMachines:
    """State machine ARNs the benchmark runs beside the app's own."""

    seed001_alert: str
    seed002_whole_map: str
    seed002_failed_only: str
    seed004_poller: str
    job_runner_name: str
    callback_long: str


def _zip(files: dict[str, Path]) -> bytes:
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, path in sorted(files.items()):
            zf.write(path, name)
    return archive.getvalue()


def _shared_code() -> dict[str, Path]:
    return {
        str(path.relative_to(SHARED_CODE_DIR)): path
        for path in sorted((SHARED_CODE_DIR / "patterns_common").glob("*.py"))
    }


class _Deployer:
    def __init__(self, deployment: Deployment) -> None:
        self.deployment = deployment
        self.lam = deployment.client("lambda")
        self.sfn = deployment.client("stepfunctions")
        # The seed designs' stand-ins are measured for cost, not permissions: their functions and machines
        # may do anything (the emulator enforces IAM, and would refuse a role Lambda and Step Functions
        # may not assume).
        iam = deployment.client("iam")
        self.role_arn = iam.create_role(RoleName="bench-stand-ins", AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {
                "Service": ["lambda.amazonaws.com", "states.amazonaws.com"]}}]}))["Role"]["Arn"]
        iam.put_role_policy(RoleName="bench-stand-ins", PolicyName="everything", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))

    def function(self, name: str, source: Path, *, env: dict[str, str], timeout: int = SEED_TIMEOUT_SECONDS,
                 with_shared_code: bool = False) -> str:
        files = {source.name: source, **(_shared_code() if with_shared_code else {})}
        return self.lam.create_function(
            FunctionName=name,
            Runtime="python3.13",
            Role=self.role_arn,
            Handler=f"{source.stem}.lambda_handler",
            Code={"ZipFile": _zip(files)},
            Timeout=timeout,
            MemorySize=SEED_MEMORY_MB,
            Environment={"Variables": env},
        )["FunctionArn"]

    def machine(self, name: str, definition: str, substitutions: dict[str, str]) -> str:
        filled = fill_placeholders(definition, substitutions, name)
        return self.sfn.create_state_machine(name=name, definition=filled, roleArn=self.role_arn)["stateMachineArn"]


def _seed_lambda(name: str) -> Path:
    return SEEDS_DIR / "lambdas" / f"{name}.py"


def _seed_definition(file_name: str) -> str:
    return (SEEDS_DIR / file_name).read_text()


def deploy_bench(deployment: Deployment) -> BenchMachines:
    """Create the seed machines, their stand-ins and the bench runners; return the machines' ARNs."""
    d = _Deployer(deployment)
    deployment.client("s3").create_bucket(Bucket=SEED004_BUCKET)
    deployment.client("dynamodb").create_table(
        TableName=SEED002_ATTEMPTS_TABLE,
        KeySchema=[{"AttributeName": "execution_id", "KeyType": "HASH"}, {"AttributeName": "item_id", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "execution_id", "AttributeType": "S"},
                              {"AttributeName": "item_id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    alert_table = deployment.output("AlertNotificationStack", "AlertTableName")

    seed001 = {
        "FetchNotificationCountFunctionArn": d.function(
            "seed001_fetch_notification_count", _seed_lambda("seed001_fetch_notification_count"),
            env={"ALERT_TABLE_NAME": alert_table}),
        "DecrementNotificationUserCountFunctionArn": d.function(
            "seed001_decrement_notification_user_count", _seed_lambda("seed001_decrement_notification_user_count"), env={}),
        "NotifyAlertsFunctionArn": d.function(
            "seed001_notify_alerts", _seed_lambda("seed001_notify_alerts"),
            env={"SLACK_WEBHOOK_URL": deployment.slack.url}),
    }
    random_value = {"RandomValueFunctionArn": d.function(
        "seed002_random_value", _seed_lambda("seed002_random_value"), env={"ATTEMPTS_TABLE_NAME": SEED002_ATTEMPTS_TABLE})}
    for name in ("sfn_pattern_job_poll_1_run_job", "sfn_pattern_job_poll_2_check_status"):
        d.function(name, _seed_lambda(name), env={"BUCKET": SEED004_BUCKET})
    d.function("sfn_pattern_job_poll_0_job_runner", _seed_lambda("sfn_pattern_job_poll_0_job_runner"),
               env={"BUCKET": SEED004_BUCKET}, timeout=RUNNER_TIMEOUT_SECONDS)

    job_bucket = deployment.output("JobPollerStack", "JobBucketName")
    runner_name = "bench_job_runner"
    d.function(runner_name, RUNNERS_DIR / "long_job_runner.py", env={"JOB_BUCKET_NAME": job_bucket},
               timeout=RUNNER_TIMEOUT_SECONDS, with_shared_code=True)
    callback_runner_arn = d.function("bench_callback_runner", RUNNERS_DIR / "long_callback_job_runner.py", env={},
                                     timeout=RUNNER_TIMEOUT_SECONDS, with_shared_code=True)
    callback_definition = d.sfn.describe_state_machine(stateMachineArn=deployment.machine_arn("callback"))["definition"]
    app_runner_arn = _callback_runner_arn(callback_definition)

    return BenchMachines(
        seed001_alert=d.machine("seed001-alert-notification", _seed_definition("alert_notification_001.asl.json"), seed001),
        seed002_whole_map=d.machine("seed002-whole-map-retry", _seed_definition("map_retry_002_whole_map.asl.json"),
                                    random_value),
        seed002_failed_only=d.machine("seed002-failed-only-retry",
                                      _seed_definition("map_retry_002_failed_only.asl.json"), random_value),
        seed004_poller=d.machine("seed004-job-poller", _seed_definition("job_poller_004.asl.json"), {}),
        job_runner_name=runner_name,
        callback_long=d.machine("bench-callback-long-jobs", callback_definition.replace(app_runner_arn, callback_runner_arn), {}),
    )


def _callback_runner_arn(definition: str) -> str:
    task = json.loads(definition)["States"]["Run Job And Wait For Callback"]
    return task["Arguments"]["FunctionName"]


def use_runner(deployment: Deployment, runner_name: str) -> str:
    """Point the S3 poller's Run Job at ``runner_name`` (its JOB_RUNNER_FUNCTION_NAME); returns the previous one."""
    lam = deployment.client("lambda")
    for page in lam.get_paginator("list_functions").paginate():
        for function in page["Functions"]:
            variables = function.get("Environment", {}).get("Variables", {})
            if "JOB_RUNNER_FUNCTION_NAME" in variables:
                _grant_invoke(deployment, function["Role"], lam.get_function(FunctionName=runner_name)["Configuration"]["FunctionArn"])
                lam.update_function_configuration(
                    FunctionName=function["FunctionName"],
                    Environment={"Variables": {**variables, "JOB_RUNNER_FUNCTION_NAME": runner_name}},
                )
                return variables["JOB_RUNNER_FUNCTION_NAME"]
    raise LookupError("no deployed function has JOB_RUNNER_FUNCTION_NAME (the S3 poller's Run Job)")


def _grant_invoke(deployment: Deployment, role_arn: str, function_arn: str) -> None:
    """Run Job's role may invoke ``function_arn``, as a team grants its own runner (docs/own-function.md):
    IAM is enforced, and a runner the role may not invoke fails Run Job with AccessDeniedException."""
    deployment.client("iam").put_role_policy(
        RoleName=role_arn.rsplit("/", 1)[-1],
        PolicyName="bench-runner-invoke",
        PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": function_arn}]}),
    )

"""The local console: a web page like the Step Functions console, served beside `python -m emulator serve`.

A small JSON API over the deployed app (machines and their definitions, executions, histories,
the clock, the Slack stand-in's posts and slash commands, alarms, what the app's topics received, each on-call
schedule's next two weeks, the texts and calls of End User Messaging and the mail SES sent) and static pages that draw it with plain JavaScript and
the graph layout library pinned in package.json, all served from this machine (no CDN).
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

from boto3.dynamodb.types import TypeDeserializer
from werkzeug.exceptions import HTTPException, NotFound
from werkzeug.routing import Map, Rule
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from emulator import samples
from emulator.deploy import ROOT
from emulator.follow import ExecutionResult, duration, read_history
from emulator.server import ACCOUNT_ID, REGION
from emulator.ses.patches import mail_log
from emulator.session import Deployment
from emulator.sms.service import PHONE_NUMBER, SmsError
from emulator.stepfunctions.history import History, details, state_views

STATIC = Path(__file__).with_name("static")
# Files the page loads from node_modules (installed by `make setup` from package-lock.json).
VENDOR = {"dagre.min.js": ROOT / "node_modules" / "@dagrejs" / "dagre" / "dist" / "dagre.min.js"}
_LISTED_EXECUTIONS = 100
_LISTED_CHANGES = 50
_LISTED_MESSAGES = 50
ONCALL_DAYS = timedelta(days=14)
_COMPARISONS = {"GreaterThanOrEqualToThreshold": ">=", "GreaterThanThreshold": ">", "LessThanThreshold": "<",
                "LessThanOrEqualToThreshold": "<="}


class Console:
    """The console's HTTP server on 127.0.0.1 (a free port unless given). A context manager."""

    def __init__(self, deployment: Deployment, port: int = 0) -> None:
        self.deployment = deployment
        self.aws = deployment.aws
        self._port = port
        self._server: Any = None
        self._routes = Map([
            Rule("/", endpoint="page"),
            Rule("/static/<path:name>", endpoint="static"),
            Rule("/vendor/<name>", endpoint="vendor"),
            Rule("/api/clock", endpoint="clock", defaults={"action": ""}),
            Rule("/api/clock/<action>", endpoint="clock"),
            Rule("/api/machines", endpoint="machines"),
            Rule("/api/executions", endpoint="executions", methods=["GET"]),
            Rule("/api/executions", endpoint="start", methods=["POST"]),
            Rule("/api/execution", endpoint="execution"),
            Rule("/api/slack", endpoint="slack"),
            Rule("/api/slack/click", endpoint="click", methods=["POST"]),
            Rule("/api/slack/commands", endpoint="commands", methods=["GET"]),
            Rule("/api/slack/commands", endpoint="command", methods=["POST"]),
            Rule("/api/alarms", endpoint="alarms"),
            Rule("/api/topics", endpoint="topics"),
            Rule("/api/oncall", endpoint="oncall"),
            Rule("/api/phone", endpoint="phone", methods=["GET"]),
            Rule("/api/phone/reply", endpoint="reply", methods=["POST"]),
            Rule("/api/phone/numbers", endpoint="numbers", methods=["GET"]),
            Rule("/api/email", endpoint="email", methods=["GET"]),
        ])

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> "Console":
        self._server = make_server("127.0.0.1", self._port, self._wsgi, threaded=True)
        threading.Thread(target=self._server.serve_forever, name="console", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "Console":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/"

    # -- serving ---------------------------------------------------------------------------------
    def _wsgi(self, environ: dict, start_response: Callable) -> Any:
        request = Request(environ)
        adapter = self._routes.bind_to_environ(environ)
        try:
            endpoint, values = adapter.match()
            if endpoint == "clock":
                return self.aws.clock_endpoint(environ, start_response, values["action"])
            response = getattr(self, f"_{endpoint}")(request, **values)
        except HTTPException as exc:
            response = exc
        except ValueError as exc:  # a bad request a person made: say why, in one line
            response = _json({"error": str(exc)}, 400)
        return response(environ, start_response)

    def _page(self, request: Request) -> Response:
        return _file(STATIC / "index.html")

    def _static(self, request: Request, name: str) -> Response:
        path = (STATIC / name).resolve()
        if not path.is_relative_to(STATIC.resolve()) or not path.is_file():
            raise NotFound()
        return _file(path)

    def _vendor(self, request: Request, name: str) -> Response:
        if name not in VENDOR:
            raise NotFound()
        if not VENDOR[name].is_file():
            raise NotFound(f"{VENDOR[name].relative_to(ROOT)} is missing: run `make setup`")
        return _file(VENDOR[name])

    # -- API -------------------------------------------------------------------------------------
    def _machines(self, request: Request) -> Response:
        sfn = self.aws.client("stepfunctions")
        names = self.deployment.machine_names()
        machines = []
        for listed in sfn.list_state_machines()["stateMachines"]:
            arn = listed["stateMachineArn"]
            described = sfn.describe_state_machine(stateMachineArn=arn)
            name = names.get(arn)
            machines.append({
                "arn": arn,
                "name": name or listed["name"],
                "definition": json.loads(described["definition"]),
                "samples": [
                    {"name": s.name, "file": s.relative_path, "input": s.path.read_text(),
                     "seeds": _relative(samples.alert_item_for(s.input))}
                    for s in (samples.for_machine(name) if name else [])
                ],
            })
        # The app's machines first, in the order `python -m emulator run` lists them.
        order = list(names.values())
        machines.sort(key=lambda m: (order.index(m["name"]) if m["name"] in order else len(order), m["name"]))
        return _json(machines)

    def _executions(self, request: Request) -> Response:
        sfn = self.aws.client("stepfunctions")
        names = self.deployment.machine_names()
        listed = []
        for machine in sfn.list_state_machines()["stateMachines"]:
            arn = machine["stateMachineArn"]
            pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=arn)
            for execution in (e for page in pages for e in page["executions"]):
                listed.append({
                    "arn": execution["executionArn"],
                    "name": execution["name"],
                    "machine": names.get(arn, machine["name"]),
                    "status": execution["status"],
                    "start": _epoch(execution["startDate"]),
                    "stop": _epoch(execution.get("stopDate")),
                })
        listed.sort(key=lambda e: e["start"], reverse=True)
        return _json(listed[:_LISTED_EXECUTIONS])

    def _start(self, request: Request) -> Response:
        body = request.get_json(force=True, silent=True)
        if not isinstance(body, dict) or not isinstance(body.get("input"), str) or not body.get("machine"):
            raise ValueError('POST {"machine": ARN, "input": "JSON text"}')
        try:
            payload = json.loads(body["input"])
        except ValueError as exc:
            raise ValueError(f"the input is not valid JSON: {exc}") from None
        names = self.deployment.machine_names()
        seeded = self.deployment.seed(names.get(body["machine"], ""), payload)
        sfn = self.aws.client("stepfunctions")
        try:
            arn = sfn.start_execution(stateMachineArn=body["machine"], input=body["input"])["executionArn"]
        except sfn.exceptions.ClientError as exc:
            raise ValueError(exc.response["Error"].get("Message") or str(exc)) from None
        return _json({"executionArn": arn, "seeded": seeded}, 201)

    def _execution(self, request: Request) -> Response:
        arn = request.args.get("arn")
        if not arn:
            raise ValueError("GET /api/execution?arn=EXECUTION_ARN")
        sfn = self.aws.client("stepfunctions")
        try:
            description = sfn.describe_execution(executionArn=arn)
        except sfn.exceptions.ExecutionDoesNotExist:
            raise NotFound(f"no execution {arn}") from None
        events = read_history(sfn, arn)
        machine_arn = description["stateMachineArn"]
        definition = json.loads(sfn.describe_state_machine(stateMachineArn=machine_arn)["definition"])
        start, stop = _epoch(description["startDate"]), _epoch(description.get("stopDate"))
        calls = [c for c in self.aws.runtime.invocations if start <= c["start"] <= (stop or self.aws.clock.now())]
        result = ExecutionResult.of(description, events, calls, wall_seconds=0.0)
        simulated = (stop or self.aws.clock.now()) - start
        history = History(events)
        return _json({
            "arn": arn,
            "name": description["name"],
            "machine": {"arn": machine_arn, "name": self.deployment.machine_names().get(machine_arn, machine_arn.split(":")[-1])},
            "status": description["status"],
            "input": description.get("input"),
            "output": description.get("output"),
            "error": description.get("error"),
            "cause": description.get("cause"),
            "started_by": self.aws.router.started_by.get(arn),
            "start": start,
            "stop": stop,
            "definition": definition,
            "states": {name: view.as_json() for name, view in state_views(events, description["status"]).items()},
            "events": [_event_row(history, event, description["startDate"]) for event in events],
            "logs": self._function_logs(events, calls),
            "summary": {
                "transitions": result.transitions,
                "states_entered": result.states_entered,
                "retries": result.retries,
                "lambda_invocations": result.lambda_invocations,
                "simulated": duration(simulated),
                "cost_usd": result.cost_usd,
            },
        })

    def _function_logs(self, events: list[dict], calls: list[dict]) -> list[dict]:
        """The log lines, from CloudWatch Logs, of each invocation of a function the execution's Lambda tasks
        name, made while it ran: START to REPORT, from the invocation's own stream."""
        called = set()
        for found in map(details, events):
            if found.get("resourceType") == "lambda":  # arn:aws:states:::lambda:invoke, FunctionName in its parameters
                called.add(_function_name(json.loads(found.get("parameters") or "{}").get("FunctionName", "")))
            elif ":function:" in found.get("resource", ""):  # a function ARN as the Task's Resource
                called.add(_function_name(found["resource"]))
        logs = self.aws.client("logs")
        shown = []
        for call in calls:
            if call["function"] not in called or "log" not in call:
                continue
            found = logs.filter_log_events(
                logGroupName=call["log"]["group"], logStreamNames=[call["log"]["stream"]],
                startTime=int(call["start"] * 1000), endTime=int(call.get("end", self.aws.clock.now()) * 1000) + 1,
            )["events"]
            lines, mine = [], False
            for event in found:
                mine = mine or event["message"].startswith(f"START RequestId: {call['request_id']} ")
                if mine:
                    lines.append({"timestamp": event["timestamp"] / 1000, "message": event["message"]})
                if mine and event["message"].startswith(f"REPORT RequestId: {call['request_id']}\t"):
                    break
            shown.append({"function": call["function"], "request_id": call["request_id"], "start": call["start"],
                          "group": call["log"]["group"], "stream": call["log"]["stream"], "lines": lines})
        return shown

    def _slack(self, request: Request) -> Response:
        """Every post, newest first: its whole ``body`` as sent, and the message ``shown`` now.

        ``shown`` differs from ``body`` once the app updated the message through a click's
        response_url, and is null once it deleted it.
        """
        slack = self.deployment.slack
        return _json([
            {"seq": p.seq, "status": p.status, "text": p.body.get("text") if isinstance(p.body, dict) else p.body,
             "body": p.body, "shown": slack.shown(p.seq)}
            for p in reversed(slack.posts)
        ])

    def _click(self, request: Request) -> Response:
        """A person clicks a button of a message: POST {"seq", "block", "element"}; what Slack did."""
        body = request.get_json(force=True, silent=True)
        if not isinstance(body, dict) or not all(isinstance(body.get(key), int) for key in ("seq", "block", "element")):
            raise ValueError('POST {"seq": N, "block": N, "element": N}: the message and its button')
        slack = self.deployment.slack
        try:
            clicked = slack.click(body["seq"], block=body["block"], element=body["element"])
        except LookupError as exc:
            return _json({"error": str(exc.args[0])}, 404)
        return _json({**clicked, "interactive": slack.interactive})

    def _commands(self, request: Request) -> Response:
        """The slash commands the Slack app's manifest declares, each with its URL."""
        return _json({"declared": self.deployment.slack.slash_commands})

    def _command(self, request: Request) -> Response:
        """A member types a slash command: POST {"user", "command", "text"}; what Slack sent and was answered."""
        body = request.get_json(force=True, silent=True)
        if not isinstance(body, dict) or not all(isinstance(body.get(key), str) for key in ("user", "command", "text")):
            raise ValueError('POST {"user": "U0123ABCD", "command": "/oncall", "text": "..."}: who types which command')
        if not body["user"].strip() or not body["command"].startswith("/"):
            raise ValueError("a member id, and a command starting with /")
        return _json(self.deployment.slack.slash_command(body["command"].strip(), body["text"].strip(), user=body["user"].strip()))

    def _alarms(self, request: Request) -> Response:
        """Every metric alarm with its state, and the latest state changes (newest first)."""
        pages = self.aws.client("cloudwatch").get_paginator("describe_alarms").paginate(AlarmTypes=["MetricAlarm"])
        alarms = [
            {
                "name": alarm["AlarmName"],
                "state": alarm["StateValue"],
                "reason": alarm["StateReason"],
                "updated": _epoch(alarm["StateUpdatedTimestamp"]),
                "metric": f"{alarm.get('Namespace')} {alarm.get('MetricName')}",
                "dimensions": {d["Name"]: d["Value"] for d in alarm.get("Dimensions", [])},
                "condition": _condition(alarm),
                "actions": {"ALARM": alarm.get("AlarmActions", []), "OK": alarm.get("OKActions", []),
                            "INSUFFICIENT_DATA": alarm.get("InsufficientDataActions", [])},
            }
            for page in pages for alarm in page["MetricAlarms"]
        ]
        changes = list(reversed(self.aws.cloudwatch.changes[-_LISTED_CHANGES:]))
        return _json({"alarms": alarms, "changes": changes})

    def _oncall(self, request: Request) -> Response:
        """Each on-call schedule as a timeline from the start of its local day to two weeks from now (simulated):
        broken schedules first, with why they cannot be read; then each one's layers, overrides and final
        shifts, in its zone (see ``_timeline``)."""
        # The functions' own module (standard library only), loaded as the stack loads it to check schedules.
        from stacks.alert_notification.on_call import oncall_module

        oncall = oncall_module()
        table = self.deployment.output("AlertNotificationStack", "OnCallTableName")
        now = datetime.fromtimestamp(self.aws.clock.now(), timezone.utc)
        schedules = []
        for page in self.aws.client("dynamodb").get_paginator("scan").paginate(TableName=table, ConsistentRead=True):
            for raw in page["Items"]:
                item = {name: _deserialize(value) for name, value in raw.items()}
                try:
                    schedule = oncall.parse_schedule(item)
                except oncall.InvalidSchedule as invalid:
                    schedules.append({"schedule_id": str(item.get("schedule_id")), "error": str(invalid)})
                    continue
                schedules.append(_timeline(oncall, schedule, now))
        # A broken schedule pages nobody: it comes first, where it is seen.
        return _json({"now": now.timestamp(),
                      "schedules": sorted(schedules, key=lambda s: ("error" not in s, s["schedule_id"]))})

    def _phone(self, request: Request) -> Response:
        """Every text and call to and from the account's phone number, in the order sent: {"to", "from", "kind", "body"}."""
        return _json([{key: entry[key] for key in ("to", "from", "kind", "body")} for entry in list(self.aws.sms.phone_log)])

    def _numbers(self, request: Request) -> Response:
        """The account's own phone numbers: the Phone page tells a person's phone from them."""
        return _json({"numbers": [PHONE_NUMBER]})

    def _reply(self, request: Request) -> Response:
        """A person texts the account's number: POST {"from", "body"}; the text, the SNS message id it was
        published as to the number's two-way topic (``published``; null when the number has no two-way SMS
        or IAM kept it from the topic), and why IAM did (``refused``, or null)."""
        body = request.get_json(force=True, silent=True)
        if not isinstance(body, dict) or not all(isinstance(body.get(key), str) for key in ("from", "body")):
            raise ValueError('POST {"from": "+4915112345678", "body": "12a"}: the phone that texts, and what it says')
        try:
            entry = self.aws.sms.receive(body["from"].strip(), body["body"])
        except SmsError as refused:
            raise ValueError(refused.message) from None
        return _json({key: entry[key] for key in ("to", "from", "kind", "body", "published", "refused")}, 201)

    def _email(self, request: Request) -> Response:
        """Every mail SES sent, one row a recipient, in the order sent: {"to", "from", "subject", "text"}."""
        return _json(list(mail_log(REGION, ACCOUNT_ID)))

    def _topics(self, request: Request) -> Response:
        """What each topic the app's stacks output received, newest first (moto keeps every publish)."""
        from moto.sns.models import sns_backends

        topics = []
        for stack, outputs in self.deployment.documented_outputs.items():
            for key, arn in outputs.items():
                if not key.endswith("TopicArn"):
                    continue
                region, account = arn.split(":")[3:5]
                topic = sns_backends[account][region].topics.get(arn)
                sent = list(topic.sent_notifications) if topic is not None else []
                topics.append({
                    "stack": stack, "output": key, "arn": arn,
                    "messages": [{"seq": seq, "id": message_id, "subject": subject, "message": message}
                                 for seq, (message_id, message, subject, *_) in reversed(list(enumerate(sent, 1)))][:_LISTED_MESSAGES],
                })
        return _json(topics)


def _timeline(oncall: Any, schedule: Any, now: datetime) -> dict:
    """A schedule's rows from the start of its local day to ``now`` + two weeks, every rule the functions'
    module's: a row per layer (the layer alone, as ``Schedule.shifts`` resolves it), the overrides, and the
    final schedule, cut where an override begins and ends so that the shifts an override decides are
    marked as its. Instants are epoch seconds to draw, with the local text people of the schedule read."""
    zone = schedule.zone
    start = schedule.instant(datetime.combine(now.astimezone(zone).date(), datetime.min.time()))
    end = now + ONCALL_DAYS

    def shift(found: Any, **extra: Any) -> dict:
        return {"member": found.member, "start": found.start.timestamp(), "end": found.end.timestamp(),
                "start_text": oncall.local_text(found.start, zone), "end_text": oncall.local_text(found.end, zone), **extra}

    overrides = [o for o in schedule.overrides if o.start < end and start < o.end]
    cuts = sorted({start, end, *(t for o in overrides for t in (o.start, o.end) if start < t < end)})
    final = [shift(found, override=any(o.start <= begin and finish <= o.end for o in overrides))
             for begin, finish in zip(cuts, cuts[1:]) for found in schedule.shifts(begin, finish)]
    days = []
    day = start.astimezone(zone).date()
    while (midnight := schedule.instant(datetime.combine(day, datetime.min.time()))) < end:
        days.append({"start": midnight.timestamp(), "label": f"{oncall.DAYS[day.weekday()].title()} {day:%d %b}"})
        day += timedelta(days=1)
    return {
        "schedule_id": schedule.schedule_id,
        "time_zone": zone.key,
        "start": start.timestamp(),
        "end": end.timestamp(),
        "days": days,
        "layers": [{"members": list(layer.members),
                    "shifts": [shift(found) for found in replace(schedule, layers=(layer,), overrides=()).shifts(start, end)]}
                   for layer in schedule.layers],
        "overrides": [shift(oncall.Shift(o.member, o.start.astimezone(zone), o.end.astimezone(zone))) for o in overrides],
        "shifts": final,
    }


def _condition(alarm: dict) -> str:
    """An alarm's condition as a person reads it: "Sum >= 1 for 1 of 1 periods of 300 s"."""
    statistic = alarm.get("ExtendedStatistic") or alarm.get("Statistic")
    operator = _COMPARISONS.get(alarm["ComparisonOperator"], alarm["ComparisonOperator"])
    periods = alarm["EvaluationPeriods"]
    return (f"{statistic} {operator} {alarm['Threshold']:g} for {alarm.get('DatapointsToAlarm') or periods} of "
            f"{periods} periods of {alarm.get('Period')} s")


def _event_row(history: History, event: dict, start: datetime) -> dict:
    """One row of the execution event history, with the columns of the Step Functions console."""
    found = details(event)
    resource = f"{found['resourceType']}:{found['resource']}" if "resourceType" in found else None
    return {
        "id": event["id"],
        "type": event["type"],
        "step": history.state_name(event) if not event["type"].startswith("Execution") else None,
        "resource": resource,
        "elapsed_ms": round((event["timestamp"] - start).total_seconds() * 1000),
        "timestamp": _epoch(event["timestamp"]),
        "details": found,
    }


def _function_name(name_or_arn: str) -> str:
    """A function's name from its name or (qualified) ARN, as a Lambda task's resource or FunctionName gives it."""
    _, marker, rest = name_or_arn.partition(":function:")
    return rest.split(":")[0] if marker else name_or_arn


def _epoch(value: datetime | None) -> float | None:
    return value.timestamp() if value is not None else None


def _relative(path: Path | None) -> str | None:
    return path.relative_to(ROOT).as_posix() if path is not None else None


_deserialize = TypeDeserializer().deserialize


def _json(body: Any, status: int = 200) -> Response:
    return Response(json.dumps(body, default=str), status=status, mimetype="application/json",
                    headers={"Cache-Control": "no-store"})


def _file(path: Path) -> Response:
    types = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
    return Response(path.read_bytes(), mimetype=types.get(path.suffix, "application/octet-stream"),
                    headers={"Cache-Control": "no-store"})

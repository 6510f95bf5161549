"""Find Who Is On Call: before a round whose level names schedules, reads them and returns whom to page.

The event is {alert_id, message, levels, round, rounds, interval_seconds, occurrence, actions_url}; the answer is
{users, links, message, failed}: the people the round pages, each one's signed action links, the
round's message (saying which schedule had a gap) and the schedule targets nobody stood in for.
"""

from __future__ import annotations

import os
import time
from datetime import datetime, timezone
from functools import cache
from typing import Any

import boto3
from alert_on_call_logic import ScheduleUnreadable, find_round_targets, level_of_round, round_message
from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.typing import LambdaContext

from patterns_common.alert_action_links import LINK_LIFETIME_SECONDS, links_for
from patterns_common.observability import logger, tracer
from patterns_common.oncall import InvalidSchedule, Schedule, parse_schedule

SECRET_MAX_AGE_SECONDS = 300  # as Fetch Alert Config: a rotated signing key is picked up within five minutes

table = boto3.resource("dynamodb").Table(os.environ["ON_CALL_TABLE_NAME"])


@logger.inject_lambda_context
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    now = time.time()
    levels, round_ = event["levels"], event["round"]

    @cache
    def read(schedule_id: str) -> Schedule:
        try:
            item = table.get_item(Key={"schedule_id": schedule_id}, ConsistentRead=True).get("Item")
        except Exception as error:  # noqa: BLE001 - throttled or failed after the SDK's retries: a gap, said so
            logger.exception("On-call table not read", extra={"schedule_id": schedule_id})
            raise ScheduleUnreadable(schedule_id, f"the on-call table could not be read ({type(error).__name__})") from error
        if item is None:
            raise ScheduleUnreadable(schedule_id, "the on-call table has no such schedule")
        try:
            return parse_schedule(item)
        except InvalidSchedule as invalid:
            raise ScheduleUnreadable(schedule_id, str(invalid)) from invalid

    found = find_round_targets(levels, level_of_round(levels, round_), datetime.fromtimestamp(now, timezone.utc), read)
    key = parameters.get_secret(os.environ["ACTION_LINK_KEY_SECRET_ARN"], max_age=SECRET_MAX_AGE_SECONDS).encode()
    # As Fetch Alert Config's: a link stays valid for a day after the last round that can send it.
    expires_at = int(now) + (event["rounds"] - round_) * event["interval_seconds"] + LINK_LIFETIME_SECONDS
    logger.info("On call", extra={"alert_id": event["alert_id"], "round": round_, "users": found.users, "notes": found.notes})
    return {
        "users": found.users,
        "links": {
            # For the occurrence Fetch Alert Config read: refused once the alarm raises the alert again.
            user: links_for(
                key,
                event["actions_url"],
                alert_id=event["alert_id"],
                user=user,
                expires_at=expires_at,
                occurrence=event["occurrence"],
            )
            for user in found.users
        },
        "message": round_message(event["message"], found.notes),
        "failed": [{"round": round_, **failure} for failure in found.failed],
    }

"""EventBridge Scheduler for the local world: fire the deployed stack's schedules (inside the moto server process).

moto stores schedules (the Scheduler API) but never fires them, and its CloudFormation does not know
`AWS::Scheduler::Schedule` at all, so the stack's planner schedule would not exist. `install_cloudformation_schedules`
teaches CloudFormation the resource (creating it in moto's Scheduler backend); `ScheduleRunner` is the service
that fires them: a thread that, twice a second, asks `schedules.Timetable` which enabled schedules are due and
delivers each to its target with the schedule's `Input`:
- a Lambda function is invoked (through the seam, as every invocation in the world is);
- a Step Functions state machine gets StartExecution;
- a target it cannot reach is dead-lettered to the schedule's DeadLetterConfig queue, as AWS does with an event
  it could not deliver (the stack's MissedTicks queue), and recorded as an error.

Departures from AWS, on purpose: AWS invokes a Lambda target asynchronously; here the runner waits for the
answer, one firing at a time, so a test can read what a tick did (`tick()` and `describe()["history"]`), and a
function error is recorded rather than retried by an async queue. A target without `Input` gets `{}` (AWS sends
its own default notification, which the planner ignores either way).

Control (the moto server's `/_nodewright/schedules` endpoints): `pause()` stops firing and waits for a firing in
progress to end, `resume(period)` starts again (optionally every `period` seconds instead of each schedule's own
expression, so a test sees several ticks in a minute), `tick()` fires now, synchronously, and returns what happened.
"""

from __future__ import annotations

import json
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from nodewright.localworld.schedules import ScheduleSpec, Timetable

LOOP_SECONDS = 0.5
HISTORY = 100
# How long pause() waits for a firing in progress (a planner tick lasts seconds; its time-out is 120 s).
PAUSE_WAIT_SECONDS = 180.0


@dataclass(frozen=True)
class Found:
    """A schedule as moto stores it, with where it lives."""

    account: str
    region: str
    group: str
    name: str
    expression: str
    timezone: str
    enabled: bool
    target: dict[str, Any]

    @property
    def key(self) -> str:
        """Unique across accounts and regions."""
        return f"{self.account}/{self.region}/{self.group}/{self.name}"

    def spec(self) -> ScheduleSpec:
        """What the timetable needs."""
        return ScheduleSpec(self.key, self.expression, self.timezone or "UTC", self.enabled)


def moto_schedules() -> list[Found]:
    """Every schedule in moto's Scheduler backends."""
    from moto.scheduler.models import scheduler_backends

    found = []
    backends: dict[str, Any] = dict(scheduler_backends.items())
    for account, regions in backends.items():
        for region, backend in list(regions.items()):
            for group in list(backend.schedule_groups.values()):
                for schedule in list(group.schedules.values()):
                    found.append(
                        Found(
                            account=str(account),
                            region=str(region),
                            group=str(group.name),
                            name=str(schedule.name),
                            expression=str(schedule.schedule_expression),
                            timezone=str(schedule.schedule_expression_timezone or "UTC"),
                            enabled=str(schedule.state or "ENABLED") == "ENABLED",
                            target=dict(schedule.target or {}),
                        )
                    )
    return found


def deliver(schedule: Found) -> dict[str, Any]:
    """Deliver one firing to the schedule's target; returns {"ok", "result" | "error", "dead_lettered"}."""
    target = schedule.target
    arn = str(target.get("Arn", ""))
    body = str(target.get("Input") or "{}")
    try:
        if ":lambda:" in arn:
            from moto.awslambda.utils import get_backend

            headers: dict[str, Any] = {}
            payload = get_backend(schedule.account, schedule.region).invoke(
                function_name=arn, qualifier=None, body=body, headers={}, response_headers=headers
            )
            text = payload.decode() if isinstance(payload, bytes) else str(payload or "")
            try:
                result: Any = json.loads(text) if text else None
            except ValueError:
                result = text
            if "x-amz-function-error" in headers:
                error = result.get("errorType", "error") if isinstance(result, dict) else "error"
                return {"ok": False, "result": result, "error": f"function error: {error}", "dead_lettered": False}
            return {"ok": True, "result": result, "error": None, "dead_lettered": False}
        if ":states:" in arn:
            from moto.stepfunctions.models import stepfunctions_backends

            execution = stepfunctions_backends[schedule.account][schedule.region].start_execution(
                arn, f"schedule-{uuid.uuid4().hex[:16]}", body
            )
            return {
                "ok": True,
                "result": {"executionArn": execution.execution_arn},
                "error": None,
                "dead_lettered": False,
            }
        raise ValueError(f"target {arn!r}: the local world delivers to Lambda functions and state machines only")
    except Exception as exc:
        return {
            "ok": False,
            "result": None,
            "error": f"{type(exc).__name__}: {exc}",
            "dead_lettered": _dead_letter(schedule, body, exc),
        }


def _dead_letter(schedule: Found, body: str, exc: Exception) -> bool:
    queue_arn = str((schedule.target.get("DeadLetterConfig") or {}).get("Arn", ""))
    if not queue_arn:
        return False
    try:
        from moto.sqs.models import sqs_backends

        _, _, _, region, account, name = queue_arn.split(":", 5)
        attributes = {
            "ERROR_CODE": {"DataType": "String", "StringValue": type(exc).__name__},
            "ERROR_MESSAGE": {"DataType": "String", "StringValue": str(exc)[:1000]},
            "TARGET_ARN": {"DataType": "String", "StringValue": str(schedule.target.get("Arn", ""))},
        }
        sqs_backends[account][region].send_message(name, body, message_attributes=attributes)
        return True
    except Exception:  # a missing queue must not stop the runner
        traceback.print_exc()
        return False


class ScheduleRunner:
    """Fires due schedules in a background thread; paused, resumed and ticked through the control endpoints."""

    def __init__(
        self,
        paused: bool = False,
        find: Callable[[], list[Found]] = moto_schedules,
        fire: Callable[[Found], dict[str, Any]] = deliver,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.paused = paused
        self._find = find
        self._fire = fire
        self._clock = clock
        self._timetable = Timetable()
        self._state = threading.Lock()  # guards paused and the timetable
        self._firing = threading.Lock()  # one firing at a time, from the loop or a tick
        self._history: deque[dict[str, Any]] = deque(maxlen=HISTORY)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the background loop (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="schedules", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            try:
                self.run_due()
            except Exception as exc:  # the scheduler outlives one bad pass, as the service does
                print(f"schedules: {type(exc).__name__}: {exc}", flush=True)
            time.sleep(LOOP_SECONDS)

    def run_due(self) -> list[dict[str, Any]]:
        """Fire every due schedule unless paused; the firings' records."""
        with self._state:
            if self.paused:
                return []
            now = self._clock()
            schedules = {s.key: s for s in self._find()}
            due = [schedules[s.key] for s in self._timetable.due([s.spec() for s in schedules.values()], now)]
            # Moved on before firing, so a tick that runs long or a concurrent tick(due_only) never repeats it.
            for schedule in due:
                self._timetable.fired(schedule.spec(), now)
        records = (self._run(s, unless_paused=True, source="schedule") for s in due)
        return [r for r in records if r is not None]

    def tick(self, due_only: bool = False, name: str = "") -> list[dict[str, Any]]:
        """Fire now, whether paused or not: every enabled schedule (or only the due ones), optionally only those
        whose name contains `name`; returns each firing's record. A tick leaves the timetable alone unless the
        schedule was due, so the regular rhythm carries on."""
        with self._state:
            schedules = [s for s in self._find() if s.enabled and name in s.name]
            if due_only:
                now = self._clock()
                due = {s.key for s in self._timetable.due([s.spec() for s in schedules], now)}
                schedules = [s for s in schedules if s.key in due]
                for schedule in schedules:
                    self._timetable.fired(schedule.spec(), now)
        records = (self._run(s, unless_paused=False, source="tick") for s in schedules)
        return [r for r in records if r is not None]

    def _run(self, schedule: Found, unless_paused: bool, source: str) -> dict[str, Any] | None:
        with self._firing:
            if unless_paused and self.paused:
                return None  # paused while waiting for the previous firing: pause() promised nothing more fires
            started = self._clock()
            began = time.monotonic()
            outcome = self._fire(schedule)
            record = {
                "schedule": f"{schedule.group}/{schedule.name}",
                "source": source,  # "schedule": fired on time; "tick": fired on request
                "target": schedule.target.get("Arn", ""),
                "at": started.isoformat(),
                "seconds": round(time.monotonic() - began, 3),
                **outcome,
            }
        with self._state:
            self._history.append(record)
        return record

    def pause(self) -> None:
        """Stop firing; returns once a firing in progress (if any) has ended."""
        with self._state:
            self.paused = True
        if self._firing.acquire(timeout=PAUSE_WAIT_SECONDS):
            self._firing.release()

    def resume(self, period_seconds: float | None = None) -> None:
        """Fire again, each schedule's first firing counted from now: every `period_seconds` when given, else on
        each schedule's own expression."""
        if period_seconds is not None and period_seconds <= 0:
            raise ValueError("period_seconds must be positive")
        with self._state:
            self._timetable.restart(period_seconds)
            self.paused = False

    def describe(self) -> dict[str, Any]:
        """The schedules, the state of the runner and the recent firings."""
        with self._state:
            schedules = self._find()
            last: dict[str, dict[str, Any]] = {}
            for record in self._history:
                last[record["schedule"]] = record
            listed = []
            for s in schedules:
                due = self._timetable.next_due.get(s.key)
                listed.append(
                    {
                        "name": s.name,
                        "group": s.group,
                        "account": s.account,
                        "region": s.region,
                        "expression": s.expression,
                        "timezone": s.timezone,
                        "state": "ENABLED" if s.enabled else "DISABLED",
                        "target": s.target.get("Arn", ""),
                        "input": s.target.get("Input"),
                        "next": due.isoformat() if due is not None and not self.paused else None,
                        "error": self._timetable.errors.get(s.key),
                        "last": last.get(f"{s.group}/{s.name}"),
                    }
                )
            return {
                "paused": self.paused,
                "period_seconds": self._timetable.period,
                "schedules": listed,
                "history": list(self._history),
            }


def install_cloudformation_schedules() -> None:
    """Teach moto's CloudFormation `AWS::Scheduler::Schedule`: create, update and delete it in moto's Scheduler
    backend (once per process; moto otherwise skips the resource with a warning)."""
    from moto.cloudformation import parsing
    from moto.core.common_models import CloudFormationModel
    from moto.scheduler.models import scheduler_backends

    if "AWS::Scheduler::Schedule" in parsing.get_model_map():
        return

    def create(name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Any:
        backend: Any = scheduler_backends[account_id][region_name]
        return backend.create_schedule(
            description=properties.get("Description"),
            end_date=properties.get("EndDate"),
            flexible_time_window=properties.get("FlexibleTimeWindow", {"Mode": "OFF"}),
            group_name=properties.get("GroupName"),
            kms_key_arn=properties.get("KmsKeyArn"),
            name=name,
            schedule_expression=properties["ScheduleExpression"],
            schedule_expression_timezone=properties.get("ScheduleExpressionTimezone"),
            start_date=properties.get("StartDate"),
            state=properties.get("State", "ENABLED"),
            target=properties["Target"],
            action_after_completion=properties.get("ActionAfterCompletion"),
        )

    class CloudFormationSchedule(CloudFormationModel):
        """The CloudFormation face of a moto schedule: Ref is its name, Fn::GetAtt Arn its ARN."""

        def __init__(self, schedule: Any, account_id: str, region_name: str) -> None:
            self.schedule = schedule
            self.account_id = account_id
            self.region_name = region_name

        @property
        def physical_resource_id(self) -> str:
            return str(self.schedule.name)

        @staticmethod
        def cloudformation_name_type() -> str:
            return "Name"

        @staticmethod
        def cloudformation_type() -> str:
            return "AWS::Scheduler::Schedule"

        @classmethod
        def has_cfn_attr(cls, attr: str) -> bool:
            return attr == "Arn"

        def get_cfn_attribute(self, attribute_name: str) -> str:
            if attribute_name == "Arn":
                return str(self.schedule.arn)
            from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

            raise UnformattedGetAttTemplateException()

        @classmethod
        def create_from_cloudformation_json(
            cls,
            resource_name: str,
            cloudformation_json: dict[str, Any],
            account_id: str,
            region_name: str,
            **kwargs: Any,
        ) -> CloudFormationSchedule:
            # Schedule names are at most 64 characters; CloudFormation's generated names can be longer.
            name = resource_name[:64]
            properties = cloudformation_json.get("Properties", {})
            return cls(create(name, properties, account_id, region_name), account_id, region_name)

        @classmethod
        def update_from_cloudformation_json(
            cls,
            original_resource: CloudFormationSchedule,
            new_resource_name: str,
            cloudformation_json: dict[str, Any],
            account_id: str,
            region_name: str,
        ) -> CloudFormationSchedule:
            old = original_resource.schedule
            scheduler_backends[account_id][region_name].delete_schedule(old.group_name, old.name)
            properties = cloudformation_json.get("Properties", {})
            return cls(create(str(old.name), properties, account_id, region_name), account_id, region_name)

        @classmethod
        def delete_from_cloudformation_json(
            cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
        ) -> None:
            group = cloudformation_json.get("Properties", {}).get("GroupName")
            scheduler_backends[account_id][region_name].delete_schedule(group, resource_name[:64])

        def is_created(self) -> bool:
            return True

    # The parser caches its model list the first time it looks; a class defined later must be seen.
    parsing.get_model_list.cache_clear()
    parsing.get_model_map.cache_clear()
    if "AWS::Scheduler::Schedule" not in parsing.get_model_map():
        raise RuntimeError("moto's CloudFormation did not pick up AWS::Scheduler::Schedule")

"""An in-memory world for the convergence property (issue 21): the real services over the in-memory adapters.

What runs is nodewright's own code: the provisioner (`service.provision.provision`), the planner tick
(`service.plan.tick`), the interruption handler (`service.interrupt.handle_message`) and the workflow steps
(`service.workflow.STEPS`). What plays the rest of the world is here, kept small:

- `Cloud`: EC2 as the services use it (CreateFleet with its ClientToken idempotency, tags, terminate), with a
  `kill` for an instance that goes away behind nodewright's back.
- `World.cluster`: `InMemoryCluster`, whose evictions answer 429 for pods a blocking PodDisruptionBudget covers, and
  which records every pod it removes (evicted or deleted) and every instance terminated under a pod.
- `World.settle`: what the kubelets, the kube-scheduler, the pod garbage collector and the pods' controllers do: a
  launched instance registers its Node after `BOOT_SECONDS`, pending pods are bound first-fit to Ready schedulable
  nodes, pods of deleted nodes and removed pods come back pending (a StatefulSet keeps their names).
- `Driver`: Step Functions. Each execution is a generator that walks the state machine exactly as
  `infra/workflow.py` defines it (Validate?, IdentifyCandidate, Urgent? with its Parallel, LaunchReplacement,
  PrepareOnly?, the replacement and drain loops, the Map, TerminateInstance, Rollback, Superseded), with each task's
  Retry (FINAL_ERRORS none, PlannerBusy 8 x 10 s x 1.5, anything else 3 x 2 s x 2) and Catch (LeaseLost ->
  Superseded, anything else -> Rollback). Waits are on the world's clock: the driver runs every step whose time has
  come, in time order, settling the world before each.
- Crashes: a `Fuse` counts the port calls of one invocation and kills it (`Killed`, a BaseException nothing in the
  services catches) after a given number: what it wrote before stays. A killed execution is marked FAILED, ABORTED or
  TIMED_OUT in `InMemoryWorkflows`, with no Catch and no Rollback, as when a Lambda or the state machine dies.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import json
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, cast

from nodewright.adapters.memory import InMemoryCluster, InMemoryState, InMemoryWorkflows
from nodewright.catalog.catalog import CapacityReservation
from nodewright.catalog.snapshot import SnapshotSource
from nodewright.catalog.types import InstanceType
from nodewright.disruption.drain import DISRUPTED_TAINT_KEY
from nodewright.disruption.lease import RUNNING, live, lock_name
from nodewright.interruption.ownership import parse_provider_id
from nodewright.launch.template import Image, LaunchTemplateSpec, ResolvedNodeClass, Subnet
from nodewright.launch.userdata import ClusterInfo
from nodewright.model.nodeclass import EC2NodeClass
from nodewright.ports import BLOCKED, Instance
from nodewright.service import provision as provisioning
from nodewright.service import workflow
from nodewright.service.batch import Batch, PodHint
from nodewright.service.interrupt import handle_message
from nodewright.service.plan import PlannerPorts, tick
from nodewright.service.provision.lifecycle import LAUNCH_TIMEOUT_SECONDS
from nodewright.tags import CORDONED, is_owned
from nodewright.tags import NODECLAIM as NODECLAIM_TAG

CLUSTER = "demo"
ACCOUNT, REGION = "123456789012", "us-east-1"
ZONES = ("us-east-1a", "us-east-1b")
START = 1_800_000_000.0
BOOT_SECONDS = 20  # a launched instance's kubelet registers its Node this long after launch
TICK_SECONDS = 60  # EventBridge Scheduler's rate for the planner
SPOT_NOTICE = 120.0
PROTECTED_APP = "web"  # the pods a PodDisruptionBudget selects; "api" pods have none
_LIVE = ("pending", "running")

# infra/workflow.py: `_task`'s retries and `_catch`'s catches.
FINAL_ERRORS = ("DisruptionFailed", "CommandError", "LeaseLost")
PLANNER_BUSY = ("PlannerBusy", 10.0, 8, 1.5)
ANY_ERROR = (2.0, 3, 2.0)
REPLACEMENT_POLL = 15.0
VALIDATION_DELAY = 15.0


class Killed(BaseException):
    """The invocation died here (a Lambda time-out, an out-of-memory, a stopped execution)."""


class Fuse:
    """Kills an invocation at its `calls`-th port call (None: never), or at the first port call after one to the
    method named `after` (what that call did stays, nothing after it happens); once blown, every later call dies
    too."""

    def __init__(self, calls: int | None, after: str | None = None) -> None:
        self.left = calls
        self.after = after
        self.armed = False  # the call named `after` has been made
        self.blown = False
        self._lock = threading.Lock()

    def spend(self, name: str = "") -> None:
        with self._lock:
            if self.blown or self.armed:
                self.blown = True
                raise Killed
            if self.after is not None and name == self.after:
                self.armed = True
            if self.left is None:
                return
            if self.left <= 0:
                self.blown = True
                raise Killed
            self.left -= 1


class Fused:
    """A port whose every public method spends the fuse first."""

    def __init__(self, target: Any, fuse: Fuse) -> None:
        self._target = target
        self._fuse = fuse

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._target, name)
        if name.startswith("_") or not callable(found):
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            self._fuse.spend(name)
            return found(*args, **kwargs)

        return call


class Catalog:
    """The shipped snapshot, a few families in two zones: realistic and fast."""

    def __init__(self) -> None:
        kept = []
        for it in SnapshotSource().instance_types():
            if it.family in ("m5", "c5") and it.size in ("large", "xlarge"):
                kept.append(replace(it, offerings=tuple(o for o in it.offerings if o.zone in ZONES)))
        self.types: tuple[InstanceType, ...] = tuple(kept)
        self.by_name = {t.name: t for t in self.types}

    def instance_types(self) -> Sequence[InstanceType]:
        return self.types


CATALOG = Catalog()


@dataclass
class Clock:
    t: float = START

    def now(self) -> float:
        return self.t


@dataclass
class Cloud:
    """EC2 as the services see it. Instances keep their state after termination (EC2 remembers them for an hour)."""

    clock: Clock
    instances: dict[str, Instance] = field(default_factory=dict)
    answered: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    on_terminate: Callable[[str], None] = lambda _: None
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(CLUSTER, "https://api.demo", "Q0EK", "10.100.0.0/16", "1.31")

    def forget_node_class(self, node_class: EC2NodeClass) -> None:
        pass

    def resolve_node_class(self, node_class: EC2NodeClass, k8s_version: str) -> ResolvedNodeClass:
        return ResolvedNodeClass(
            node_class,
            tuple(Subnet(f"subnet-{z[-1]}", z, 100, f"use1-az{i + 1}") for i, z in enumerate(ZONES)),
            ("sg-1",),
            {("amd64", "standard"): Image("ami-x86", "amd64", "standard", "al2023-x86")},
            "demo-node-profile",
        )

    def capacity_reservations(self, resolved: ResolvedNodeClass) -> Sequence[CapacityReservation]:
        return []

    def ensure_launch_template(self, spec: LaunchTemplateSpec, tags: Mapping[str, str]) -> str:
        return spec.name

    def create_fleet(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        token = request.get("ClientToken")
        if token and token in self.answered:
            return self.answered[token]  # EC2: a repeated idempotency token gets the first request's answer
        tags = {t["Key"]: t["Value"] for t in request["TagSpecifications"][0]["Tags"]}
        capacity_type = request["TargetCapacitySpecification"]["DefaultTargetCapacityType"]
        override = request["LaunchTemplateConfigs"][0]["Overrides"][0]
        instance_id = f"i-{next(self._ids):08x}"
        self.instances[instance_id] = Instance(
            instance_id,
            override["InstanceType"],
            override["AvailabilityZone"],
            "running",
            capacity_type,
            self.clock.now(),
            tags,
            "ami-x86",
            override.get("SubnetId", ""),
            ("sg-1",),
        )
        answer = {
            "Errors": [],
            "Instances": [
                {
                    "InstanceIds": [instance_id],
                    "InstanceType": override["InstanceType"],
                    "Lifecycle": capacity_type,
                    "LaunchTemplateAndOverrides": {"Overrides": override},
                }
            ],
        }
        if token:
            self.answered[token] = answer
        return answer

    def instances_of_nodeclaim(self, nodeclaim: str) -> Sequence[Instance]:
        return [
            i for i in self.instances.values() if i.tags.get(NODECLAIM_TAG) == nodeclaim and i.state != "terminated"
        ]

    def instances_of_nodeclaims(self, nodeclaims: Sequence[str]) -> Mapping[str, Sequence[Instance]]:
        found = {name: self.instances_of_nodeclaim(name) for name in nodeclaims}
        return {name: instances for name, instances in found.items() if instances}

    def describe_instances(self, instance_ids: Iterable[str]) -> Sequence[Instance]:
        return [self.instances[i] for i in sorted(set(instance_ids)) if i in self.instances]

    def capacity_instances(self) -> Sequence[Instance]:
        return [
            i
            for i in self.instances.values()
            if i.state not in ("terminated", "shutting-down") and is_owned(i.tags, CLUSTER)
        ]

    def terminate(self, instance_ids: Iterable[str]) -> None:
        for instance_id in instance_ids:
            found = self.instances.get(instance_id)
            if found is not None and found.state != "terminated":
                self.on_terminate(instance_id)
                self.instances[instance_id] = replace(found, state="terminated")

    def kill(self, instance_id: str) -> None:
        """The instance goes away outside nodewright (a user, a Spot reclaim whose warning was lost)."""
        self.instances[instance_id] = replace(self.instances[instance_id], state="terminated")

    def live(self) -> list[Instance]:
        return [i for i in self.instances.values() if i.state in _LIVE]


@dataclass(frozen=True, slots=True)
class Removal:
    """A pod nodewright took off a node: `how` is evicted, deleted or terminated (its instance, under it)."""

    at: float
    pod: str
    node: str
    how: str
    protected: bool


class Cluster(InMemoryCluster):
    """The in-memory API server, with PodDisruptionBudgets that refuse evictions and a record of every removal."""

    def __init__(self, documents: Iterable[Mapping[str, Any]], clock: Clock) -> None:
        super().__init__(documents, clock=clock.now)
        self.world_clock = clock
        self.removals: list[Removal] = []

    def pdb_blocks(self) -> bool:
        return ("PodDisruptionBudget", "default", "web") in self.objects

    def protected(self, doc: Mapping[str, Any]) -> bool:
        return self.pdb_blocks() and (doc.get("metadata") or {}).get("labels", {}).get("app") == PROTECTED_APP

    def evict_pod(self, namespace: str, name: str) -> str:
        doc = self.objects.get(("Pod", namespace, name))
        if doc is not None and self.protected(doc):
            self.log.append(f"evict pod/{namespace}/{name}: blocked")
            return BLOCKED
        if doc is not None:
            self._removed(doc, "evicted")
        return super().evict_pod(namespace, name)

    def delete_pod(self, namespace: str, name: str, grace_seconds: int | None = None) -> None:
        doc = self.objects.get(("Pod", namespace, name))
        if doc is not None:
            self._removed(doc, "deleted")
        super().delete_pod(namespace, name, grace_seconds)

    def _removed(self, doc: Mapping[str, Any], how: str) -> None:
        metadata = doc.get("metadata") or {}
        key = f"{metadata.get('namespace')}/{metadata.get('name')}"
        node = str((doc.get("spec") or {}).get("nodeName") or "")
        self.removals.append(Removal(self.world_clock.now(), key, node, how, self.protected(doc)))


# ------------------------------------------------------------------------------------------- manifests


def nodepool() -> dict[str, Any]:
    return {
        "apiVersion": "nodewright.io/v1",
        "kind": "NodePool",
        "metadata": {"name": "general", "uid": "uid-general"},
        "spec": {
            "template": {
                "metadata": {"labels": {"team": "web"}},
                "spec": {
                    "nodeClassRef": {"group": "nodewright.io", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [
                        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    ],
                    "expireAfter": "Never",
                },
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "30s"},
        },
    }


def nodeclass() -> dict[str, Any]:
    return {
        "apiVersion": "nodewright.io/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "role": "demo-node",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        },
    }


def blocking_pdb() -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": PROTECTED_APP}}},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0},
    }


def pod(name: str, app: str, generation: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"uid-{name}-{generation}",
            "resourceVersion": str(generation),
            "labels": {"app": app},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": app, "uid": f"uid-{app}"}],
        },
        "spec": {
            "containers": [{"name": "app", "image": "app", "resources": {"requests": {"cpu": "700m", "memory": "1Gi"}}}]
        },
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


def _cpu_millis(value: str) -> int:
    return int(value[:-1]) if value.endswith("m") else int(float(value) * 1000)


def _mem_mib(value: str) -> int:
    for suffix, factor in (("Gi", 1024), ("Mi", 1), ("Ki", 1 / 1024)):
        if value.endswith(suffix):
            return int(float(value[: -len(suffix)]) * factor)
    return int(value) // (1024 * 1024)


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event(kind: str, instance_id: str, at: float, event_id: str, **detail: str) -> str:
    """An EventBridge event as the interruption queue delivers it (the SQS body)."""
    detail_types = {
        "spot": "EC2 Spot Instance Interruption Warning",
        "rebalance": "EC2 Instance Rebalance Recommendation",
        "state": "EC2 Instance State-change Notification",
    }
    body = {
        "version": "0",
        "id": event_id,
        "detail-type": detail_types[kind],
        "source": "aws.ec2",
        "account": ACCOUNT,
        "time": _iso(at),
        "region": REGION,
        "resources": [f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/{instance_id}"],
        "detail": {"instance-id": instance_id, **detail},
    }
    return json.dumps(body)


# ------------------------------------------------------------------------------------- Step Functions


@dataclass(frozen=True, slots=True)
class Call:
    step: str
    document: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Wait:
    seconds: float


class StepError(Exception):
    """A task's error once its retries are spent: what a Catch sees (`error` is the exception's class name)."""

    def __init__(self, error: str, cause: str) -> None:
        super().__init__(f"{error}: {cause}")
        self.error = error
        self.cause = cause


Program = Generator[Call | Wait, Any, Any]


def task(step: str, document: Mapping[str, Any]) -> Program:
    """One Task state with infra/workflow.py's Retry policy; returns the step's result or raises StepError."""
    busy = other = 0
    while True:
        outcome = yield Call(step, copy.deepcopy(dict(document)))
        if not isinstance(outcome, BaseException):
            return outcome
        name = type(outcome).__name__
        if name in FINAL_ERRORS:
            raise StepError(name, str(outcome))
        if name == PLANNER_BUSY[0] and busy < PLANNER_BUSY[2]:
            yield Wait(PLANNER_BUSY[1] * PLANNER_BUSY[3] ** busy)
            busy += 1
            continue
        if name != PLANNER_BUSY[0] and other < ANY_ERROR[1]:
            yield Wait(ANY_ERROR[0] * ANY_ERROR[2] ** other)
            other += 1
            continue
        raise StepError(name, str(outcome))


def drain_loop(document: dict[str, Any]) -> Program:
    """CordonAndDrain -> Drained? -> WaitForDrain -> CheckDrain -> Drained? ..."""
    state = dict(document)
    state["drain"] = yield from task("drain", state)
    while not state["drain"]["done"]:
        yield Wait(float(state["drain"]["wait_seconds"]))
        state["drain"] = yield from task("drain", state)
    return state


def replacement_loop(state: dict[str, Any]) -> Program:
    """WaitForReplacement -> CheckReplacement -> ReplacementReady? ..."""
    while True:
        yield Wait(REPLACEMENT_POLL)
        state["replacement_check"] = yield from task("check_replacement", state)
        if state["replacement_check"]["ready"]:
            return state


def urgent_launch(document: dict[str, Any]) -> Program:
    """The Parallel's first branch: a replacement that cannot launch or come up ends this branch alone."""
    state = dict(document)
    try:
        state["replacement"] = yield from task("launch_replacement", state)
        yield from replacement_loop(state)
    except StepError as error:
        return {"replacement_error": {"Error": error.error, "Cause": error.cause}}
    return {"replacement": state["replacement"]}


def urgent_drain(document: dict[str, Any]) -> Program:
    state = yield from drain_loop(document)
    return {"drain": state["drain"]}


def map_item(document: dict[str, Any]) -> Program:
    state = yield from drain_loop(document)
    state["terminate"] = yield from task("terminate", state)
    return None


def side_by_side(clock: Clock, branches: list[Program]) -> Program:
    """Branches run concurrently (a Parallel's branches, a Map's iterations): each next action is taken in time order;
    one branch failing stops the others and fails the whole."""
    ready_at = [clock.now()] * len(branches)
    pending: list[Call | Wait | None] = [None] * len(branches)
    results: list[Any] = [None] * len(branches)
    done = [False] * len(branches)

    def step(i: int, value: Any) -> None:
        try:
            item = branches[i].send(value)
        except StopIteration as stop:
            done[i], results[i] = True, stop.value
            return
        pending[i] = item
        ready_at[i] = clock.now() + item.seconds if isinstance(item, Wait) else clock.now()

    try:
        for i in range(len(branches)):
            step(i, None)
        while not all(done):
            i = min((j for j in range(len(branches)) if not done[j]), key=lambda j: (ready_at[j], j))
            if ready_at[i] > clock.now():
                yield Wait(ready_at[i] - clock.now())
                continue
            item = pending[i]
            step(i, (yield item) if isinstance(item, Call) else None)
    finally:
        for j, branch in enumerate(branches):
            if not done[j]:
                branch.close()
    return results


def state_machine(clock: Clock, document: Mapping[str, Any]) -> Program:
    """infra/workflow.py's definition; returns the execution's final status."""
    state = dict(document)

    def catch(error: StepError) -> Program:
        if error.error == "LeaseLost":
            return "SUCCEEDED"  # Superseded
        state["error"] = {"Error": error.error, "Cause": error.cause}
        try:
            state["rollback"] = yield from task("rollback", state)
        except StepError:
            return "FAILED"
        return "FAILED"  # RolledBack

    if state.get("validate") is True:
        yield Wait(VALIDATION_DELAY)
    try:
        state["identify"] = yield from task("identify", state)
        found = state["identify"]
        if found["outcome"] != "proceed":
            return "SUCCEEDED"  # Invalidated or NothingToDisrupt
        if found["urgent"]:
            state["replace_and_drain"] = yield from side_by_side(clock, [urgent_launch(state), urgent_drain(state)])
            state["terminate"] = yield from task("terminate", state)
            return "SUCCEEDED"
        state["replacement"] = yield from task("launch_replacement", state)
        if found.get("prepare_only"):
            yield Wait(float(found["protect_seconds"]))
            state["release"] = yield from task("release", state)
            return "SUCCEEDED"
        yield from replacement_loop(state)
        yield from side_by_side(clock, [map_item(dict(t)) for t in found["targets"]])
        return "SUCCEEDED"
    except StepError as error:
        return (yield from catch(error))


@dataclass
class Execution:
    name: str
    program: Program
    next: Call | Wait | None = None
    wake_at: float = 0.0
    fuse: int | None = None  # kill it at this port call of its next step
    after: str | None = None  # kill it at the first port call after one to this method, in whichever step makes it
    death: str = "ABORTED"


class Driver:
    """Runs every RUNNING execution of `workflows` through `state_machine`, in the world's time order."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.executions: dict[str, Execution] = {}
        # A step some execution runs soon dies: (steps to let run first, fuse, status).
        self.next_death: tuple[int, int, str] | None = None

    def adopt_new(self) -> None:
        """Executions started since the last look begin (Step Functions starts them at once)."""
        for name, document in self.world.workflows.started.items():
            if name not in self.executions and self.world.workflows.statuses.get(name) == RUNNING:
                run = Execution(name, state_machine(self.world.clock, document))
                self.executions[name] = run
                self._send(run, None)

    def running(self) -> list[Execution]:
        statuses = self.world.workflows.statuses
        return [e for e in self.executions.values() if statuses.get(e.name) == RUNNING]

    def _send(self, run: Execution, value: Any) -> None:
        try:
            run.next = run.program.send(value)
        except StopIteration as stop:
            self.world.workflows.statuses[run.name] = str(stop.value)
            run.next = None
            return
        run.wake_at = self.world.clock.now() + (run.next.seconds if isinstance(run.next, Wait) else 0.0)

    def run_until(self, until: float) -> None:
        """Every action due up to `until`, in time order; the clock ends at `until`."""
        for _ in range(10_000):
            self.adopt_new()
            due = [e for e in self.running() if e.wake_at <= until]
            if not due:
                break
            run = min(due, key=lambda e: e.wake_at)
            self.world.clock.t = max(self.world.clock.t, run.wake_at)
            self.world.settle()
            if isinstance(run.next, Wait):
                self._send(run, None)
            elif isinstance(run.next, Call):
                self._invoke(run, run.next)
        else:
            raise AssertionError("the workflow driver did not come to rest")
        self.world.clock.t = max(self.world.clock.t, until)

    def close(self) -> None:
        for run in self.executions.values():
            run.program.close()

    def _invoke(self, run: Execution, call: Call) -> None:
        if run.fuse is None and self.next_death is not None:
            after, fuse_at, death = self.next_death
            if after > 0:
                self.next_death = (after - 1, fuse_at, death)
            else:
                run.fuse, run.death, self.next_death = fuse_at, death, None
        fuse = Fuse(run.fuse, run.after)
        ports = self.world.step_ports(fuse)
        try:
            outcome: Any = workflow.STEPS[call.step](call.document, run.name, ports)
        except Killed:
            outcome = None
        except Exception as error:  # what the Lambda reports; the state machine's Retry and Catch decide
            outcome = error
        if run.fuse is not None or fuse.blown:
            self.world.workflows.statuses[run.name] = run.death
            run.program.close()
            how = f"after {run.after}" if run.fuse is None else f"fuse {run.fuse}"
            self.world.note(f"killed {run.name} in {call.step} ({how}, blown={fuse.blown})")
            return
        self._send(run, outcome)


# ------------------------------------------------------------------------------------------------ world


@contextmanager
def instant_planner_lock() -> Iterator[None]:
    """LaunchReplacement calls `provision` with its default `sleep` (time.sleep) while it waits for the planner lock;
    on the world's clock nothing waits, so that default is replaced for the test's duration."""
    function = provisioning.provision
    defaults = function.__defaults__ or ()
    parameters = list(inspect.signature(function).parameters.values())
    with_defaults = [p.name for p in parameters if p.default is not inspect.Parameter.empty]
    assert "sleep" in with_defaults, "provision() has no `sleep` parameter any more: update the harness"
    patched = tuple(
        (lambda _seconds: None) if name == "sleep" else value
        for name, value in zip(with_defaults[-len(defaults) :], defaults, strict=True)
    )
    function.__defaults__ = patched
    try:
        yield
    finally:
        function.__defaults__ = defaults


class World:
    def __init__(self) -> None:
        self.clock = Clock()
        self.cluster = Cluster([nodepool(), nodeclass()], self.clock)
        self.cloud = Cloud(self.clock, on_terminate=self._terminating)
        self.state = InMemoryState()
        self.workflows = InMemoryWorkflows()
        self.driver = Driver(self)
        self.ticks = 0  # planner ticks that ran to the end
        self.batches = 0
        self.events = 0
        self.pods = 0
        self.revision = 0  # of the NodePool's template (`drift`)
        self.generation: dict[str, int] = {}
        self.journal: list[str] = []
        self.redeliver: list[str] = []
        # Node -> the earliest time nodewright may take its PDB-covered pods: a Spot warning's receipt + notice, or when
        # its instance went away on its own. Absent: never (a voluntary or Deleted drain waits on the budget).
        self.may_take_after: dict[str, float] = {}
        self.last_batch: provisioning.ProvisionResult | None = None
        # For the "for more than N ticks" invariants: when (in completed ticks) each condition was first seen.
        self.stuck_since: dict[str, int] = {}
        self.no_instance_since: dict[str, int] = {}
        self.violations: list[str] = []

    # ----------------------------------------------------------------------------------- the services

    def step_ports(self, fuse: Fuse) -> workflow.Ports:
        return workflow.Ports(
            cast(Any, Fused(self.cluster, fuse)),
            cast(Any, Fused(self.cloud, fuse)),
            cast(Any, Fused(self.state, fuse)),
            self.clock,
            CATALOG,
            workflows=cast(Any, Fused(self.workflows, fuse)),
        )

    def note(self, line: str) -> None:
        self.journal.append(f"{self.clock.t - START:7.0f}s {line}")

    def planner_tick(self, fuse: int | None = None) -> None:
        f = Fuse(fuse)
        ports = PlannerPorts(
            cast(Any, Fused(self.cluster, f)),
            cast(Any, Fused(self.cloud, f)),
            cast(Any, Fused(self.workflows, f)),
            self.clock,
            cast(Any, Fused(self.state, f)),
            CATALOG,
        )
        try:
            result = tick(ports)
        except Killed:
            self.note(f"tick killed (fuse {fuse})")
            return
        if f.blown:
            self.note(f"tick killed (fuse {fuse}, in a worker)")
            return
        self.ticks += 1
        self.note(f"tick {self.ticks}: started {[s['execution'] for s in result.started]} repaired {result.repaired}")

    def batch(self, fuse: int | None = None, after: str | None = None, again: bool = False) -> None:
        """The forwarder's batch: every pending pod. `fuse`, `after`: when to kill it (see `Fuse`); `again`: the
        last delivery once more, under its id (SQS redelivers a message whose Lambda died), else a new one."""
        if not again or not self.batches:
            self.batches += 1
        hints = [
            PodHint("default", d["metadata"]["name"], d["metadata"]["uid"], d["metadata"]["resourceVersion"])
            for d in self.cluster.of_kind("Pod")
            if not d["spec"].get("nodeName")
        ]
        if not hints:
            return
        f = Fuse(fuse, after)
        how = f"after {after}" if after else f"fuse {fuse}"
        try:
            result = provisioning.provision(
                Batch(f"b{self.batches}", CLUSTER, hints),
                cast(Any, Fused(self.cluster, f)),
                cast(Any, Fused(self.cloud, f)),
                cast(Any, Fused(self.state, f)),
                self.clock,
                CATALOG,
                sleep=lambda _seconds: None,
            )
        except Killed:
            self.note(f"batch b{self.batches} killed ({how})")
            return
        if f.blown:
            self.note(f"batch b{self.batches} killed ({how}, in a worker)")
            return
        self.last_batch = result
        self.note(f"batch b{self.batches}: launched {[c.name for c in result.launched]}")

    def deliver(self, body: str, fuse: int | None = None) -> None:
        """One SQS message to the interruption handler; a handler that dies has its message redelivered later."""
        f = Fuse(fuse)
        try:
            result = handle_message(
                body,
                cast(Any, Fused(self.cluster, f)),
                cast(Any, Fused(self.state, f)),
                cast(Any, Fused(self.workflows, f)),
                self.clock,
                "replace",
                cast(Any, Fused(self.cloud, f)),
                CLUSTER,
                (ACCOUNT, REGION),
            )
        except Killed:
            self.note(f"interruption handler killed (fuse {fuse})")
            self.redeliver.append(body)
            return
        if f.blown:
            self.redeliver.append(body)
            return
        self.note(f"interruption: {result.plan.action} {result.plan.reason}")

    # ------------------------------------------------------------------------------------ the world

    def iso_now(self) -> str:
        return _iso(self.clock.now())

    def set_pdb(self, block: bool) -> None:
        """A PodDisruptionBudget with maxUnavailable 0 over the `web` pods, or none."""
        if block:
            self.cluster.put(blocking_pdb())
        else:
            self.cluster.objects.pop(("PodDisruptionBudget", "default", "web"), None)
        self.note(f"PDB {'blocks' if block else 'cleared'}")

    def drift(self) -> None:
        """A new revision of the NodePool's template (a label): every node launched before it has drifted
        (NodePoolDrifted), and the planner replaces them one at a time, as voluntary disruptions under budget."""
        self.revision += 1
        doc = copy.deepcopy(self.cluster.objects[("NodePool", "", "general")])
        doc["spec"]["template"]["metadata"]["labels"]["revision"] = str(self.revision)
        self.cluster.put(doc)
        self.note(f"NodePool template at revision {self.revision}: older nodes drift")

    def add_pods(self, web: int, api: int) -> None:
        for app, count in (("web", web), ("api", api)):
            for _ in range(count):
                name = f"{app}-{self.pods}"
                self.pods += 1
                self.generation[name] = 1
                self.cluster.put(pod(name, app, 1))

    def remove_pods(self, pick: int, count: int) -> None:
        names = sorted(self.generation)
        for name in (names[(pick + i) % len(names)] for i in range(min(count, len(names)))):
            self.generation.pop(name, None)
            self.cluster.objects.pop(("Pod", "default", name), None)
            self.note(f"pod {name} scaled away")

    def settle(self) -> None:
        """The kubelets, the pod garbage collector, the pods' controllers and the kube-scheduler, once."""
        self._register()
        nodes = {d["metadata"]["name"]: d for d in self.cluster.of_kind("Node")}
        for doc in self.cluster.of_kind("Pod"):
            bound = doc["spec"].get("nodeName")
            if bound and bound not in nodes:
                del self.cluster.objects[("Pod", "default", doc["metadata"]["name"])]
        for name, generation in list(self.generation.items()):
            if ("Pod", "default", name) not in self.cluster.objects:
                self.generation[name] = generation + 1
                self.cluster.put(pod(name, name.split("-", 1)[0], generation + 1))
        self._schedule(nodes)

    def _register(self) -> None:
        by_instance = {}
        for doc in self.cluster.of_kind("Node"):
            parsed = parse_provider_id(str(doc["spec"].get("providerID") or ""))
            if parsed is not None:
                by_instance[parsed[1]] = doc
        for instance in self.cloud.instances.values():
            node = by_instance.get(instance.id)
            if node is not None:
                ready = "True" if instance.state in _LIVE else "False"
                node["status"]["conditions"] = [{"type": "Ready", "status": ready}]
                continue
            if instance.state not in _LIVE or self.clock.now() - instance.launch_time < BOOT_SECONDS:
                continue
            self.cluster.put(self._node(instance))

    def _node(self, instance: Instance) -> dict[str, Any]:
        claim = self.cluster.nodeclaim(instance.tags.get(NODECLAIM_TAG, "")) or {}
        spec = claim.get("spec") or {}
        name = f"ip-{instance.id[2:]}.ec2.internal"
        it = CATALOG.by_name[instance.instance_type]
        labels = {
            **((claim.get("metadata") or {}).get("labels") or {}),
            "kubernetes.io/hostname": name,
            "kubernetes.io/arch": it.architecture,
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": instance.instance_type,
            "topology.kubernetes.io/zone": instance.zone,
            "karpenter.sh/capacity-type": instance.capacity_type,
        }
        if NODECLAIM_TAG in instance.tags and "karpenter.sh/nodepool" not in labels:
            labels["karpenter.sh/nodepool"] = "general"
        resources = {"cpu": str(it.vcpu), "memory": f"{it.memory_mib}Mi", "pods": "110"}
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": {}},
            "spec": {
                "providerID": f"aws:///{instance.zone}/{instance.id}",
                "taints": [
                    *copy.deepcopy(spec.get("taints") or []),
                    *copy.deepcopy(spec.get("startupTaints") or []),
                    {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
                ],
            },
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        }

    def _schedule(self, nodes: Mapping[str, Mapping[str, Any]]) -> None:
        used: dict[str, list[int]] = {name: [0, 0] for name in nodes}
        pending = []
        for doc in self.cluster.of_kind("Pod"):
            request = doc["spec"]["containers"][0]["resources"]["requests"]
            cpu, mem = _cpu_millis(request["cpu"]), _mem_mib(request["memory"])
            bound = doc["spec"].get("nodeName")
            if bound:
                used[bound][0] += cpu
                used[bound][1] += mem
            else:
                pending.append((doc, cpu, mem))
        usable = [name for name, node in sorted(nodes.items()) if self._usable(node)]
        for doc, cpu, mem in pending:
            for name in usable:
                allocatable = nodes[name]["status"]["allocatable"]
                room_cpu = _cpu_millis(allocatable["cpu"]) - used[name][0]
                room_mem = _mem_mib(allocatable["memory"]) - used[name][1]
                if cpu <= room_cpu and mem <= room_mem:
                    doc["spec"]["nodeName"] = name
                    doc["status"] = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
                    used[name][0] += cpu
                    used[name][1] += mem
                    break

    @staticmethod
    def _usable(node: Mapping[str, Any]) -> bool:
        metadata, spec = node.get("metadata") or {}, node.get("spec") or {}
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in node["status"].get("conditions", [])
        )
        hard = [t for t in spec.get("taints") or [] if t.get("effect") in ("NoSchedule", "NoExecute")]
        return ready and not hard and not spec.get("unschedulable") and not metadata.get("deletionTimestamp")

    def _terminating(self, instance_id: str) -> None:
        """nodewright terminates an instance: the pods still bound to its node die with it."""
        for node in self.cluster.of_kind("Node"):
            parsed = parse_provider_id(str(node["spec"].get("providerID") or ""))
            if parsed is None or parsed[1] != instance_id:
                continue
            for doc in self.cluster.of_kind("Pod"):
                if doc["spec"].get("nodeName") == node["metadata"]["name"]:
                    key = f"default/{doc['metadata']['name']}"
                    protected = self.cluster.protected(doc)
                    self.cluster.removals.append(
                        Removal(self.clock.now(), key, node["metadata"]["name"], "terminated", protected)
                    )

    def node_of(self, instance_id: str) -> str:
        for node in self.cluster.of_kind("Node"):
            parsed = parse_provider_id(str(node["spec"].get("providerID") or ""))
            if parsed is not None and parsed[1] == instance_id:
                return str(node["metadata"]["name"])
        return ""

    def instance_of_node(self, node: str) -> str:
        doc = self.cluster.get_node(node) or {}
        parsed = parse_provider_id(str((doc.get("spec") or {}).get("providerID") or ""))
        return parsed[1] if parsed is not None else ""

    # ------------------------------------------------------------------------------- invariants

    def live_execution_on(self, nodeclaim: str) -> bool:
        """A live lease on the NodeClaim, or a RUNNING execution whose command names it (an interruption may drain
        without its lease when the state store refuses it)."""
        lease = self.state.locks.get(lock_name(nodeclaim))
        now = self.clock.now()
        if lease is not None and live(lease, self.workflows.status(lease.owner), now):
            return True
        for name, document in self.workflows.started.items():
            if self.workflows.status(name) != RUNNING:
                continue
            names = {document.get("nodeclaim")} | {o.get("nodeclaim") for o in document.get("others") or []}
            if nodeclaim in names:
                return True
        return False

    def claims_by_node(self) -> dict[str, str]:
        out = {}
        for claim in self.cluster.of_kind("NodeClaim"):
            node = str((claim.get("status") or {}).get("nodeName") or "")
            if node:
                out[node] = claim["metadata"]["name"]
        instance_claims = {
            parse_provider_id(str((c.get("status") or {}).get("providerID") or "")): c["metadata"]["name"]
            for c in self.cluster.of_kind("NodeClaim")
        }
        for doc in self.cluster.of_kind("Node"):
            parsed = parse_provider_id(str(doc["spec"].get("providerID") or ""))
            if doc["metadata"]["name"] not in out and parsed in instance_claims:
                out[doc["metadata"]["name"]] = instance_claims[parsed]
        return out

    def check(self) -> None:
        """Every invariant, now; violations are collected with the time and the journal says what led there."""
        now = self.clock.now()
        # 1. No pod a blocking PodDisruptionBudget covers is taken before its node's deadline.
        for removal in self.cluster.removals:
            if removal.protected and removal.at < self.may_take_after.get(removal.node, float("inf")):
                self._violate(
                    f"pod {removal.pod} {removal.how} on {removal.node} under a blocking PDB before its deadline"
                )
        self.cluster.removals.clear()
        # 2. No node keeps nodewright's disrupted taint or cordon with no live execution for more than one tick.
        claims = self.claims_by_node()
        stuck_now = set()
        for doc in self.cluster.of_kind("Node"):
            name = doc["metadata"]["name"]
            tainted = any(t.get("key") == DISRUPTED_TAINT_KEY for t in doc["spec"].get("taints") or [])
            cordoned = CORDONED in (doc["metadata"].get("annotations") or {})
            claim = claims.get(name, "")
            if (tainted or cordoned) and not (claim and self.live_execution_on(claim)):
                stuck_now.add(name)
                since = self.stuck_since.setdefault(name, self.ticks)
                if self.ticks - since > 1:
                    self._violate(
                        f"node {name} (nodeclaim {claim or '-'}) tainted/cordoned with no execution"
                        f" for {self.ticks - since} ticks"
                    )
        self.stuck_since = {n: s for n, s in self.stuck_since.items() if n in stuck_now}
        # 3. No NodeClaim without an instance for more than two ticks (past the launch time-out for one never launched).
        by_claim: dict[str, list[Instance]] = {}
        for instance in self.cloud.live():
            by_claim.setdefault(instance.tags.get(NODECLAIM_TAG, ""), []).append(instance)
        orphaned = set()
        for doc in self.cluster.of_kind("NodeClaim"):
            name = doc["metadata"]["name"]
            parsed = parse_provider_id(str((doc.get("status") or {}).get("providerID") or ""))
            recorded = parsed is not None and any(i.id == parsed[1] for i in self.cloud.live())
            created = datetime.strptime(doc["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
            young = parsed is None and now - created.replace(tzinfo=UTC).timestamp() < LAUNCH_TIMEOUT_SECONDS
            if recorded or by_claim.get(name) or young:
                continue
            orphaned.add(name)
            since = self.no_instance_since.setdefault(name, self.ticks)
            if self.ticks - since > 2:
                self._violate(f"nodeclaim {name} without an instance for {self.ticks - since} ticks")
        self.no_instance_since = {n: s for n, s in self.no_instance_since.items() if n in orphaned}
        # 4. Never two running instances for one NodeClaim.
        for name, instances in by_claim.items():
            if name and len(instances) > 1:
                self._violate(f"nodeclaim {name} has {len(instances)} running instances {[i.id for i in instances]}")

    def _violate(self, what: str) -> None:
        line = f"{self.clock.t - START:.0f}s: {what}"
        if line not in self.violations:
            self.violations.append(line)

    # ------------------------------------------------------------------------------ convergence

    def unconverged(self) -> list[str]:
        """What is still out of place once faults have stopped and the bound has passed."""
        out = []
        explained: set[str] = set()
        if self.last_batch is not None:
            explained = {d.subject.removeprefix("pod/") for d in self.last_batch.decisions}
            explained |= {p for c in self.last_batch.launched for p in c.pods}
        for doc in self.cluster.of_kind("Pod"):
            key = f"default/{doc['metadata']['name']}"
            if not doc["spec"].get("nodeName") and key not in explained:
                out.append(f"pod {key} pending and not explained")
        claims = self.claims_by_node()
        for doc in self.cluster.of_kind("Node"):
            name = doc["metadata"]["name"]
            tainted = any(t.get("key") == DISRUPTED_TAINT_KEY for t in doc["spec"].get("taints") or [])
            cordoned = CORDONED in (doc["metadata"].get("annotations") or {})
            if (tainted or cordoned) and not self.live_execution_on(claims.get(name, "")):
                out.append(f"node {name} tainted/cordoned with no execution")
            if doc["metadata"].get("deletionTimestamp"):
                out.append(f"node {name} still Terminating")
        for claim in self.cluster.of_kind("NodeClaim"):
            if claim["metadata"].get("deletionTimestamp"):
                out.append(f"nodeclaim {claim['metadata']['name']} still Terminating")
        recorded = {
            parsed[1]
            for c in self.cluster.of_kind("NodeClaim")
            if (parsed := parse_provider_id(str((c.get("status") or {}).get("providerID") or ""))) is not None
        }
        names = {c["metadata"]["name"] for c in self.cluster.of_kind("NodeClaim")}
        for instance in self.cloud.live():
            if instance.id not in recorded:
                out.append(
                    f"instance {instance.id} ({instance.tags.get(NODECLAIM_TAG)}) leaked: no NodeClaim records it"
                )
        for name in names:
            if name in self.no_instance_since:
                out.append(f"nodeclaim {name} without an instance")
        for node, since in self.stuck_since.items():
            out.append(f"node {node} stuck since tick {since}")
        return out

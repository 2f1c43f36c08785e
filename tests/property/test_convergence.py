"""Whatever dies, whenever, the cluster converges (issue 21's property).

Random sequences of pending-pod batches, planner ticks, NodePool template changes that drift the nodes, Spot warnings
(some late), rebalance recommendations, instances terminated behind nodewright's back (with or without their
state-change event), PodDisruptionBudgets set to block and cleared, Nodes and NodeClaims deleted by a user, and crashes
(an execution, a planner tick, a provisioner batch or an interruption handler killed at any port call, its partial
writes kept) run over the in-memory world of `convergence_world`, whose services are nodewright's own. After every
operation:

1. no pod a blocking PodDisruptionBudget covers is evicted, deleted or terminated with its instance before its node's
   deadline (a Spot warning's receipt plus its two minutes; an instance that went away on its own);
2. no node carries nodewright's `karpenter.sh/disrupted` taint (any effect) or cordon with no live execution for more
   than one completed planner tick;
3. no NodeClaim is without a running instance for more than two completed ticks (once past the provisioner's launch
   time-out, for a claim whose launch never happened);
4. no NodeClaim ever has two running instances.

Then faults stop (the budget is cleared, a message whose handler died is delivered again) and the world runs
`CONVERGENCE_TICKS` rounds of a forwarder batch, a planner tick and a minute of Step Functions. By then every pending
pod is placed or explained by the provisioner, no node is tainted or cordoned without an execution, no NodeClaim or
Node is Terminating, every NodeClaim has its instance and no instance is left that no NodeClaim records.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from convergence_world import START, TICK_SECONDS, World, event, instant_planner_lock
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from nodewright.service.workflow import PREPARE_PROTECTION_SECONDS

# The stated bound: once faults stop, this many planner ticks (a minute each) are enough. A rebalance recommendation's
# execution holds its node through the protection window (PREPARE_PROTECTION_SECONDS, ten minutes here), and a user's
# deletion of that NodeClaim waits for it, so the bound is that window and then a few ticks for the Deleted workflow.
SETTLE_TICKS = 4
CONVERGENCE_TICKS = math.ceil(PREPARE_PROTECTION_SECONDS / TICK_SECONDS) + SETTLE_TICKS
MAX_PODS = 14

DT = st.sampled_from([5, 15, 30, 60])
PICK = st.integers(min_value=0, max_value=63)
FUSE = st.none() | st.integers(min_value=0, max_value=16)
DEATH = st.sampled_from(["FAILED", "ABORTED", "TIMED_OUT"])


class Convergence(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.world = World()
        self.events = 0

    # ------------------------------------------------------------------------------ helpers

    def advance(self, seconds: float) -> None:
        """Time passes: Step Functions runs whatever is due, the world settles."""
        self.world.driver.run_until(self.world.clock.now() + seconds)
        self.world.settle()

    def instance(self, pick: int) -> str:
        live = sorted(i.id for i in self.world.cloud.live())
        return live[pick % len(live)] if live else ""

    def next_event_id(self) -> str:
        self.events += 1
        return f"evt-{self.events}"

    # -------------------------------------------------------------------------------- rules

    @initialize(web=st.integers(1, 4), api=st.integers(0, 3))
    def first_pods(self, web: int, api: int) -> None:
        self.world.add_pods(web, api)
        self.world.settle()
        self.world.batch()

    @rule(dt=DT, web=st.integers(0, 3), api=st.integers(0, 3), fuse=FUSE)
    def pods_arrive(self, dt: int, web: int, api: int, fuse: int | None) -> None:
        self.advance(dt)
        room = max(0, MAX_PODS - self.world.pods)
        self.world.add_pods(min(web, room), min(api, max(0, room - web)))
        self.world.settle()
        self.world.batch(fuse)

    @rule(dt=DT, pick=PICK, count=st.integers(1, 4))
    def pods_leave(self, dt: int, pick: int, count: int) -> None:
        """A workload scales down: nodes empty out, and the planner's emptiness takes them away."""
        self.advance(dt)
        self.world.remove_pods(pick, count)

    @rule(fuse=FUSE)
    def planner_tick(self, fuse: int | None) -> None:
        self.advance(TICK_SECONDS)
        for body in self.world.redeliver[:]:
            self.world.redeliver.remove(body)
            self.world.deliver(body)
        self.world.planner_tick(fuse)

    @rule(dt=DT, pick=PICK, age=st.sampled_from([0, 0, 30, 200]), fuse=FUSE)
    def spot_warning(self, dt: int, pick: int, age: int, fuse: int | None) -> None:
        self.advance(dt)
        instance = self.instance(pick)
        if not instance:
            return
        now = self.world.clock.now()
        node = self.world.node_of(instance)
        if node and age <= 120:  # a warning within its notice: its drain may take pods two minutes after receipt
            self.world.may_take_after[node] = min(self.world.may_take_after.get(node, float("inf")), now + 120)
        self.world.note(f"spot warning for {instance} ({node or 'no node'}), sent {age}s ago")
        body = event("spot", instance, now - age, self.next_event_id(), **{"instance-action": "terminate"})
        self.world.deliver(body, fuse)

    @rule(dt=DT, pick=PICK, fuse=FUSE)
    def rebalance(self, dt: int, pick: int, fuse: int | None) -> None:
        self.advance(dt)
        instance = self.instance(pick)
        if instance:
            self.world.note(f"rebalance recommendation for {instance}")
            self.world.deliver(event("rebalance", instance, self.world.clock.now(), self.next_event_id()), fuse)

    @rule(dt=DT, pick=PICK, tell=st.booleans())
    def instance_vanishes(self, dt: int, pick: int, tell: bool) -> None:
        self.advance(dt)
        instance = self.instance(pick)
        if not instance:
            return
        node = self.world.node_of(instance)
        if node:
            self.world.may_take_after[node] = self.world.clock.now()
        self.world.cloud.kill(instance)
        self.world.note(f"instance {instance} terminated behind our back (event {'sent' if tell else 'lost'})")
        if tell:
            body = event("state", instance, self.world.clock.now(), self.next_event_id(), state="terminated")
            self.world.deliver(body)

    @rule(dt=DT, fuse=FUSE)
    def drift(self, dt: int, fuse: int | None) -> None:
        """A new NodePool template, and the planner's next tick: every node launched before it has drifted, and the
        planner's voluntary drains (under budget, a node at a time) replace them, so kills reach those drains too."""
        self.advance(dt)
        self.world.drift()
        self.planner_tick(fuse)

    @rule(dt=DT, block=st.booleans())
    def pdb(self, dt: int, block: bool) -> None:
        self.advance(dt)
        self.world.set_pdb(block)

    @rule(dt=DT, pick=PICK, kind=st.sampled_from(["NodeClaim", "Node"]))
    def user_deletes(self, dt: int, pick: int, kind: str) -> None:
        self.advance(dt)
        names = sorted(d["metadata"]["name"] for d in self.world.cluster.of_kind(kind))
        if names:
            name = names[pick % len(names)]
            self.world.note(f"kubectl delete {kind.lower()}/{name}")
            self.world.cluster.request_delete(kind, name, self.world.iso_now())

    @rule(pick=PICK, fuse=st.integers(min_value=0, max_value=12), death=DEATH, dt=DT)
    def execution_dies(self, pick: int, fuse: int, death: str, dt: int) -> None:
        running = sorted(self.world.driver.running(), key=lambda e: e.name)
        if running:
            victim = running[pick % len(running)]
            victim.fuse, victim.death = fuse, death
        self.advance(dt)

    @rule(after=st.integers(min_value=0, max_value=6), fuse=st.integers(min_value=0, max_value=12), death=DEATH)
    def step_dies(self, after: int, fuse: int, death: str) -> None:
        """The step some execution runs `after` steps from now dies in it (reaches the executions that start and end
        between two operations)."""
        self.world.driver.next_death = (after, fuse, death)

    # ---------------------------------------------------------------------------- invariants

    @invariant()
    def nothing_broken(self) -> None:
        self.world.check()
        assert not self.world.violations, self.report()

    def teardown(self) -> None:
        world = self.world
        try:
            world.set_pdb(False)
            for _ in range(CONVERGENCE_TICKS):
                self.advance(TICK_SECONDS)
                for body in world.redeliver[:]:
                    world.redeliver.remove(body)
                    world.deliver(body)
                world.batch()
                world.planner_tick()
                world.check()
                assert not world.violations, self.report()
            left = world.unconverged()
            assert not left, f"not converged {CONVERGENCE_TICKS} ticks after faults stopped: {left}\n{self.report()}"
        finally:
            world.driver.close()

    def report(self) -> str:
        lines = [*self.world.violations, "journal:", *self.world.journal[-60:]]
        return "\n".join(lines) + f"\n(world time {self.world.clock.t - START:.0f}s)"


@pytest.fixture(autouse=True)
def _instant_lock() -> Iterator[None]:
    with instant_planner_lock():
        yield


Convergence.TestCase.settings = settings(
    max_examples=80,
    stateful_step_count=30,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
TestConvergence = Convergence.TestCase

"""Helpers the fault-injection tests share: a blocking PodDisruptionBudget, a workflow's progress read from its
history, and the drain rounds it recorded."""

from __future__ import annotations

import json
from typing import Any

from test_disruption import Stack, pdb
from worldkit import World, wait_for


def blocking_pdb(world: World, namespace: str, app: str) -> None:
    """A PodDisruptionBudget that allows no eviction of the app's pods."""
    pdb(world, namespace, app, max_unavailable=0)


def states_entered(stack: Stack, execution: str) -> list[str]:
    """The names of the states the execution entered, in order."""
    return [
        e["stateEnteredEventDetails"]["name"] for e in stack.history(execution) if e["type"].endswith("StateEntered")
    ]


def wait_for_blocked_drain(stack: Stack, execution: str, timeout: float = 180) -> None:
    """Until the execution has run a drain round that a PodDisruptionBudget held back (it entered CheckDrain, or the
    urgent branch's CheckDrainNow)."""

    def checked() -> bool:
        return any(state.startswith("CheckDrain") for state in states_entered(stack, execution))

    wait_for(checked, timeout, "a drain round held back by the PDB")


def stop(stack: Stack, execution: str) -> None:
    """Stop the execution as a time-out or a crash ends it (no Catch runs), and wait until Step Functions says so."""
    stack.sfn.stop_execution(executionArn=execution, error="Faults", cause="stopped as a time-out would")
    wait_for(
        lambda: stack.sfn.describe_execution(executionArn=execution)["status"] != "RUNNING",
        60,
        f"execution {execution} to stop",
    )


def deletions(stack: Stack, execution: str) -> list[tuple[float, str]]:
    """(epoch seconds, pod) for every pod a drain round of the execution deleted (rather than evicted)."""
    return [
        (e["timestamp"].timestamp(), pod)
        for e in stack.history(execution)
        if e["type"] == "TaskStateExited"
        for pod in json.loads(e["stateExitedEventDetails"]["output"]).get("drain", {}).get("deleted", [])
    ]


def execution_named(stack: Stack, name: str) -> str:
    """The ARN of the execution called `name`."""
    return next(e["executionArn"] for e in stack.executions() if e["name"] == name)


def taints(world: World, node: str) -> list[str]:
    """`key:effect` of each of the node's taints."""
    return [f"{t.key}:{t.effect}" for t in world.core.read_node(node).spec.taints or []]


def events_for(world: World, node: str, reason: str) -> list[Any]:
    """The Kubernetes events with `reason` about the node (any namespace)."""
    found = world.core.list_event_for_all_namespaces(field_selector=f"involvedObject.name={node},reason={reason}")
    return list(found.items)

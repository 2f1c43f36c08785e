"""The forwarder against the real API server, sending to a Lambda function in moto.

The forwarder runs as it would in the cluster, as `python -m nodewright.forwarder` processes (one per
replica) with the world's kubeconfig; its provisioner is the `recorder` function (tests/e2e/functions),
which stores every payload it receives, and what the provisioner's loader makes of it, in DynamoDB. Pods
cannot schedule because they select a label no node has, so the real scheduler marks them Unschedulable.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from worldkit import World, wait_for

NO_SUCH_LABEL = {"nodewright-e2e/does-not-exist": "true"}
RESEND_SECONDS = 8.0


@dataclass
class Recorder:
    """The recording function and its table."""

    world: World
    function: str
    table: str

    def batches(self) -> list[dict[str, Any]]:
        """Every payload received so far, oldest first, with `received_at`, `loaded` and `errors` added."""
        dynamodb = self.world.aws("dynamodb")
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"TableName": self.table}
        while True:
            page = dynamodb.scan(**kwargs)
            items.extend(page["Items"])
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        out = []
        for item in items:
            body = json.loads(item["body"]["S"])
            body["received_at"] = float(item["received_at"]["N"])
            body["loaded"] = int(item["loaded"]["N"])
            body["errors"] = json.loads(item["errors"]["S"])
            out.append(body)
        return sorted(out, key=lambda b: b["received_at"])

    def batches_with(self, namespace: str) -> list[dict[str, Any]]:
        """The payloads holding pods of `namespace`, each reduced to those pods (other tests share the sink)."""
        out = []
        for batch in self.batches():
            pods = [p for p in batch["pods"] if p["namespace"] == namespace]
            if pods:
                out.append({**batch, "pods": pods, "all_pods": batch["pods"]})
        return out


@pytest.fixture(scope="module")
def recorder(local_world: World) -> Recorder:
    table = f"forwarder-batches-{uuid.uuid4().hex[:6]}"
    local_world.aws("dynamodb").create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    name = f"recorder-{uuid.uuid4().hex[:6]}"
    local_world.create_function(name, "recorder", environment={"RECORD_TABLE": table})
    return Recorder(local_world, name, table)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ForwarderProcess:
    """One replica: `python -m nodewright.forwarder` with the world's environment and test timings."""

    def __init__(self, world: World, function: str, identity: str, log_dir: Path, overrides: dict[str, str]):
        self.identity = identity
        self.port = _free_port()
        self.log_path = log_dir / f"{identity}.log"
        env = {
            **os.environ,
            **world.state.env(),
            "NODEWRIGHT_PROVISIONER_FUNCTION": function,
            "NODEWRIGHT_FORWARDER_IDLE_SECONDS": "1.5",
            "NODEWRIGHT_FORWARDER_MAX_SECONDS": "10",
            "NODEWRIGHT_FORWARDER_RESEND_INITIAL_SECONDS": str(RESEND_SECONDS),
            # The back-off stays at its initial value, so the third send follows the second as fast as the first.
            "NODEWRIGHT_FORWARDER_RESEND_MAX_SECONDS": str(RESEND_SECONDS),
            "NODEWRIGHT_FORWARDER_LEASE_SECONDS": "4",
            "NODEWRIGHT_FORWARDER_RENEW_DEADLINE_SECONDS": "3",
            "NODEWRIGHT_FORWARDER_RETRY_SECONDS": "0.5",
            "NODEWRIGHT_FORWARDER_PORT": str(self.port),
            "NODEWRIGHT_FORWARDER_BIND": "127.0.0.1",
            "POD_NAME": identity,
            **overrides,
        }
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "nodewright.forwarder"],
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def metric(self, name: str) -> float:
        """A metric's value from /metrics (0 when it has no sample yet)."""
        _, text = self.get("/metrics")
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[-1])
        return 0.0

    def ready(self) -> bool:
        return self.get("/readyz")[0] == 200 and self.get("/healthz")[0] == 200

    def leading(self) -> bool:
        return self.metric("nodewright_forwarder_leader") == 1

    def sent_ok(self) -> float:
        return self.metric('nodewright_forwarder_batches_total{outcome="ok"}')

    def log_lines(self) -> list[dict[str, Any]]:
        lines = []
        for raw in self.log_path.read_text().splitlines():
            try:
                lines.append(json.loads(raw))
            except json.JSONDecodeError:
                lines.append({"message": raw})
        return lines

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                print(f"forwarder {self.identity} did not stop in time; its log:\n{self.log_path.read_text()[-4000:]}")
        self._log.close()
        return self.process.returncode


@pytest.fixture
def forwarders(local_world: World, recorder: Recorder, namespace: str, tmp_path: Path) -> Iterator[Any]:
    """A factory of forwarder replicas sharing one Lease in the test's namespace; all stopped afterwards."""
    started: list[ForwarderProcess] = []
    lease = f"forwarder-{uuid.uuid4().hex[:6]}"

    def start(identity: str) -> ForwarderProcess:
        overrides = {"POD_NAMESPACE": namespace, "NODEWRIGHT_FORWARDER_LEASE_NAME": lease}
        replica = ForwarderProcess(local_world, recorder.function, identity, tmp_path, overrides)
        started.append(replica)
        wait_for(replica.ready, 30, f"forwarder {identity} ready ({replica.log_path})")
        return replica

    yield start
    for replica in started:
        replica.stop()
        if os.environ.get("NODEWRIGHT_E2E_SHOW_LOGS"):
            print(replica.log_path.read_text())


def _unschedulable_pod(
    world: World, namespace: str, name: str, selector: dict[str, str] | None = None, tolerate: str = ""
) -> None:
    spec: dict[str, Any] = {
        "nodeSelector": selector or NO_SUCH_LABEL,
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
    }
    if tolerate:
        spec["tolerations"] = [{"key": tolerate, "operator": "Exists"}]
    world.core.create_namespaced_pod(
        namespace,
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "waiting"}}, "spec": spec},
    )


def _is_unschedulable(world: World, namespace: str, name: str) -> bool:
    pod = world.core.read_namespaced_pod(name, namespace)
    return any(
        c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
        for c in (pod.status.conditions or [])
    )


def _expected_batch_id(pods: list[dict[str, Any]], delivery: int) -> str:
    lines = sorted(f"{p['uid']}:{p['resourceVersion']}:{delivery}" for p in pods)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _names(batch: dict[str, Any]) -> set[str]:
    return {p["name"] for p in batch["pods"]}


def _parse_time(stamp: str) -> float:
    import datetime

    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.UTC).timestamp()


def _too_big_daemonset(namespace: str) -> dict[str, Any]:
    """A DaemonSet for the test's node whose pod asks for more CPU than the node has."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "too-big"},
        "spec": {
            "selector": {"matchLabels": {"app": "too-big"}},
            "template": {
                "metadata": {"labels": {"app": "too-big"}},
                "spec": {
                    "nodeSelector": {"nodewright-e2e/forwarder": namespace},
                    "tolerations": [{"key": "nodewright-e2e/forwarder", "operator": "Exists"}],
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}],
                },
            },
        },
    }


def _pods_that_are_never_the_provisioners(world: World, namespace: str, node: str) -> str:
    """A DaemonSet pod that cannot fit `node` (pending, but never the provisioner's business) and a pod bound to
    `node` by name; returns the DaemonSet pod's name once the scheduler has marked it Unschedulable."""
    world.apps.create_namespaced_daemon_set(namespace, _too_big_daemonset(namespace))
    bound = {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}
    world.core.create_namespaced_pod(
        namespace, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bound"}, "spec": bound}
    )

    def unschedulable_daemon_pod() -> str | None:
        daemon_pods = world.core.list_namespaced_pod(namespace, label_selector="app=too-big").items
        return next(
            (p.metadata.name for p in daemon_pods if _is_unschedulable(world, namespace, p.metadata.name)), None
        )

    return wait_for(unschedulable_daemon_pod, 30, "the DaemonSet's pod to be Unschedulable")


def _pending_pods(world: World, namespace: str, names: list[str], later: dict[str, str]) -> float:
    """Pods `names`, which no node will ever fit, and "later", which fits the test's node once it has the `later`
    labels; returns when the last was created, after the scheduler has marked them all Unschedulable."""
    for name in names:
        _unschedulable_pod(world, namespace, name)
    _unschedulable_pod(world, namespace, "later", later, tolerate="nodewright-e2e/forwarder")
    created_last = time.time()
    for name in [*names, "later"]:
        wait_for(lambda n=name: _is_unschedulable(world, namespace, n), 30, f"{name} Unschedulable")
    return created_last


def _assert_one_batch_of_hints(world: World, namespace: str, first: dict[str, Any], names: list[str]) -> None:
    """The first batch holds all the pending pods `names` and nothing else from this namespace, as hints."""
    assert _names(first) == set(names)
    assert first["cluster"] == world.state.cluster
    assert first["batch_id"] == _expected_batch_id(first["all_pods"], 1)
    api_pods = {n: world.core.read_namespaced_pod(n, namespace).metadata for n in names}
    # Hints only: where to read each pod and the version the forwarder saw, nothing of its spec.
    assert {p["name"]: (p["uid"], p["resourceVersion"]) for p in first["pods"]} == {
        n: (m.uid, m.resource_version) for n, m in api_pods.items()
    }
    assert all(set(p) == {"namespace", "name", "uid", "resourceVersion"} for p in first["pods"])
    # The provisioner's payload check reads every hint, without errors.
    assert first["errors"] == [] and first["loaded"] == len(first["all_pods"])


def _resent(
    recorder: Recorder, namespace: str, previous: dict[str, Any], delivery: int, names: list[str]
) -> dict[str, Any]:
    """Delivery number `delivery` of the pending pods, the one after `previous`: the pods `names` again, sent no
    sooner than the back-off after `previous`, with its own delivery's batch id."""
    batch = wait_for(
        lambda: (b := recorder.batches_with(namespace)) and len(b) >= delivery and b[delivery - 1],
        60,
        f"delivery {delivery} of the pending pods",
    )
    assert _names(batch) == set(names)
    assert _parse_time(batch["sent_at"]) - _parse_time(previous["sent_at"]) >= RESEND_SECONDS
    assert batch["batch_id"] == _expected_batch_id(batch["all_pods"], delivery) != previous["batch_id"]
    return batch


def _print_figures(
    replica: ForwarderProcess, first: dict[str, Any], second: dict[str, Any], created_last: float
) -> None:
    """The first batch's size and timings as the replica logged them, and the gap to the re-sent batch."""
    sent_lines = [line for line in replica.log_lines() if line.get("message") == "batch sent"]
    ours = next(line for line in sent_lines if line["batch_id"] == first["batch_id"])
    figures = {
        "pods": len(first["all_pods"]),
        "bytes": ours["bytes"],
        "bytes_per_pod": ours["bytes"] // len(first["all_pods"]),
        "window_seconds": ours["window_seconds"],
        "last_pod_joined_to_send_seconds": ours["since_last_pod_seconds"],
        "invoke_seconds": ours["invoke_seconds"],
        "last_pod_created_to_received_seconds": round(first["received_at"] - created_last, 3),
        "resend_gap_seconds": round(_parse_time(second["sent_at"]) - _parse_time(first["sent_at"]), 3),
    }
    print("\nforwarder e2e figures: " + json.dumps(figures))


def test_pending_pods_go_out_in_one_batch_of_hints_and_again_only_after_the_backoff(
    local_world: World, recorder: Recorder, namespace: str, forwarders: Any
) -> None:
    replica = forwarders("solo")
    wait_for(replica.leading, 15, "the only replica to lead")
    node = local_world.make_node(
        labels={"nodewright-e2e/forwarder": namespace},
        taints=[{"key": "nodewright-e2e/forwarder", "value": namespace, "effect": "NoSchedule"}],
        cpu="1",
    )
    try:
        daemon_pod = _pods_that_are_never_the_provisioners(local_world, namespace, node)
        names, later = [f"wait-{i}" for i in range(4)], {"nodewright-e2e/later": namespace}
        created_last = _pending_pods(local_world, namespace, names, later)
        first = wait_for(lambda: recorder.batches_with(namespace), 30, "a batch with the pending pods")[0]
        _assert_one_batch_of_hints(local_world, namespace, first, [*names, "later"])

        # "later" gets a node (as if the provisioner's capacity arrived): the scheduler binds it, and the
        # forwarder forgets it.
        local_world.core.patch_node(node, {"metadata": {"labels": later}})
        wait_for(lambda: local_world.core.read_namespaced_pod("later", namespace).spec.node_name, 30, "later bound")

        # The others are still pending, so they go out again, but only once the back-off has passed; and again:
        # the same pods in the same versions, but a new delivery with its own batch id, so the provisioner
        # evaluates them afresh (only a retried Invoke of one delivery repeats an id).
        second = _resent(recorder, namespace, first, 2, names)
        third = _resent(recorder, namespace, second, 3, names)
        versions = [{p["uid"]: p["resourceVersion"] for p in b["all_pods"]} for b in (second, third)]
        assert versions[0] == versions[1]

        # Neither the DaemonSet's pod nor the bound pod was ever sent, and "later" only before it was bound.
        batches = recorder.batches_with(namespace)
        sent = set().union(*(_names(b) for b in batches))
        assert daemon_pod not in sent and "bound" not in sent
        assert [b["batch_id"] for b in batches if "later" in _names(b)] == [first["batch_id"]]
        assert _is_unschedulable(local_world, namespace, daemon_pod)
        _print_figures(replica, first, second, created_last)
    finally:
        local_world.core.delete_node(node)


def test_only_the_leader_sends_and_the_other_takes_over(
    local_world: World, recorder: Recorder, namespace: str, forwarders: Any
) -> None:
    a = forwarders("replica-a")
    wait_for(a.leading, 15, "replica-a to lead")
    b = forwarders("replica-b")
    # b watches and is ready, but stays standby while a renews.
    assert b.ready() and not b.leading()

    _unschedulable_pod(local_world, namespace, "first")
    batch = wait_for(lambda: recorder.batches_with(namespace), 30, "a batch from the leader")[0]
    assert _names(batch) == {"first"}
    wait_for(lambda: a.sent_ok() >= 1, 10, "replica-a to count its batch")
    assert b.sent_ok() == 0 and not b.leading()
    ids_from_a = {line.get("batch_id") for line in a.log_lines() if line.get("message") == "batch sent"}
    assert batch["batch_id"] in ids_from_a
    assert not [line for line in b.log_lines() if line.get("message") == "batch sent"]

    # The leader stops (as on a rollout: SIGTERM); it hands the Lease back and the standby takes over.
    assert a.stop() == 0
    assert any(line.get("message") == "released the lease" for line in a.log_lines())
    wait_for(b.leading, 15, "replica-b to take over")
    lease = client.CoordinationV1Api(local_world.api_client).read_namespaced_lease(_lease_name(b), namespace)
    assert lease.spec.holder_identity == "replica-b"

    _unschedulable_pod(local_world, namespace, "second")
    after = wait_for(
        lambda: [x for x in recorder.batches_with(namespace) if "second" in _names(x)], 60, "a batch from replica-b"
    )[0]
    ids_from_b = {line.get("batch_id") for line in b.log_lines() if line.get("message") == "batch sent"}
    assert after["batch_id"] in ids_from_b
    assert b.sent_ok() >= 1

    # A leader that dies without handing the Lease back (SIGKILL) is replaced once its lease expires.
    c = forwarders("replica-c")
    assert not c.leading()
    assert b.stop(signal.SIGKILL) == -signal.SIGKILL
    wait_for(c.leading, 30, "replica-c to take the expired lease")
    lease = client.CoordinationV1Api(local_world.api_client).read_namespaced_lease(_lease_name(c), namespace)
    assert lease.spec.holder_identity == "replica-c" and lease.spec.lease_transitions >= 2
    _unschedulable_pod(local_world, namespace, "third")
    last = wait_for(
        lambda: [x for x in recorder.batches_with(namespace) if "third" in _names(x)], 60, "a batch from replica-c"
    )[0]
    assert last["batch_id"] in {line.get("batch_id") for line in c.log_lines() if line.get("message") == "batch sent"}


def _lease_name(replica: ForwarderProcess) -> str:
    start = next(line for line in replica.log_lines() if line.get("message") == "forwarder starting")
    return str(start["lease"]).split("/", 1)[1]

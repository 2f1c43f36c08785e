"""Port of Karpenter v1.14.1's pkg/controllers/capacitybuffer/helpers_test.go, one test per It.

calculateLimitReplicas is `model.capacitybuffer.limit_replicas` (None where Karpenter returns matched=false);
totalPodRequests is the effective request nodewright computes for every pod (`model.kube`, Kubernetes'
PodRequests rules, sidecars included), here of a buffer's virtual pod; calculatePercentageReplicas is
`percentage_replicas`. The implicit `pods: 1` nodewright adds to every pod is left out, as Karpenter's sum has none.
"""

from __future__ import annotations

from typing import Any

from buffer_kit import container

from nodewright.model.capacitybuffer import CapacityBuffer, limit_replicas, percentage_replicas, resolve
from nodewright.model.quantity import to_canonical

FILE = "pkg/controllers/capacitybuffer/helpers_test.go"
GI = 1024**3
MI = 1024**2


def requests(containers: list[dict[str, Any]], init: list[dict[str, Any]] | None = None) -> dict[str, int]:
    """The effective requests of a virtual pod built from this pod spec (without the implicit `pods`)."""
    spec: dict[str, Any] = {"containers": containers}
    if init:
        spec["initContainers"] = init
    template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": {"spec": spec}}
    found = resolve(CapacityBuffer("default", "cb", pod_template_ref="t", replicas=1), {"default/t": template}, {})
    assert found.ready, found.message
    return {k: v for k, v in found.pods[0].requests.items() if k != "pods"}


def limits(**quantities: str) -> dict[str, int]:
    return {name: to_canonical(name, value) for name, value in quantities.items()}


def sidecar(cpu: str, name: str) -> dict[str, Any]:
    return container(cpu, name=name, restartPolicy="Always")


# ------------------------------------------------------------------------------------------- calculateLimitReplicas


def test_should_calculate_replicas_based_on_cpu_limits() -> None:
    """helpers_test.go Context("calculateLimitReplicas"): It("should calculate replicas based on CPU limits")."""
    assert limit_replicas(limits(cpu="4"), requests([container("1")])) == 4


def test_should_calculate_replicas_based_on_memory_limits() -> None:
    """helpers_test.go Context("calculateLimitReplicas"): It("should calculate replicas based on memory limits")."""
    assert limit_replicas(limits(memory="2Gi"), requests([container(memory="512Mi")])) == 4


def test_should_take_the_minimum_across_multiple_resources() -> None:
    """helpers_test.go Context("calculateLimitReplicas"): It("should take the minimum across multiple resources")."""
    assert limit_replicas(limits(cpu="8", memory="4Gi"), requests([container("1", "1Gi")])) == 4


def test_should_sum_requests_across_multiple_containers() -> None:
    """helpers_test.go Context("calculateLimitReplicas"): It("should sum requests across multiple containers")."""
    pod = requests([container("500m", name="a"), container("500m", name="b")])
    assert limit_replicas(limits(cpu="3"), pod) == 3


def test_should_use_init_container_max_if_larger_than_sum_of_containers() -> None:
    """helpers_test.go Context("calculateLimitReplicas"): It("should use init container max if larger than sum of
    containers")."""
    pod = requests([container("1")], init=[container("4", name="init")])
    assert limit_replicas(limits(cpu="8"), pod) == 2


def test_should_use_container_sum_if_larger_than_init_containers() -> None:
    """helpers_test.go Context("calculateLimitReplicas"): It("should use container sum if larger than init
    containers")."""
    pod = requests([container("2")], init=[container("500m", name="init")])
    assert limit_replicas(limits(cpu="6"), pod) == 3


def test_should_return_false_when_pod_has_no_resource_requests() -> None:
    """helpers_test.go Context("calculateLimitReplicas"): It("should return false when pod has no resource
    requests")."""
    assert limit_replicas(limits(cpu="4"), requests([container()])) is None


def test_should_return_false_when_no_limit_resources_match_pod_requests() -> None:
    """helpers_test.go Context("calculateLimitReplicas"): It("should return false when no limit resources match pod
    requests")."""
    assert limit_replicas(limits(memory="4Gi"), requests([container("1")])) is None


def test_should_floor_divide_no_rounding_up() -> None:
    """helpers_test.go Context("calculateLimitReplicas"): It("should floor divide (no rounding up)")."""
    assert limit_replicas(limits(cpu="10"), requests([container("3")])) == 3


def test_should_handle_millicore_level_precision() -> None:
    """helpers_test.go Context("calculateLimitReplicas"): It("should handle millicore-level precision")."""
    assert limit_replicas(limits(cpu="1"), requests([container("250m")])) == 4


def test_should_return_0_when_limit_is_smaller_than_a_single_pod_request() -> None:
    """helpers_test.go Context("calculateLimitReplicas"): It("should return 0 when limit is smaller than a single pod
    request")."""
    assert limit_replicas(limits(cpu="1"), requests([container("2")])) == 0


# ------------------------------------------------------------------------------------------- totalPodRequests


def test_should_sum_requests_from_all_containers() -> None:
    """helpers_test.go Context("totalPodRequests"): It("should sum requests from all containers")."""
    pod = requests([container("1", "512Mi", name="a"), container("500m", "256Mi", name="b")])
    assert pod == {"cpu": 1500, "memory": 768 * MI}


def test_should_take_max_of_init_containers_vs_regular_containers() -> None:
    """helpers_test.go Context("totalPodRequests"): It("should take max of init containers vs regular containers")."""
    pod = requests([container("1")], init=[container("4", name="i1"), container("2", name="i2")])
    assert pod["cpu"] == 4000


def test_should_return_empty_list_for_pod_with_no_requests() -> None:
    """helpers_test.go Context("totalPodRequests"): It("should return empty list for pod with no requests")."""
    assert {k: v for k, v in requests([container()]).items() if v} == {}


def test_should_handle_mixed_resources_across_containers() -> None:
    """helpers_test.go Context("totalPodRequests"): It("should handle mixed resources across containers")."""
    pod = requests([container("1", name="a"), container(memory="1Gi", name="b")])
    assert (pod["cpu"], pod["memory"]) == (1000, GI)


def test_should_sum_sidecar_init_containers_with_regular_containers() -> None:
    """helpers_test.go Context("totalPodRequests"): It("should sum sidecar init containers with regular
    containers")."""
    assert requests([container("1")], init=[sidecar("500m", "s")])["cpu"] == 1500


def test_should_sum_multiple_sidecar_init_containers_with_regular_containers() -> None:
    """helpers_test.go Context("totalPodRequests"): It("should sum multiple sidecar init containers with regular
    containers")."""
    assert requests([container("1")], init=[sidecar("500m", "s1"), sidecar("200m", "s2")])["cpu"] == 1700


def test_should_use_max_of_regular_init_container_plus_preceding_sidecars_vs_running_total() -> None:
    """helpers_test.go Context("totalPodRequests"): It("should use max of regular init container + preceding
    sidecars vs running total")."""
    pod = requests([container("1")], init=[sidecar("500m", "s"), container("4", name="init")])
    assert pod["cpu"] == 4500


def test_should_handle_sidecar_after_regular_init_container() -> None:
    """helpers_test.go Context("totalPodRequests"): It("should handle sidecar after regular init container")."""
    pod = requests([container("1")], init=[container("4", name="init"), sidecar("500m", "s")])
    assert pod["cpu"] == 4000


def test_should_not_treat_init_containers_without_restartpolicy_as_sidecars() -> None:
    """helpers_test.go Context("totalPodRequests"): It("should not treat init containers without restartPolicy as
    sidecars")."""
    assert requests([container("1")], init=[container("2", name="init")])["cpu"] == 2000


# ----------------------------------------------------------------------------------- calculatePercentageReplicas


def test_should_calculate_percentage_and_ceil() -> None:
    """helpers_test.go Context("calculatePercentageReplicas"): It("should calculate percentage and ceil")."""
    assert percentage_replicas(10, 20) == 2


def test_should_ceil_fractional_results() -> None:
    """helpers_test.go Context("calculatePercentageReplicas"): It("should ceil fractional results")."""
    assert percentage_replicas(3, 10) == 1


def test_should_return_at_least_1_when_percentage_gt_0_and_replicas_gt_0() -> None:
    """helpers_test.go Context("calculatePercentageReplicas"): It("should return at least 1 when percentage > 0 and
    replicas > 0")."""
    assert percentage_replicas(1, 1) == 1


def test_should_return_0_when_scalable_has_0_replicas() -> None:
    """helpers_test.go Context("calculatePercentageReplicas"): It("should return 0 when scalable has 0 replicas")."""
    assert percentage_replicas(0, 50) == 0


def test_should_return_0_when_percentage_is_0() -> None:
    """helpers_test.go Context("calculatePercentageReplicas"): It("should return 0 when percentage is 0")."""
    assert percentage_replicas(10, 0) == 0


def test_should_handle_100_percent() -> None:
    """helpers_test.go Context("calculatePercentageReplicas"): It("should handle 100 percent")."""
    assert percentage_replicas(5, 100) == 5


def test_should_handle_large_percentages_gt_100() -> None:
    """helpers_test.go Context("calculatePercentageReplicas"): It("should handle large percentages (>100)")."""
    assert percentage_replicas(5, 200) == 10

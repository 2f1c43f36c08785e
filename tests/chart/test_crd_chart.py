"""charts/nodewright-crd: the CRDs as a chart of their own (as Karpenter's karpenter-crd), the same objects as
charts/nodewright/crds (one generator writes both), with short names that never shadow Karpenter's."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import yaml
from conftest import CHART, CRD_CHART, ROOT, run_helm

from nodewright import __version__

# The short names of Karpenter's CRDs at v1.14.1 (aws/karpenter-provider-aws pkg/apis/crds/*.yaml): EC2NodeClass
# ec2nc and ec2ncs, CapacityBuffer cb, NodeOverlay overlays; NodePool and NodeClaim have none.
KARPENTER_SHORT_NAMES = {"ec2nc", "ec2ncs", "cb", "overlays"}
# Their plural and singular names, which kubectl also resolves (shared ones need the group: nodepools.nodewright.io).
KARPENTER_NAMES = {"nodepools", "nodepool", "nodeclaims", "nodeclaim", "ec2nodeclasses", "ec2nodeclass"}


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_crds", ROOT / "scripts" / "gen_crds.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _render(helm: Path, *sets: str) -> dict[str, dict[str, Any]]:
    args = ["template", "nodewright-crd", str(CRD_CHART)]
    for value in sets:
        args += ["--set", value]
    done = run_helm(helm, *args)
    assert done.returncode == 0, done.stderr
    return {d["metadata"]["name"]: d for d in yaml.safe_load_all(done.stdout) if d}


def test_the_crd_chart_templates_are_what_the_generator_writes() -> None:
    for name, text in _generator().render_crd_chart().items():
        assert (CRD_CHART / "templates" / name).read_text() == text, f"run python scripts/gen_crds.py ({name})"


def test_the_crd_chart_installs_the_same_crds_as_the_main_chart(helm: Path) -> None:
    rendered = _render(helm)
    # The CapacityBuffer CRD is the shared autoscaling.x-k8s.io API: only the main chart's crds/ has it (installed
    # where none exists); templated here, it would clash with Karpenter's or Cluster Autoscaler's.
    owned = (CHART / "crds").glob("nodewright.io_*.yaml")
    main = {d["metadata"]["name"]: d for d in (yaml.safe_load(p.read_text()) for p in owned)}
    assert (
        set(rendered)
        == set(main)
        == {f"{p}.nodewright.io" for p in ("nodepools", "ec2nodeclasses", "nodeclaims", "nodeoverlays")}
    )
    for name, crd in main.items():
        assert rendered[name] == crd, name


def test_additional_annotations_reach_every_crd(helm: Path) -> None:
    rendered = _render(helm, "additionalAnnotations.team=platform")
    assert {n: d["metadata"]["annotations"] for n, d in rendered.items()} == {n: {"team": "platform"} for n in rendered}


def test_the_crd_chart_lints_strict_refuses_unknown_values_and_is_released_with_nodewright(helm: Path) -> None:
    done = run_helm(helm, "lint", "--strict", str(CRD_CHART))
    assert done.returncode == 0, done.stdout + done.stderr
    done = run_helm(helm, "template", "x", str(CRD_CHART), "--set", "additionalAnnotation.a=b")
    assert done.returncode != 0 and "additionalAnnotation" in done.stderr
    chart = yaml.safe_load((CRD_CHART / "Chart.yaml").read_text())
    assert chart["version"] == chart["appVersion"] == __version__


def test_short_names_do_not_collide_with_karpenters() -> None:
    """`kubectl get ec2nc` keeps meaning Karpenter's EC2NodeClass when both are installed."""
    names = {}
    for path in sorted((CHART / "crds").glob("nodewright.io_*.yaml")):
        spec = yaml.safe_load(path.read_text())["spec"]["names"]
        names[spec["kind"]] = spec["shortNames"]
    assert names == {"NodePool": ["np"], "NodeClaim": ["nc"], "EC2NodeClass": ["nwec2nc"], "NodeOverlay": ["nwoverlay"]}
    assert not {n for short in names.values() for n in short} & (KARPENTER_SHORT_NAMES | KARPENTER_NAMES)
    # The stand-ins of Karpenter's CRDs the end-to-end tests install carry Karpenter's short names.
    karpenter = {
        c["spec"]["names"]["kind"]: c["spec"]["names"].get("shortNames") for c in _generator().karpenter_crds()
    }
    assert karpenter["EC2NodeClass"] == ["ec2nc", "ec2ncs"]
    assert karpenter["NodeOverlay"] == ["overlays"]

#!/usr/bin/env bash
# `make package`: what a release ships, in dist/ (or $NODEWRIGHT_DIST):
#   nodewright-<version>.tgz                 the chart (helm package: an OCI-ready archive for `helm push`)
#   nodewright-crd-<version>.tgz             the CRD-only chart (as Karpenter's karpenter-crd)
#   nodewright-forwarder-<version>.tar       the forwarder image (cluster/forwarder/Dockerfile), `docker save`
#                                            format, which `docker load` and `crane push` read
# The charts are linted (--strict) first and the CRDs checked against scripts/gen_crds.py. The image needs a
# Docker daemon: without one this script writes the charts, says so and exits 1; NODEWRIGHT_PACKAGE_IMAGE=0
# packages the charts only (exit 0).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIST="${NODEWRIGHT_DIST:-$ROOT/dist}"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
log() { printf '[package] %s\n' "$*" >&2; }

version="$(PYTHONPATH="$ROOT/layers/core/python" "$PYTHON" -c 'import nodewright; print(nodewright.__version__)')"
helm="$(bash "$ROOT/scripts/build-helm.sh" | tail -1)"
mkdir -p "$DIST"

# The committed CRDs (both copies) must be what the generator writes: a stale copy would ship old schemas.
PYTHONPATH="$ROOT/layers/core/python" "$PYTHON" - "$ROOT" <<'PY'
import importlib.util, sys
from pathlib import Path
root = Path(sys.argv[1])
spec = importlib.util.spec_from_file_location("gen_crds", root / "scripts" / "gen_crds.py")
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
stale = [f"{out}/{name}" for out, files in ((module.OUT, module.render()), (module.CRD_CHART_OUT, module.render_crd_chart()))
         for name, text in files.items() if (out / name).read_text() != text]
if stale:
    sys.exit("stale CRDs (run python scripts/gen_crds.py): " + ", ".join(stale))
PY

required=(--set clusterName=lint --set region=us-east-1 --set provisionerFunction=lint)
"$helm" lint --strict "$ROOT/charts/nodewright" "${required[@]}" >&2
"$helm" lint --strict "$ROOT/charts/nodewright-crd" >&2
for chart in nodewright nodewright-crd; do
    "$helm" package "$ROOT/charts/$chart" --version "$version" --app-version "$version" -d "$DIST" >&2
    log "wrote $DIST/$chart-$version.tgz"
done

if [[ "${NODEWRIGHT_PACKAGE_IMAGE:-1}" == "0" ]]; then
    log "NODEWRIGHT_PACKAGE_IMAGE=0: the forwarder image was not built"
    exit 0
fi
if ! docker info >/dev/null 2>&1; then
    log "no Docker daemon reachable (docker info failed): the charts are in $DIST, the forwarder image was not built."
    log "Build it where Docker runs (make package there), or set NODEWRIGHT_PACKAGE_IMAGE=0 to package the charts only."
    exit 1
fi
image="nodewright-forwarder:$version"
docker build -f "$ROOT/cluster/forwarder/Dockerfile" -t "$image" "$ROOT" >&2
docker save "$image" -o "$DIST/nodewright-forwarder-$version.tar"
log "wrote $DIST/nodewright-forwarder-$version.tar ($image, $(docker image inspect -f '{{.Architecture}}' "$image"))"

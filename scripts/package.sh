#!/usr/bin/env bash
# `make package`: what a release ships, in dist/ (or $NODEWRIGHT_DIST):
#   nodewright-<version>.tgz                 the chart (helm package: an OCI-ready archive for `helm push`)
#   nodewright-crd-<version>.tgz             the CRD-only chart (as Karpenter's karpenter-crd)
#   nodewright-forwarder-<version>.tar       the forwarder image in `docker save` format (an OCI image layout with
#                                            Docker's manifest.json), which `docker load`, `crane push` and
#                                            `skopeo copy` read
# The charts are linted (--strict) first and the CRDs checked against scripts/gen_crds.py. The image's builder is
# NODEWRIGHT_IMAGE_BUILDER:
#   debian (default)  no container engine: Debian bookworm's Python 3.11 (mmdebstrap, as root; installed with
#                     apt-get when missing) and the Dockerfile's package set, modules and config, for this
#                     machine's architecture (python -m nodewright.localworld.image; its module doc says more)
#   docker            `docker build` of cluster/forwarder/Dockerfile (its pinned python:3.11-slim base) and
#                     `docker save`: needs a Docker daemon, and exits 1 saying so without one
# NODEWRIGHT_PACKAGE_IMAGE=0 packages the charts only.
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
image="nodewright-forwarder:$version"
archive="$DIST/nodewright-forwarder-$version.tar"
case "${NODEWRIGHT_IMAGE_BUILDER:-debian}" in
debian)
    PYTHONPATH="$ROOT/layers/core/python" "$PYTHON" -m nodewright.localworld.image --out "$archive" --version "$version" >&2
    log "wrote $archive ($image, $(dpkg --print-architecture), built without a container engine)"
    ;;
docker)
    if ! docker info >/dev/null 2>&1; then
        log "no Docker daemon reachable (docker info failed): the charts are in $DIST, the forwarder image was not built."
        log "Build it where Docker runs, use NODEWRIGHT_IMAGE_BUILDER=debian, or NODEWRIGHT_PACKAGE_IMAGE=0 for the charts only."
        exit 1
    fi
    docker build -f "$ROOT/cluster/forwarder/Dockerfile" -t "$image" "$ROOT" >&2
    docker save "$image" -o "$archive"
    log "wrote $archive ($image, $(docker image inspect -f '{{.Architecture}}' "$image"))"
    ;;
*)
    log "NODEWRIGHT_IMAGE_BUILDER=${NODEWRIGHT_IMAGE_BUILDER}: use debian or docker"
    exit 2
    ;;
esac

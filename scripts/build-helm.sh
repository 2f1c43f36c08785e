#!/usr/bin/env bash
# Build the helm command line from the Go module proxy into a cache outside the repository, the way
# scripts/build-localworld.sh builds the local world's control plane. The tests lint and render
# charts/nodewright with it, and the local world installs the chart with it.
#
# Idempotent: when the binary and the stamp for this exact recipe exist, it exits at once. Prints the
# binary's path as its last line (stdout), so callers can run `helm="$(scripts/build-helm.sh)"`.
#
# Environment:
#   NODEWRIGHT_HELM_VERSION  helm release (default v4.3.2, module helm.sh/helm/v4)
#   NODEWRIGHT_CACHE         cache root (default ~/.cache/nodewright)
set -euo pipefail

HELM_VERSION="${NODEWRIGHT_HELM_VERSION:-v4.3.2}"
CACHE_ROOT="${NODEWRIGHT_CACHE:-$HOME/.cache/nodewright}"
BIN="$CACHE_ROOT/helm/$HELM_VERSION/bin"
MAJOR="${HELM_VERSION%%.*}"

log() { printf '[build-helm %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

RECIPE="helm=$HELM_VERSION go=$(go env GOVERSION 2>/dev/null || echo none) script=1"
if [[ -x "$BIN/helm" && -f "$BIN/.recipe" && "$(cat "$BIN/.recipe")" == "$RECIPE" ]]; then
    log "cache hit: $BIN/helm ($RECIPE)"
    echo "$BIN/helm"
    exit 0
fi

command -v go >/dev/null || { log "go is not installed"; exit 1; }
mkdir -p "$BIN"
start=$(date +%s)
log "compiling helm.sh/helm/$MAJOR/cmd/helm@$HELM_VERSION (about 2 minutes when Go's caches are cold)"
# helm reports the version it was stamped with (`helm version`); unstamped it says v4.x-dev.
GOFLAGS="-buildvcs=false" GOBIN="$BIN" go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/$MAJOR/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/$MAJOR/cmd/helm@$HELM_VERSION"
[[ -x "$BIN/helm" ]] || { log "missing $BIN/helm after build"; exit 1; }
echo "$RECIPE" >"$BIN/.recipe"
log "done in $(($(date +%s) - start))s: $("$BIN/helm" version --short 2>/dev/null || echo '?')"
echo "$BIN/helm"

# The few verbs a newcomer needs. Each one sets up what it uses on a fresh machine.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup test lint types unit docs demo bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml package-lock.json
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	npm ci --no-audit --no-fund --silent
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q

# The documentation site (mkdocs.yml): --strict fails on a broken link or anchor and on a page missing from the nav.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict

test: lint types docs unit

demo: $(STAMP)
	$(BIN)/nodewright demo

bench: $(STAMP)
	$(BIN)/python -m tests.bench

# The charts as OCI-ready archives and the forwarder image as a tarball, in dist/ (scripts/package.sh).
.PHONY: package
package: $(STAMP)
	bash scripts/package.sh

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache cdk.out

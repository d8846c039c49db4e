# The two commands: `make run` starts the service on its embedded default
# (`make run PORT=8500`, or TOLLWAY_PORT, for another port), `make test` runs the
# whole suite. Both set up .venv first when needed, installing only what changed:
# `make run` the service and its plugins, `make test` also the test tools.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
UV := $(BIN)/uv
PLUGINS := $(wildcard plugins/*/pyproject.toml)
STAMP := $(VENV)/.install-stamp
TEST_STAMP := $(VENV)/.test-stamp
# uv installs what pip would, in a fraction of the time: it downloads in parallel and
# keeps a wheel cache that works where pip's HTTP cache is not kept.
INSTALL := $(UV) pip install --quiet --python $(BIN)/python

.PHONY: install run test lint wheels bench bench-jobs clients clean

$(UV):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check 'uv>=0.5'

# One install of whatever is newer than the stamp: the root when pyproject.toml
# changed, and each plugin whose pyproject.toml changed (a new plugin's is new), so a
# changed plugin reinstalls only itself. Every install is editable: source edits need
# no reinstall.
$(STAMP): pyproject.toml $(PLUGINS) | $(UV)
	$(INSTALL) $(foreach f,$?,-e $(dir $(f)))
	touch $@

# The test tools (the `test` extra) only for `make test` and the benches, with the Python
# client library (clients/python, editable) that its tests call the service with.
$(TEST_STAMP): pyproject.toml clients/python/pyproject.toml $(STAMP)
	$(INSTALL) -r pyproject.toml --extra test -e clients/python
	touch $@

# The TypeScript client's dependencies (viem, ws), as its package-lock.json pins them.
NODE_STAMP := clients/typescript/node_modules/.package-lock.json
$(NODE_STAMP): clients/typescript/package.json clients/typescript/package-lock.json
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error
	touch $@

install: $(STAMP)

run: $(STAMP)
	$(BIN)/tollway serve $(if $(PORT),--port $(PORT))

test: $(TEST_STAMP) $(NODE_STAMP)
	$(BIN)/ruff check --quiet .
	$(BIN)/ruff format --check --quiet .
	./scripts/ensure-postgres.sh
	./scripts/ensure-chromium.sh
	./scripts/run-tests.sh

# Every distribution's wheel into $(DIST): the root `tollway` and each plugin's, each built
# by `uv build` in its own isolated environment, four at a time.
DIST ?= dist
wheels: | $(UV)
	rm -rf $(DIST)
	printf '%s\n' . $(dir $(PLUGINS)) | xargs -P 4 -I{} $(UV) build --quiet --wheel --out-dir $(DIST) {}

# Ruff's findings and the files its formatter would change ([tool.ruff] in pyproject.toml);
# `make test` runs the same two checks first.
lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: $(TEST_STAMP)
	./scripts/ensure-postgres.sh
	$(BIN)/python bench/paid_calls.py
	$(BIN)/python bench/jobs.py
	$(BIN)/python bench/sanctions.py
	$(BIN)/python bench/search.py
	$(BIN)/python bench/research.py
	$(BIN)/python bench/history.py
	$(BIN)/python bench/solve.py
	$(BIN)/python bench/simulate.py
	$(BIN)/python bench/forecast.py
	$(BIN)/python bench/console.py

bench-jobs: $(TEST_STAMP)
	./scripts/ensure-postgres.sh
	$(BIN)/python bench/jobs.py

# The client libraries' generated tool methods and types (clients/python, clients/typescript)
# from the OpenAPI document of a service with every installed plugin; a test checks they are current.
clients: $(TEST_STAMP)
	$(BIN)/python clients/generate.py

clean:
	rm -rf $(VENV) .tollway clients/typescript/node_modules

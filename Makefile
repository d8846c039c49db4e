# The two commands: `make run` starts the service on its embedded default,
# `make test` runs the whole suite. Both set up .venv first when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PLUGINS := $(wildcard plugins/*/pyproject.toml)
STAMP := $(VENV)/.install-stamp

.PHONY: install run test bench bench-jobs clean

$(STAMP): pyproject.toml $(PLUGINS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]' $(foreach p,$(PLUGINS),-e $(dir $(p)))
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/tollway serve

test: $(STAMP)
	./scripts/ensure-postgres.sh
	TOLLWAY_TEST_DATABASE_URL=$${TOLLWAY_TEST_DATABASE_URL-postgres://postgres@127.0.0.1:5432/test} \
		$(BIN)/python -m pytest -q -p no:cacheprovider

bench: $(STAMP)
	./scripts/ensure-postgres.sh
	$(BIN)/python bench/paid_calls.py
	$(BIN)/python bench/jobs.py
	$(BIN)/python bench/sanctions.py
	$(BIN)/python bench/solve.py
	$(BIN)/python bench/simulate.py
	$(BIN)/python bench/forecast.py

bench-jobs: $(STAMP)
	./scripts/ensure-postgres.sh
	$(BIN)/python bench/jobs.py

clean:
	rm -rf $(VENV) .tollway

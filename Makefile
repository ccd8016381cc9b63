# Two commands: `make demo` and `make test`. Both install whatever is missing first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-fast soak ui bench docs reference screenshots lint lock clean chromium postgres

$(STAMP): requirements.lock pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else "mlassets needs Python 3.11 (set PYTHON=python3.11)")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

demo: $(STAMP)  ## run the demo on the embedded stack (.mlassets/)
	$(BIN)/mlassets demo $(ARGS)

# pytest-xdist workers; tests that share a session fixture stay in one worker (tests/conftest.py)
JOBS   ?= 2
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider -n $(JOBS) --dist loadscope --no-loadscope-reorder

test: $(STAMP) chromium postgres  ## lint, types, the docs site's strict build, then the whole test suite
	$(BIN)/ruff check .
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	$(PYTEST) --durations=25 $(ARGS)

test-fast: $(STAMP) chromium postgres  ## the inner loop: lint, types, the docs' strict build, every test not marked e2e
	$(BIN)/ruff check .
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	$(PYTEST) --durations=10 -m "not e2e" $(ARGS)

soak: $(STAMP) postgres  ## at full length: the PostgreSQL soak's 20 data versions and a daemon crash, the daemon killed 10 times (`make test`: 4 and 4)
	MLASSETS_SOAK_VERSIONS=20 MLASSETS_KILLS=10 $(BIN)/python -m pytest -q -p no:cacheprovider -s tests/production/test_daemon_soak.py \
	  tests/defs/test_daemon_trust.py::test_kills_at_random_moments_then_every_landed_file_is_trained_once_in_order $(ARGS)

chromium:  ## Debian's Chromium for the dashboard's browser test, installed (as root) only when missing
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; } || \
	  echo "chromium: not found and not installable here (not root?); the browser test will skip"

postgres:  ## Debian's PostgreSQL server for tests/production, installed (as root) only when missing
	@{ command -v pg_ctl >/dev/null 2>&1 && command -v initdb >/dev/null 2>&1; } || \
	  ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } || \
	  echo "postgres: not found and not installable here (not root?); the tests that need it will skip"

ui: $(STAMP)  ## Dagster UI on 127.0.0.1:3000 and MLflow UI on 127.0.0.1:5000
	$(BIN)/mlassets ui

bench: $(STAMP)  ## benchmarks: one table of ratios measured in one run
	$(BIN)/python -m bench

# test and test-fast run `mkdocs build --strict` (a broken link, a missing page or a page out of the nav fails them)
docs: $(STAMP)  ## the documentation site on http://127.0.0.1:8000 (docs/, mkdocs.yml)
	$(BIN)/mkdocs serve -a 127.0.0.1:8000

reference: $(STAMP)  ## regenerate docs/reference/ from the code (config dataclasses, CLI, OpenAPI, metrics, assets)
	$(BIN)/python -m mlassets.cli.reference

screenshots: $(STAMP) chromium  ## docs/img/: the demo's UIs in headless Chromium (runs a demo in a temporary home)
	$(BIN)/python scripts/docs_screenshots.py

lock:  ## re-resolve requirements.lock from pyproject.toml in a scratch venv
	rm -rf /tmp/mlassets-lock && $(PYTHON) -m venv /tmp/mlassets-lock
	/tmp/mlassets-lock/bin/pip install --quiet '.[test]'
	(echo '# Every package pinned. Regenerate: make lock (torch pinned without the +cpu label).'; \
	 /tmp/mlassets-lock/bin/pip freeze --all --exclude-editable | grep -vE '^(pip|mlassets)==' | sed 's/+cpu$$//') > requirements.lock

clean:
	rm -rf $(VENV) .mlassets build/site

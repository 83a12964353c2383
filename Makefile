# clickstream — two commands: `make run` and `make test`. Both install what they
# need (venv, pip, apt packages when root, Cassandra jars from Maven Central),
# are idempotent, and stop what they started.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
UV_LOCK := ops/requirements-uv.lock
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml requirements.lock requirements-dev.lock $(UV_LOCK) | sha1sum | cut -c1-12)

.PHONY: screenshots run manage test test-quick test-faults node bench profile tail lint lock fmt stop status clean install tracker cluster cluster-stop

install: $(STAMP)

$(STAMP): pyproject.toml requirements.lock requirements-dev.lock $(UV_LOCK)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
# uv installs the locks: a few seconds where pip took ~30 (a clean clone's `make test`
# waits that much less). uv itself comes from PyPI through the venv's pip, pinned with
# its hashes in ops/requirements-uv.lock.
	$(PY) -m pip install -q --require-hashes -r $(UV_LOCK)
# Exact versions, each checked against its hash: requirements.lock (what the app runs on)
# and requirements-dev.lock (the same pins plus the dev tools); one venv serves run and
# test. `make lock` regenerates both. Then the project itself, resolving nothing again.
	$(VENV)/bin/uv pip install -q --python $(PY) --require-hashes -r requirements.lock -r requirements-dev.lock
	$(VENV)/bin/uv pip install -q --python $(PY) --no-deps -e .
	@rm -f $(VENV)/.installed-*; touch $@

NODE_STAMP := node_modules/.installed-$(shell sha1sum package-lock.json | cut -c1-12)

$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@rm -f node_modules/.installed-*; touch $@

tracker: $(NODE_STAMP)
	npm run --silent build
	npm run --silent size

run: $(STAMP) $(NODE_STAMP)
	$(PY) -m ops.stack run

# A management command against what `make run` serves (its settings, database, Cassandra
# and Redis): make manage ARGS='create_site "My shop" --origin https://shop.example'.
# manage.py alone uses the production settings, which need DJANGO_SECRET_KEY and more.
manage: $(STAMP) $(NODE_STAMP)
	DJANGO_SETTINGS_MODULE=$${DJANGO_SETTINGS_MODULE:-clickstream.settings.local} $(PY) manage.py $(ARGS)

# pytest-xdist workers (docs/testing.md); TEST_WORKERS=0 runs the tests in one process.
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadgroup

# The checks (the tracker's tests, ruff, mypy, lint-imports, vulture: ops/stack.py CHECKS)
# run while the services start, then pytest.
test: $(STAMP) $(NODE_STAMP)
	$(PY) -m ops.stack --checks test -- $(XDIST) $(PYTEST_ARGS)

# The inner loop (under 5 minutes): lint, types and every test marked neither slow, e2e
# nor heavy (no fuzzing at 3,000 cases, no fault injection, no Chromium, none of the
# tests over ~8 s), each property at a fifth of its examples (the `quick` Hypothesis
# profile; HYPOTHESIS_PROFILE=dev runs them all). `make test` runs everything, at full
# counts.
test-quick: $(STAMP) $(NODE_STAMP)
	HYPOTHESIS_PROFILE=$(or $(HYPOTHESIS_PROFILE),quick) \
	$(PY) -m ops.stack --checks test -- $(XDIST) -m "not slow and not e2e and not heavy" $(PYTEST_ARGS)

# The slow suite alone (fuzzing at 3,000 cases; fault injection; tests over a minute):
# `make test` runs it too.
test-faults: $(STAMP) $(NODE_STAMP)
	$(PY) -m ops.stack test -- $(XDIST) -m slow $(PYTEST_ARGS)

# The browser tests with a full-page screenshot of each page they open, in artifacts/
# (the pages at 1366x900 and 390x844 to look at; `make test` takes none).
screenshots: $(STAMP) $(NODE_STAMP)
	SCREENSHOTS=1 $(PY) -m ops.stack test -- $(XDIST) -m e2e $(PYTEST_ARGS)

# The local Cassandra node, left running for the test runs that follow (each reuses it
# instead of starting its own: about a minute less a run); `make stop` stops it.
node: $(STAMP)
	$(PY) -m ops.cassandra start --timeout 600

# A three-node loopback cluster (127.0.0.1-3, CQL port 9142) beside the single node;
# point the app at it with the variables README › Production topology lists.
cluster: $(STAMP)
	$(PY) -m ops.cassandra cluster-start --timeout 300

cluster-stop: $(STAMP)
	$(PY) -m ops.cassandra cluster-stop

bench: $(STAMP) $(NODE_STAMP)
	$(PY) -m bench.run $(BENCH_ARGS)

# py-spy on the gunicorn workers under the ingest load: each stage's share of the CPU.
profile: $(STAMP)
	$(PY) -m bench.profile $(PROFILE_ARGS)

tail: $(STAMP)
	$(PY) -m bench.tail $(TAIL_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy clickstream sessions_app ops bench
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/vulture
	$(VENV)/bin/pip-audit --strict --no-deps --disable-pip -r requirements.lock -r requirements-dev.lock -r $(UV_LOCK) --progress-spinner off

# Pin every dependency (and theirs) of pyproject.toml with hashes: the runtime lock, then
# the dev tools' lock held to the same pins (-c). Existing pins stay unless pyproject.toml
# rules them out (pip-compile's --upgrade-package NAME moves one on purpose).
LOCK_ARGS := -q --generate-hashes --strip-extras --allow-unsafe --no-emit-find-links
lock: $(STAMP)
	$(VENV)/bin/pip-compile $(LOCK_ARGS) -o $(UV_LOCK) ops/requirements-uv.in
	$(VENV)/bin/pip-compile $(LOCK_ARGS) -o requirements.lock pyproject.toml
	$(VENV)/bin/pip-compile $(LOCK_ARGS) --extra dev -c requirements.lock -o requirements-dev.lock pyproject.toml

fmt: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

status: $(STAMP)
	$(PY) -m ops.cassandra status
	$(PY) -m ops.redis status --port 6380
	$(PY) -m ops.redis status --port 6381

# Stop services a crashed run left behind (normally run/test stop their own).
stop: $(STAMP)
	-$(PY) -m ops.redis stop --port 6381
	-$(PY) -m ops.redis stop --port 6380
	-$(PY) -m ops.cassandra stop
	-$(PY) -m ops.cassandra cluster-stop

clean: stop
	rm -rf .state .venv node_modules .pytest_cache .mypy_cache .ruff_cache

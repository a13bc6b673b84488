# The two commands of the README:
#   make demo   set up the core, index the bundled corpus into an embedded SQLite store, and ask
#               it a question as a principal, printing the prompt and the report
#   make test   set up everything the tests need, then ruff, mypy (strict), the import
#               contracts (lint-imports) and the test suite
# Both create .venv on first use and install the pinned versions in constraints.txt: the core
# alone for the demo, the dev extra for the tests. Neither needs a network for tokenizers (the
# rank files ship inside the package) nor any file outside this folder; `make test` run as root
# on Debian installs chromium with apt-get for the browser tests (skipped where it is missing).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt

.PHONY: demo test lint typecheck contracts unit bench clean browser

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The core: assembly, exact counts, the CLI and the SQLite store (standard library).
$(VENV)/.installed-core: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) -e .
	touch $@

# Everything the tests need (the core included, so the demo needs nothing more after it).
$(VENV)/.installed-dev: pyproject.toml constraints.txt | $(BIN)/python
	$(PIP) -e '.[dev]'
	touch $@ $(VENV)/.installed-core

DEMO_STORE ?= sqlite:///.demo/store.db

demo: $(VENV)/.installed-core
	$(BIN)/ctxasm index examples/corpus --store $(DEMO_STORE) --tenant demo --readers everyone --chunk-tokens 64 --overlap 16
	$(BIN)/ctxasm ask "Where does the Danube end, and which capitals lie on it?" --store $(DEMO_STORE) --principal ann --tenant demo --groups everyone --budget 400

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

# The import contracts of [tool.importlinter] in pyproject.toml: the package's layers.
contracts: $(VENV)/.installed-dev
	$(BIN)/lint-imports

# The headless browser of tests/browser: Debian's chromium, installed with apt-get when it is
# missing and this runs as root (as CI does); elsewhere those tests skip and say how to get it.
browser:
	@test -x /usr/bin/chromium || ! command -v apt-get >/dev/null || [ "$$(id -u)" != 0 ] || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

unit: $(VENV)/.installed-dev browser
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/pytest -q

test: lint typecheck contracts unit

bench: $(VENV)/.installed-dev
	$(BIN)/python benchmarks/assembly_speed.py
	$(BIN)/python benchmarks/startup.py

clean:
	rm -rf $(VENV) .demo .pytest_cache .mypy_cache .ruff_cache .hypothesis

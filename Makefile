# The two commands of the README:
#   make demo   set up, index the bundled corpus into an embedded SQLite store, and ask it a
#               question as a principal, printing the prompt and the report
#   make test   set up, then ruff, mypy (strict) and the whole test suite
# Both create .venv and install the pinned versions in constraints.txt on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

# Offline tokenizer ranks: the project's shared cache when it is there (CI and development).
ifneq ($(wildcard ../shared/tiktoken-cache),)
export TIKTOKEN_CACHE_DIR ?= $(abspath ../shared/tiktoken-cache)
endif

.PHONY: demo test lint typecheck unit bench clean

$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $@

DEMO_STORE ?= sqlite:///.demo/store.db

demo: $(VENV)/.installed
	$(BIN)/ctxasm index examples/corpus --store $(DEMO_STORE) --tenant demo --readers everyone --chunk-tokens 64 --overlap 16
	$(BIN)/ctxasm ask "Where does the Danube end, and which capitals lie on it?" --store $(DEMO_STORE) --principal ann --tenant demo --groups everyone --budget 400

lint: $(VENV)/.installed
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(VENV)/.installed
	$(BIN)/mypy

unit: $(VENV)/.installed
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/pytest -q

test: lint typecheck unit

bench: $(VENV)/.installed
	$(BIN)/python benchmarks/assembly_speed.py
	$(BIN)/python benchmarks/startup.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis

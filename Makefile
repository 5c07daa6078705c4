# Two entry points for a fresh machine:
#   make demo   set up .venv and run the whole demo on the bundled (generated) sample
#   make test   set up .venv and run lint and the test suite
#
# Both are idempotent: the environment is rebuilt only when pyproject.toml changes.
# Use another environment with `make VENV=/path/to/env ...`; pass
# VENV_FLAGS=--system-site-packages to see a torch build (e.g. CUDA) installed system-wide.

PYTHON ?= python3
VENV ?= .venv
VENV_FLAGS ?=
DEMO_OUT ?= wikisum-demo
# Test processes (pytest-xdist): one per core; each test file runs whole in one of them.
TEST_WORKERS ?= auto
BIN := $(VENV)/bin
STAMP := $(VENV)/.wikisum-installed

.PHONY: setup demo test lint clean browser

setup: $(STAMP)

$(STAMP): pyproject.toml setup.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV_FLAGS) $(VENV)
	# torch first, pinned to the CPU build, only where no torch is importable:
	# an unpinned install would pull gigabytes of CUDA packages, and a GPU build
	# that is already there is kept.
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install "torch==2.13.0"
	$(BIN)/python -m pip install -e ".[pipeline,dev]"
	touch $(STAMP)

# The tests open every page the tool writes in a real headless browser: Debian's chromium
# package (driven by playwright's Python package, which downloads no browser). Installed with
# apt where missing and we are root (CI); otherwise the browser tests say how to install it.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
	        || echo "apt-get could not install chromium: the browser tests will say so"; \
	    else \
	      echo "no chromium: the browser tests skip (install: sudo apt-get install -y chromium)"; \
	    fi; }

demo: $(STAMP)
	$(BIN)/wikisum demo --out $(DEMO_OUT)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports

test: lint browser
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile

clean:
	rm -rf $(VENV) $(DEMO_OUT) .pytest_cache .ruff_cache .import_linter_cache .hypothesis

# `make demo` and `make test` work on a fresh machine: each creates .venv if missing and installs
# what it needs, with torch pinned through constraints.txt (never a multi-GB CUDA build).
# `make test-base` checks the base install (`pip install torchwise`: no torch) in .venv-base.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install -q -c constraints.txt
# test workers: one more than the cores (at most 8), because the distributed tests spend part of their
# time waiting (peer timeouts, restarts) and a spare worker fills it; on 2 cores, 2 workers took 373 s,
# 3 took 330 s, 4 took 316 s (BENCHMARKS.md, "Test suite")
JOBS   ?= $(shell $(PYTHON) -c "import os; print(min(8, (os.cpu_count() or 1) + 1))")
BASE   ?= .venv-base

.PHONY: demo test test-base docs bench clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.dev-installed: pyproject.toml constraints.txt | $(VENV)/bin/python
	$(PIP) -e '.[dev]'
	touch $@

$(VENV)/.bench-installed: $(VENV)/.dev-installed
	$(PIP) -e '.[dev,bench]'
	touch $@

# train, lint, doctor and a short tune of the digits example that ships in the package
demo: $(VENV)/.dev-installed
	$(VENV)/bin/torchwise demo --dir runs/demo

# --maxschedchunk 4: pytest-xdist hands tests out a few at a time, in the order of collection (slow tests
# first, see tests/conftest.py), instead of a quarter of the suite per worker up front
test: $(VENV)/.dev-installed
	$(PY) -m pytest -n $(JOBS) --maxschedchunk 4 -q

# The base install only (what `pip install torchwise` brings: no torch, no numpy), installed from
# the source tree as a user would (not editable), then the tests that need no torch, the flake8
# plugin through real flake8 among them. Test files that import torch are not collected there.
BASE_TESTS := tests/lint tests/cli tests/test_catalog.py tests/test_base_install.py
test-base:
	rm -rf $(BASE) build  # a stale build/ from an older tree would leak old modules into the wheel
	$(PYTHON) -m venv $(BASE)
	$(BASE)/bin/python -m pip install -q -c constraints.txt . pytest pytest-timeout flake8
	@if $(BASE)/bin/python -c "import torch" 2>/dev/null; then echo "the base install pulled torch"; exit 1; fi
	$(BASE)/bin/python -m pytest -q -p no:cacheprovider $(BASE_TESTS)

# the documentation site into site/ (docs/about-these-docs.md); --strict: any warning fails
$(VENV)/.docs-installed: pyproject.toml constraints.txt | $(VENV)/bin/python
	$(PIP) -e '.[docs]'
	touch $@

docs: $(VENV)/.docs-installed
	$(VENV)/bin/mkdocs build --strict

bench: $(VENV)/.bench-installed
	@echo "Benchmarks are run one by one: see BENCHMARKS.md, e.g. $(PY) benchmarks/overhead.py"

clean:
	rm -rf $(VENV) $(BASE) build dist src/*.egg-info .pytest_cache runs site

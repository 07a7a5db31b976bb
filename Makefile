# `make demo` and `make test` work on a fresh machine: each creates .venv if missing and installs
# what it needs, with torch pinned through constraints.txt (never a multi-GB CUDA build).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip install -q -c constraints.txt
JOBS   ?= 2

.PHONY: demo test docs bench lint-self clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.dev-installed: pyproject.toml constraints.txt | $(VENV)/bin/python
	$(PIP) -e '.[dev]'
	touch $@

$(VENV)/.bench-installed: $(VENV)/.dev-installed
	$(PIP) -e '.[dev,bench]'
	touch $@

demo: $(VENV)/.dev-installed
	$(VENV)/bin/torchwise env
	$(VENV)/bin/torchwise summary examples/digits.py:task
	rm -rf runs/demo
	$(VENV)/bin/torchwise train examples/digits.py:task --seed 0 --epochs 8 --log-dir runs/demo
	$(VENV)/bin/torchwise train examples/digits.py:task --seed 0 --epochs 12 --log-dir runs/demo --resume last

test: $(VENV)/.dev-installed
	$(PY) -m pytest -n $(JOBS) -q

# the documentation site into site/ (docs/about-these-docs.md); --strict: any warning fails
$(VENV)/.docs-installed: pyproject.toml constraints.txt | $(VENV)/bin/python
	$(PIP) -e '.[docs]'
	touch $@

docs: $(VENV)/.docs-installed
	$(VENV)/bin/mkdocs build --strict

bench: $(VENV)/.bench-installed
	@echo "Benchmarks are run one by one: see BENCHMARKS.md, e.g. $(PY) benchmarks/overhead.py"

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache runs site

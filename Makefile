# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# `make notebooks` adds JupyterLab and re-executes every notebook in place, outputs kept.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
NOTEBOOKS_STAMP := $(VENV)/.notebooks-installed

.PHONY: demo test lint format clean notebooks

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(NOTEBOOKS_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,notebooks]'
	touch $(NOTEBOOKS_STAMP)

notebooks: $(NOTEBOOKS_STAMP)
	$(BIN)/python notebooks/execute.py

demo: $(STAMP)
	$(BIN)/vcopt show instances/demo.yaml
	$(BIN)/vcopt compare --time-limit 20 instances/demo.yaml

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -n auto

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis build *.egg-info

# ridercrm — `make help` lists the targets.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?= -n auto
PORT ?= 8000

.DEFAULT_GOAL := help

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

.PHONY: help venv run test test-all lint format typecheck bench audit
help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

venv: $(BIN)/.installed ## Create or update the virtualenv in .venv

run: $(BIN)/.installed ## Serve on SQLite (./ridercrm.db) with demo data; prints an admin key on first start
	$(BIN)/ridercrm serve --demo --port $(PORT)

test: $(BIN)/.installed ## Run the tests but the slow ones (PostgreSQL half needs RIDERCRM_TEST_POSTGRES_URL)
	$(BIN)/pytest $(PYTEST_ARGS)

test-all: $(BIN)/.installed ## Run every test, the slow ones too (browser, multi-worker serve; what CI runs)
	$(BIN)/pytest --run-slow $(PYTEST_ARGS)

lint: $(BIN)/.installed ## ruff (lint + format check), mypy and the import contracts (lint-imports)
	$(BIN)/ruff check src tests bench testkit
	$(BIN)/ruff format --check src tests bench testkit
	$(BIN)/mypy
	$(BIN)/lint-imports

format: $(BIN)/.installed ## Apply ruff's fixes and formatting
	$(BIN)/ruff check --fix src tests bench testkit
	$(BIN)/ruff format src tests bench testkit

NAME ?= import_bench
bench: $(BIN)/.installed ## Run one benchmark, python -m bench.$(NAME) (make bench NAME=floors, NAME=matching); bench/README.md lists them
	$(BIN)/python -m bench.$(subst /,.,$(NAME)) $(ARGS)

# The installed packages (ridercrm itself aside) as pinned requirements; --strict fails
# when a package could not be checked, e.g. when the vulnerability database is out of
# reach, rather than reporting "no known vulnerabilities" for what was never looked up.
audit: $(BIN)/.installed ## pip-audit the installed packages (needs PyPI's vulnerability data online; not in CI)
	$(BIN)/pip install --quiet pip-audit
	$(BIN)/pip freeze --exclude-editable > $(VENV)/audit-requirements.txt
	$(BIN)/pip-audit --strict --progress-spinner off --disable-pip --no-deps -r $(VENV)/audit-requirements.txt

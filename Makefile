# Two commands do everything on a fresh machine:
#   make report   set up .venv and write the report on the bundled incident under reports/
#   make test     set up .venv and run the whole test suite (unit tests, notebooks, browser)

# Python writes the bytecode of what it imports into .venv, once, where the machine's environment
# says to write none (PYTHONDONTWRITEBYTECODE, as on the machines these times were measured on):
# else every kernel, CLI call and test worker would compile pandas, plotly and the kit again. Only
# what is imported is compiled: the test run imports 6,700 of the 18,700 installed modules, and
# compiling them all at install cost 23 s of a fresh clone's setup (docs/benchmarks.md).
export PYTHONDONTWRITEBYTECODE :=

PYTHON     ?= python3
VENV       ?= .venv
PY         := $(VENV)/bin/python
INCIDENT   ?= data/incidents/h200-2gpu
REPORT_DIR ?= reports/$(notdir $(INCIDENT))
# Every bundled incident gets its report; INCIDENT's comes first.
BUNDLED    := $(INCIDENT) $(filter-out $(INCIDENT),$(wildcard data/incidents/*))
# The CPU test environment pins torch to the CPU wheel (a looser pin pulls a multi-GB CUDA build).
# Where a wheel folder exists (this team's machines keep the CPU wheel in /opt/wheels), use it.
CONSTRAINTS ?= constraints/cpu.txt
WHEELS     ?= /opt/wheels
PIP_FLAGS  := -c $(CONSTRAINTS) $(if $(wildcard $(WHEELS)),--find-links $(WHEELS))
STAMP      := $(VENV)/.installed
EXTRAS     := [dev,replay,lab,cluster,tensorboard]
KERNEL     := dflash-postmortem
PYTEST_ARGS ?=

.PHONY: setup report reports test unit notebooks lab lint packages browser prometheus slurm shells strip bench fuzz clean

setup: $(STAMP)

# uv installs the same requirements as pip in about a third of the time (parallel downloads and
# unpacking; no bytecode compiled at install: see PYTHONDONTWRITEBYTECODE above); where uv cannot be
# installed or cannot reach an index, pip does it.
$(STAMP): pyproject.toml $(CONSTRAINTS)
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@{ $(PY) -m pip install --quiet uv && \
	   $(VENV)/bin/uv pip install --quiet --python $(PY) $(PIP_FLAGS) -e '.$(EXTRAS)'; } || \
	 { echo "note: installing with pip"; $(PY) -m pip install --quiet --upgrade pip && \
	   $(PY) -m pip install --quiet $(PIP_FLAGS) -e '.$(EXTRAS)'; }
	$(VENV)/bin/jupyter kernelspec install --sys-prefix --name $(KERNEL) share/jupyter/kernels/$(KERNEL) >/dev/null
	@touch $@

report: setup
	@$(VENV)/bin/dflash-postmortem report $(INCIDENT) -o $(REPORT_DIR)
	@echo "open $(REPORT_DIR)/index.html (every bundled incident: make reports)"

# Every bundled incident's report, under reports/ (one command: the reports share its kernels).
reports: setup
	@$(VENV)/bin/dflash-postmortem report $(BUNDLED) -o reports
	@echo "open reports/*/index.html"

# The Debian packages the tests' real parts need, where missing and where this machine lets us
# install them (root + apt): headless Chromium (the browser tests), Prometheus (its server tests),
# dash and zsh (the transcript tests record their own words for a redirect they cannot open), a
# one-node Slurm with MariaDB behind slurmdbd (its live test, tests/support/slurm.py). One index
# update for all of them (scripts/test_packages.sh); `make test` runs it beside the Python setup.
packages:
	@bash scripts/test_packages.sh
browser prometheus shells slurm:
	@bash scripts/test_packages.sh $@

# Four workers on any machine, measured on two cores (three: 476 s against 413-521 s with four;
# six: over 9 minutes; docs/benchmarks.md); conftest.py keeps torch and numpy to one thread per
# worker. Tests marked `alone` compare speeds:
# they live in tests/alone/ and run afterwards, with nothing beside them.
TEST_WORKERS ?= 4
# The plugins the tests use, named: pytest's own loading of every installed plugin walks every
# installed package's metadata and rewrites the asserts of whole plugin packages (hypothesis,
# anyio) in each worker; named, only their plugin modules (0.8 s of CPU less per worker). The first
# keeps nbval's nbformat import from building jsonschema's IRI grammars (1.3 s less per process).
PLUGINS    := --disable-plugin-autoload -p tests.support.schema_formats -p xdist.plugin -p nbval.plugin -p _hypothesis_pytestplugin
PARALLEL   := -n $(TEST_WORKERS) --dist loadscope -m "not alone" $(PLUGINS)

# The kit's bytecode compiled once before the run, in parallel: else the four test workers would each
# compile it at once as they start.
test:
	@$(MAKE) --no-print-directory -j2 setup packages
	@$(PY) -m compileall -q -j 0 dflash_postmortem
	$(PY) -m pytest $(PARALLEL) -p no:cacheprovider tests notebooks --nbval-lax --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg $(PYTEST_ARGS)
	$(PY) -m pytest -m alone -p no:cacheprovider tests/alone $(PYTEST_ARGS)

unit: setup
	$(PY) -m pytest $(PARALLEL) tests $(PYTEST_ARGS)
	$(PY) -m pytest -m alone tests/alone $(PYTEST_ARGS)

notebooks: setup
	$(PY) -m pytest notebooks --nbval-lax --nbval-current-env --nbval-sanitize-with notebooks/nbval_sanitize.cfg $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check dflash_postmortem tests benchmarks scripts

lab: setup
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root) --no-browser

# Strip outputs from notebooks before committing (keeps metadata.kernelspec and tags).
strip: setup
	$(PY) scripts/strip_notebooks.py notebooks/*.ipynb

# Longer fuzzing than the test suite's fixed examples: fresh randomness, FUZZ_EXAMPLES per format.
FUZZ_EXAMPLES ?= 2000
fuzz: setup
	FUZZ_RANDOM=1 FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -n 2 -p no:cacheprovider tests/test_fuzz.py $(PYTEST_ARGS)

bench: setup
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) reports .pytest_cache

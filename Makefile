# fedcore: set-up, notebooks, tests.  GNU make.  `make` alone lists the targets.
#
# Every target but help and clean depends on `setup`, which builds .venv (python3 -m venv + pip install
# -e ".[dev,flower]"), the offline data and Debian's chromium (the browser tests) once, then is a no-op until
# pyproject.toml changes.

PYTHON  ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.setup-stamp

# notebook scale for `make run`: smoke | small | medium | paper (medium and paper also write results/<scale>/)
SCALE   ?= small
# seconds allowed per notebook cell: papermill (`make run`) and nbval (`make test`)
TIMEOUT ?= 3600
NBVAL_CELL_TIMEOUT ?= 900

# `make test` runs with this scale (notebooks read it as SCALE, FEDCORE_SCALE) and without the results
# store (FEDCORE_STORE=off: tests compute).
TEST_ENV := FEDCORE_SCALE=smoke FEDCORE_STORE=off PYTHONDONTWRITEBYTECODE=1
PYTEST   := $(VPY) -m pytest -p no:cacheprovider
NOTEBOOKS = $(sort $(wildcard notebooks/*.ipynb))

# $(call pytest_ok_if_empty,CMD): run CMD; pytest's exit code 5 ("no tests collected")
# counts as success, every other non-zero code is returned.
define pytest_ok_if_empty
( $(1); rc=$$?; if [ $$rc -eq 5 ]; then echo "(pytest collected no tests: exit 5 treated as success)"; rc=0; fi; exit $$rc )
endef

.DEFAULT_GOAL := help
.PHONY: help setup test run notebooks bench lab clean

help:
	@echo "fedcore targets:"
	@echo "  make setup      create .venv (pip install -e '.[dev,flower]'), install Fashion-MNIST and chromium; idempotent"
	@echo "  make run        execute every notebooks/NN_*.ipynb headless into build/ (SCALE=$(SCALE); SCALE=smoke|small|medium|paper)"
	@echo "  make test       library tests + nbval on every notebook, at smoke scale"
	@echo "  make notebooks  rerun the notebooks at SCALE=small and copy the outputs over notebooks/*.ipynb"
	@echo "  make bench      benchmarks/round_speed.py"
	@echo "  make lab        JupyterLab in notebooks/ with the .venv kernel"
	@echo "  make clean      remove build/"

setup: $(STAMP)

$(STAMP): pyproject.toml scripts/setup_data.sh scripts/setup_browser.sh
	@test -x $(VPY) || { echo "creating $(VENV) with $$($(PYTHON) --version 2>&1)"; $(PYTHON) -m venv $(VENV); }
	$(VPY) -m pip install --quiet -e ".[dev,flower]"
	VENV_PYTHON=$(VPY) bash scripts/setup_data.sh
	bash scripts/setup_browser.sh
	@touch $@

# Two pytest runs: the library tests under the Agg backend; the notebooks with
# MPLBACKEND unset, so their kernels keep the inline backend (ipykernel only sets it
# when MPLBACKEND is empty).  Both always run; either failing fails the target.
test: setup
	@status=0; \
	echo "== library tests (FEDCORE_SCALE=smoke)"; \
	$(call pytest_ok_if_empty,$(TEST_ENV) MPLBACKEND=Agg $(PYTEST) tests) || status=1; \
	if [ -n "$(NOTEBOOKS)" ]; then \
	    echo "== nbval --nbval-lax on $(words $(NOTEBOOKS)) notebook(s) (FEDCORE_SCALE=smoke)"; \
	    $(call pytest_ok_if_empty,env -u MPLBACKEND $(TEST_ENV) $(PYTEST) --nbval-lax --nbval-current-env \
	        --nbval-cell-timeout=$(NBVAL_CELL_TIMEOUT) $(NOTEBOOKS)) || status=1; \
	else \
	    echo "== no notebooks/*.ipynb yet: nbval skipped"; \
	fi; \
	exit $$status

run: setup
	$(VPY) scripts/run_notebooks.py --scale $(SCALE) --timeout $(TIMEOUT)

notebooks: setup
	$(VPY) scripts/run_notebooks.py --refresh --timeout $(TIMEOUT)

bench: setup
	$(VPY) benchmarks/round_speed.py

# root (containers) needs --allow-root; LAB_ARGS="--no-browser --port 8899" etc. pass through
lab: setup
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

clean:
	rm -rf build

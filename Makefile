# memlm — two commands:  `make reproduce`  and  `make test`.
# Both create or refresh the virtualenv from requirements.lock first.
#
#   make reproduce [SCALE=smoke|cpu|gpu|paper] [PAPERS="lm_core dynamic_skip ..."] [MEMLM_DATA=/path]
#   make test
#
# On a machine that already has a CUDA torch (e.g. a GPU box), keep it instead of the
# CPU wheel pinned in the lock:   make reproduce USE_SYSTEM_TORCH=1 SCALE=gpu
# (the venv then sees the system site-packages and the lock is installed without torch).

SHELL     := /bin/bash
PYTHON    ?= python3
VENV      ?= .venv
BIN       := $(VENV)/bin
SCALES    := smoke cpu gpu paper
SCALE     ?= smoke
# Reproduction notebooks are nbs/NN_<name>.ipynb with NN >= 10 (00–09 are the shared core).
ALL_PAPERS := $(shell ls nbs/1[0-9]*_*.ipynb 2>/dev/null | sed -E 's|nbs/[0-9]+[a-z]?_||; s|\.ipynb$$||')
PAPERS    ?= $(ALL_PAPERS)
RUNS      := runs/$(SCALE)
USE_SYSTEM_TORCH ?=
STAMP     := $(VENV)/.memlm-stamp

.PHONY: reproduce test venv check-args summary clean-runs help

help:
	@echo "make reproduce [SCALE=$(subst $() $(),|,$(SCALES))] [PAPERS='$(ALL_PAPERS)']"
	@echo "make test"

check-args:
	@if ! echo " $(SCALES) " | grep -q " $(SCALE) "; then \
	  echo "error: unknown SCALE='$(SCALE)'; valid scales: $(SCALES)" >&2; exit 2; fi
	@for p in $(PAPERS); do \
	  if ! echo " $(ALL_PAPERS) " | grep -q " $$p "; then \
	    echo "error: unknown paper '$$p'; valid PAPERS: $(ALL_PAPERS)" >&2; exit 2; fi; done

$(STAMP): requirements.lock setup.py settings.ini
	@test -x $(BIN)/python || $(PYTHON) -m venv $(if $(USE_SYSTEM_TORCH),--system-site-packages) $(VENV)
	@if [ -n "$(USE_SYSTEM_TORCH)" ]; then \
	  grep -vE '^(torch|nvidia-|triton)' requirements.lock > $(VENV)/lock-notorch.txt; \
	  $(BIN)/pip install -q -r $(VENV)/lock-notorch.txt; \
	else $(BIN)/pip install -q -r requirements.lock; fi
	$(BIN)/pip install -q --no-deps --no-build-isolation -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $(STAMP)

venv: $(STAMP)

reproduce: check-args $(STAMP)
	@mkdir -p $(RUNS)
	@set -e; for p in $(PAPERS); do \
	  nb=$$(ls nbs/1*_$$p.ipynb | head -1); \
	  echo "== $$p ($$nb) at scale $(SCALE)"; \
	  MEMLM_DATA="$(MEMLM_DATA)" $(BIN)/papermill --cwd nbs --no-progress-bar --log-output \
	    $$nb $(RUNS)/$$(basename $$nb) -p scale $(SCALE) > $(RUNS)/$$p.log 2>&1 \
	    || { tail -40 $(RUNS)/$$p.log; echo "error: $$p failed, log: $(RUNS)/$$p.log" >&2; exit 1; }; \
	done
	@$(MAKE) --no-print-directory summary

# Regenerates the claims summary (results/summary.md) and README.md from nbs/index.ipynb.
summary: $(STAMP)
	@mkdir -p runs
	$(BIN)/papermill --cwd nbs --no-progress-bar nbs/index.ipynb runs/index.ipynb > runs/index.log 2>&1
	$(BIN)/jupyter nbconvert --to markdown --no-input --log-level WARN runs/index.ipynb --output-dir . --output README
	@echo "wrote results/summary.md and README.md"

test: $(STAMP)
	cd nbs && OMP_NUM_THREADS=1 ../$(BIN)/nbdev_test --path . --n_workers 2 --timing
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q tests

clean-runs:
	rm -rf runs

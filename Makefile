# memlm — two commands:  `make reproduce`  and  `make test`  (and `make lab` to read and run the notebooks).
# All create or refresh the virtualenv from requirements.lock first.
#
#   make reproduce [SCALE=smoke|cpu|gpu|paper] [PAPERS="awd_lstm dynamic_skip ..."] [PARTS="number,ptb"]
#                  [WORKERS=2] [TIME_LIMIT=3600] [MEMLM_DATA=/path]
#   make runs PAPER=phrase_induction RUNS="full:1 awd_lstm:2" [SCALE=cpu] [WORKERS=1] [TIME_LIMIT=s] [MEMLM_DATA=/path]
#                  (chosen runs of one paper's plan: with one worker in the order given; records as the notebook's)
#   make test
#   make lab
#
# On a machine that already has a CUDA torch (e.g. a GPU box), keep it instead of the
# CPU wheel pinned in the lock:   make reproduce USE_SYSTEM_TORCH=1 SCALE=gpu
# (the venv then sees the system site-packages and the lock is installed without torch).
#
# Run checkpoints go to each run's ckpt/ (git-ignored), or under $MEMLM_CKPT when it is set in the environment:
#   MEMLM_CKPT=/scratch/memlm make runs ...   (a disk that outlives the checkout keeps interrupted runs resumable)
# A run stopped by Ctrl-C or `kill` (SIGINT/SIGTERM) checkpoints the step it reached first; the same command continues it.
#
# On an offline machine with torch, tqdm and numpy already installed (the GPU machines: no registry, no venv possible),
# `make runs` and `make status` can run on the system Python instead of the venv (nothing is installed; memlm from this checkout):
#   NO_VENV=1 make runs PAPER=span_buffer SCALE=cpu RUNS="mos:0 mos_snb:0" WORKERS=2 TIME_LIMIT=540 MEMLM_DATA=$PWD/corpora

SHELL     := /bin/bash
PYTHON    ?= python3
VENV      ?= .venv
BIN       := $(VENV)/bin
SCALES    := smoke cpu gpu paper
SCALE     ?= smoke
# Reproduction notebooks: the core's AWD-LSTM run (nbs/09_awd_lstm.ipynb) and one per paper, nbs/1N_<name>.ipynb.
REPRO_NBS  := $(shell ls nbs/09_*.ipynb nbs/1[0-9]*_*.ipynb 2>/dev/null)
ALL_PAPERS := $(shell echo $(REPRO_NBS) | tr ' ' '\n' | sed -E 's|nbs/[0-9]+[a-z]?_||; s|\.ipynb$$||')
PAPERS    ?= $(ALL_PAPERS)
PARTS     ?=
WORKERS   ?= 1
TIME_LIMIT ?=
# executed notebooks: smoke runs are scratch (runs/, git-ignored); real scales are reports a reader opens (reports/<scale>/)
REPORTS   := $(if $(filter smoke,$(SCALE)),runs/smoke,reports/$(SCALE))
USE_SYSTEM_TORCH ?=
STAMP     := $(VENV)/.memlm-stamp
NO_VENV   ?=
# what runs `make runs` / `make status`: the venv's Python, or (NO_VENV=1) the system's with this checkout on the path
RUN_PY    := $(if $(NO_VENV),PYTHONPATH="$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH}" $(PYTHON),$(BIN)/python)
RUN_DEPS  := $(if $(NO_VENV),,$(STAMP))
SEEDS     ?= 0,1,2

.PHONY: reproduce runs status test venv check-args summary clean-runs help lab

help:
	@echo "make reproduce [SCALE=$(subst $() $(),|,$(SCALES))] [PAPERS='$(ALL_PAPERS)'] [PARTS=a,b] [WORKERS=n] [TIME_LIMIT=s] [MEMLM_DATA=dir] [USE_SYSTEM_TORCH=1]"
	@echo "make runs PAPER=<paper> RUNS='name:seed ...' [SCALE=...] [WORKERS=n] [TIME_LIMIT=s] [MEMLM_DATA=dir]"
	@echo "make status PAPER=<paper> [SCALE=...] [SEEDS=0,1,2] [MEMLM_DATA=dir]  # what a campaign has done and has left"
	@echo "make test"
	@echo "make summary    # README and results/summary.md from the records and claims"
	@echo "make clean-runs # remove runs/ (smoke executions, papermill logs)"
	@echo "make lab        # JupyterLab in nbs/, from the venv"

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
	@mkdir -p $(REPORTS) runs
	@set -e; for p in $(PAPERS); do \
	  nb=$$(ls nbs/[01][0-9]*_$$p.ipynb | head -1); \
	  echo "== $$p ($$nb) at scale $(SCALE)"; \
	  MEMLM_DATA="$(MEMLM_DATA)" $(BIN)/papermill --cwd nbs --no-progress-bar --log-output \
	    $$nb $(REPORTS)/$$(basename $$nb) -p scale $(SCALE) -p workers $(WORKERS) \
	    $(if $(PARTS),-y "parts: [$(PARTS)]") $(if $(TIME_LIMIT),-p time_limit_s $(TIME_LIMIT)) > runs/$(SCALE)-$$p.log 2>&1 \
	    || { tail -40 runs/$(SCALE)-$$p.log; echo "error: $$p failed, log: runs/$(SCALE)-$$p.log" >&2; exit 1; }; \
	done
	@$(MAKE) --no-print-directory summary

runs: check-args $(RUN_DEPS)
	@if [ -z "$(PAPER)" ] || ! echo " $(ALL_PAPERS) " | grep -q " $(PAPER) "; then \
	  echo "error: make runs needs PAPER=<one of: $(ALL_PAPERS)>" >&2; exit 2; fi
	@if [ -z "$(RUNS)" ]; then echo "error: make runs needs RUNS='name:seed ...' (the names are the plan's runs)" >&2; exit 2; fi
	MEMLM_DATA="$(MEMLM_DATA)" $(RUN_PY) -c "import os; from memlm.experiment import run_named; \
	  run_named('$(PAPER)', '$(SCALE)', '$(RUNS)'.split(), workers=$(WORKERS), time_limit_s=$(or $(TIME_LIMIT),None), data_path=os.environ.get('MEMLM_DATA') or None)"

status: check-args $(RUN_DEPS)
	@if [ -z "$(PAPER)" ] || ! echo " $(ALL_PAPERS) " | grep -q " $(PAPER) "; then \
	  echo "error: make status needs PAPER=<one of: $(ALL_PAPERS)>" >&2; exit 2; fi
	@MEMLM_DATA="$(MEMLM_DATA)" $(RUN_PY) -c "import os; from memlm.experiment import plan_status; \
	  print(plan_status('$(PAPER)', '$(SCALE)', [int(s) for s in '$(SEEDS)'.split(',')], data_path=os.environ.get('MEMLM_DATA') or None))"

# Regenerates the claims summary (results/summary.md) and README.md from nbs/index.ipynb.
summary: $(STAMP)
	@mkdir -p runs
	$(BIN)/papermill --cwd nbs --no-progress-bar nbs/index.ipynb runs/index.ipynb > runs/index.log 2>&1
	$(BIN)/jupyter nbconvert --to markdown --no-input --log-level WARN runs/index.ipynb --output-dir . --output README
	@echo "wrote results/summary.md and README.md"

test: $(STAMP)
	cd nbs && OMP_NUM_THREADS=1 ../$(BIN)/nbdev_test --path . --n_workers 2 --timing
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q tests

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=nbs

clean-runs:
	rm -rf runs

# memlm — two commands:  `make reproduce`  and  `make test`  (and `make lab` to read and run the notebooks).
# All create or refresh the virtualenv from requirements.lock first.
#
#   make reproduce [SCALE=smoke|cpu|gpu|paper] [PAPERS="awd_lstm dynamic_skip ..."] [PARTS="number,ptb"]
#                  [WORKERS=2] [TIME_LIMIT=3600] [MEMLM_DATA=/path]
#   make runs PAPER=phrase_induction RUNS="full:1 awd_lstm:2" [SCALE=cpu] [WORKERS=1] [TIME_LIMIT=s] [MEMLM_DATA=/path]
#                  [SEEDS=0,1,2] [EXECUTOR=process|local|slurm]
#                  (chosen runs of one paper's plan: with one worker in the order given; records as the notebook's;
#                   EXECUTOR=slurm submits them to a cluster through submitit, local through its local executor)
#   make gpu-check  (about a minute on a GPU: every notebook at smoke scale, into runs/gpu-check/, never results/)
#   make lint      (ruff, and the notebooks as nbdev_clean leaves them)
#   make export    (after editing a notebook: writes memlm/ from nbs/, a stock nbdev_export)
#   make docs      (the documentation site from the notebooks into _docs/: tools/nbdocs.py, nbdev + Quarto; no notebook is run)
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
# On an offline machine with torch, tqdm, numpy and fastcore already installed (no registry, no venv possible),
# `make runs`, `status`, `park`, `reproduce` and `summary` can run on the system Python instead of the venv (nothing is installed; memlm from this checkout);
# `reproduce` and `summary` also need papermill, nbconvert and ipykernel, and the reports' packages (setup's [reports] extra): a missing one stops them at once, named:
#   NO_VENV=1 make runs PAPER=span_buffer SCALE=cpu RUNS="mos:0 mos_snb:0" WORKERS=2 TIME_LIMIT=540 MEMLM_DATA=$PWD/corpora
#
# Every variable reaches the commands as an environment variable and is checked by `python -m memlm.cli` before any work:
# a value is data, never pasted into code. A report or table is replaced only by a complete, successful execution:
# a failed one is kept as runs/<scale>-<paper>.failed.ipynb, and PARTS=... writes under reports/<scale>/partial/ and
# results/<scale>/<paper>/partial/ instead of over the full ones.

SHELL     := /bin/bash
PYTHON    ?= python3
VENV      ?= .venv
BIN       := $(VENV)/bin
SCALE     ?= smoke
# Reproduction notebooks: the core's AWD-LSTM run (nbs/09_awd_lstm.ipynb), one per paper (nbs/1N_<name>.ipynb) and beyond (nbs/2N_).
REPRO_NBS  := $(shell ls nbs/09_*.ipynb nbs/1[0-9]_*.ipynb nbs/2[0-9]_*.ipynb 2>/dev/null)
PAPERS    ?=
PARTS     ?=
WORKERS   ?= 1
TIME_LIMIT ?=
SEEDS     ?= 0,1,2
EXECUTOR  ?= process
USE_SYSTEM_TORCH ?=
STAMP     := $(VENV)/.memlm-stamp
NO_VENV   ?=
# what runs `make runs` / `make status`: the venv's Python, or (NO_VENV=1) the system's with this checkout on the path
RUN_PY    := $(if $(NO_VENV),PYTHONPATH="$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH}" $(PYTHON),$(BIN)/python)
RUN_DEPS  := $(if $(NO_VENV),,$(STAMP))
CLI       := $(RUN_PY) -m memlm.cli
GPU_CHECK_JOBS ?= 4
export SCALE PAPERS PAPER PARTS RUNS WORKERS TIME_LIMIT SEEDS EXECUTOR RERUN MEMLM_DATA
# Python's bytecode cache lives in the venv (the source tree stays clean). Where PYTHONDONTWRITEBYTECODE is set, no cache
# would be written at all and every process would compile torch's modules again on import (about 10 s each).
ifeq ($(NO_VENV),)
export PYTHONPYCACHEPREFIX := $(abspath $(VENV))/pycache
unexport PYTHONDONTWRITEBYTECODE
endif

.PHONY: reproduce runs status park test venv summary clean-runs help lab lint export docs gpu-check gpu-campaign unpack

help:
	@echo "make reproduce [SCALE=smoke|cpu|gpu|paper] [PAPERS='...'] [PARTS=a,b] [WORKERS=n] [TIME_LIMIT=s] [MEMLM_DATA=dir] [USE_SYSTEM_TORCH=1]"
	@echo "make runs PAPER=<paper> RUNS='name:seed ...' [SCALE=...] [WORKERS=n] [TIME_LIMIT=s] [SEEDS=0,1,2] [EXECUTOR=process|local|slurm] [RERUN=1] [MEMLM_DATA=dir]"
	@echo "make park PAPER=<paper> RUNS='name:seed ...' [SCALE=...]   # an unfinished (or still running) run's checkpoints into its folder (parked/, committed): it resumes elsewhere"
	@echo "make status [PAPER=<paper>] [SCALE=...] [SEEDS=0,1,2] [MEMLM_DATA=dir]  # what a campaign has done and has left (no PAPER: a line per paper)"
	@echo "make test | make lint | make gpu-check"
	@echo "make summary    # README, RESULTS.md and the forest plots from the records and claims"
	@echo "make clean-runs # remove runs/ (smoke executions, papermill logs)"
	@echo "make lab        # JupyterLab in nbs/, from the venv"
	@echo "make docs       # the documentation site from the notebooks into _docs/ (open _docs/index.html)"

# The lock goes in with uv where uv can be installed (about 15 s for a fresh venv; pip takes about a minute), else with pip.
# uv does not read pip's configuration, so a local wheel folder that pip is pointed to (find-links) is passed on.
# --no-compile (pip): no byte-compiling of every installed file (torch's thousands); Python caches what it imports, once (above).
UV_VERSION ?= 0.13.10
PIP_LINKS   = $(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null)
$(STAMP): requirements.lock setup.py settings.ini pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(if $(USE_SYSTEM_TORCH),--system-site-packages) $(VENV)
	@if [ -z "$(USE_SYSTEM_TORCH)" ] && $(BIN)/pip install -q uv==$(UV_VERSION) 2>/dev/null; then \
	  uv="$(BIN)/uv pip install -q --python $(BIN)/python $(if $(PIP_LINKS),--find-links $(PIP_LINKS))"; \
	  $$uv -r requirements.lock && $$uv --no-deps --no-build-isolation -e .; \
	else \
	  lock=requirements.lock; \
	  if [ -n "$(USE_SYSTEM_TORCH)" ]; then grep -vE '^(torch|nvidia-|triton)' requirements.lock > $(VENV)/lock-notorch.txt; lock=$(VENV)/lock-notorch.txt; fi; \
	  $(BIN)/pip install -q --no-compile -r $$lock && $(BIN)/pip install -q --no-deps --no-build-isolation -e .; \
	fi
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	@touch $(STAMP)

venv: $(STAMP)

# executed notebooks: smoke runs are scratch (runs/smoke), real scales are reports a reader opens (reports/<scale>/);
# each is written aside and moved into place only when the whole notebook ran
reproduce: $(RUN_DEPS)
	@mkdir -p runs
	@papers=$$($(CLI) check --scale "$$SCALE" --papers "$$PAPERS" --parts "$$PARTS" --workers "$$WORKERS" \
	    --time-limit "$$TIME_LIMIT" --params-out "runs/params-$$SCALE.yaml") || exit 2; \
	case "$$SCALE" in smoke) out=runs/smoke;; *) out="reports/$$SCALE";; esac; \
	if [ -n "$$PARTS" ]; then out="$$out/partial"; fi; mkdir -p "$$out"; \
	for p in $$papers; do \
	  nb=$$(ls nbs/[0-9][0-9]_$$p.ipynb 2>/dev/null | head -1); log="runs/$$SCALE-$$p.log"; \
	  [ -n "$$nb" ] || { echo "error: no notebook nbs/NN_$$p.ipynb for paper $$p" >&2; exit 1; }; \
	  echo "== $$p ($$nb) at scale $$SCALE -> $$out"; \
	  $(CLI) report --nb "$$nb" --out "$$out/$$(basename $$nb)" --params "runs/params-$$SCALE.yaml" \
	    --failed "runs/$$SCALE-$$p.failed.ipynb" > "$$log" 2>&1 \
	    || { tail -40 "$$log"; echo "error: $$p failed, log: $$log; the executed notebook: runs/$$SCALE-$$p.failed.ipynb (no report replaced)" >&2; exit 1; }; \
	done
	@$(MAKE) --no-print-directory summary

runs: $(RUN_DEPS)
	@$(CLI) run --paper "$$PAPER" --scale "$$SCALE" --runs "$$RUNS" --workers "$$WORKERS" --time-limit "$$TIME_LIMIT" \
	  --seeds "$$SEEDS" --executor "$$EXECUTOR" --data "$$MEMLM_DATA" $${RERUN:+--rerun}

# an unfinished run's checkpoints into its run folder (parked/, committed), so that it resumes on a fresh checkout or machine;
# a run still training is parked as of its last epoch end (park it every hour or so: a lost machine then costs the epochs since)
park: $(RUN_DEPS)
	@$(CLI) park --paper "$$PAPER" --scale "$$SCALE" --runs "$$RUNS" --seeds "$$SEEDS" --data "$$MEMLM_DATA"

status: $(RUN_DEPS)
	@$(CLI) status --paper "$$PAPER" --scale "$$SCALE" --seeds "$$SEEDS" --data "$$MEMLM_DATA"

# About a minute on a GPU before a campaign: every notebook at smoke scale ($(GPU_CHECK_JOBS) at a time on the device),
# executed into runs/gpu-check/ with its records and figures there too: a check never mixes with real records.
gpu-check: $(RUN_DEPS)
	@rm -rf runs/gpu-check; mkdir -p runs/gpu-check/results runs/gpu-check/figures
	@export MEMLM_RESULTS="$(CURDIR)/runs/gpu-check/results" MEMLM_FIGURES="$(CURDIR)/runs/gpu-check/figures"; \
	nbs="$${GPU_CHECK_NBS:-$(REPRO_NBS)}"; t0=$$(date +%s); pids=(); \
	for nb in $$nbs; do \
	  while [ $$(jobs -rp | wc -l) -ge $(GPU_CHECK_JOBS) ]; do sleep 0.5; done; \
	  $(RUN_PY) -m papermill --cwd nbs --no-progress-bar "$$nb" "runs/gpu-check/$$(basename $$nb)" -p scale smoke \
	    > "runs/gpu-check/$$(basename $$nb .ipynb).log" 2>&1 & pids+=($$!); \
	done; fail=0; \
	for i in $${!pids[@]}; do wait $${pids[$$i]} || { fail=1; echo "gpu-check: $$(echo $$nbs | cut -d' ' -f$$((i+1))) failed, log in runs/gpu-check/" >&2; }; done; \
	echo "gpu-check: $$(echo $$nbs | wc -w) notebooks in $$(( $$(date +%s) - t0 )) s on $$($(RUN_PY) -c 'from memlm.registry import _device_name; print(_device_name())')"; \
	exit $$fail

# Spend a GPU machine (tools/campaign.py): the pending runs in the stated priority order, GPU_WORKERS at a time, all stopped
# cleanly within BUDGET seconds, their run folders packed into <= 8 archives of <= 16 MB in OUT. Then, on the CPU side:
# make unpack FROM=<folder with the archives>   (every record must name the GPU it ran on)
gpu-campaign: $(RUN_DEPS)
	@$(RUN_PY) tools/campaign.py run --budget "$${BUDGET:-540}" --workers "$${GPU_WORKERS:-4}" --out "$${OUT:-runs/campaign}" --data "$$MEMLM_DATA"

unpack: $(RUN_DEPS)
	@$(RUN_PY) tools/campaign.py unpack --from "$$FROM"

# Regenerates RESULTS.md (every claim, forest plots) and README.md from nbs/index.ipynb.
summary: $(RUN_DEPS)
	@mkdir -p runs
	@$(CLI) report --nb nbs/index.ipynb --out runs/index.ipynb --failed runs/index.failed.ipynb > runs/index.log 2>&1 \
	  || { tail -20 runs/index.log; echo "error: make summary failed, log: runs/index.log (RESULTS.md, README.md and figures untouched)" >&2; exit 1; }
	$(RUN_PY) -m nbconvert --to markdown --no-input --log-level WARN runs/index.ipynb --output-dir . --output README
	@echo "wrote RESULTS.md, figures/claims/ and README.md"

# The compiled-against-eager checks compile scalar CPU kernels (TORCHINDUCTOR_VEC_ISA_OK=0): inductor then skips building a probe
# program per vector ISA and a precompiled header, half of a first compilation's time; the same code paths, without SIMD.
TEST_ENV = OMP_NUM_THREADS=1 TORCHINDUCTOR_VEC_ISA_OK=0 TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS=0
test: $(STAMP)
	cd nbs && $(TEST_ENV) ../$(BIN)/nbdev_test --path . --n_workers 2 --timing
	$(TEST_ENV) $(BIN)/python -m pytest -q -n 2 --dist worksteal tests   # two tests at a time (pytest-xdist), one per core

lint: $(STAMP)
	$(BIN)/ruff check memlm tests tools .ci
	$(BIN)/python .ci/check_clean.py

# the library from the notebooks: each notebook writes its one module (its default_exp)
export: $(STAMP)
	$(BIN)/nbdev_export

# The site from the notebooks, one page a notebook with its API reference (signatures and argument comments), into _docs/
# (and nbdev's processed notebooks into _proc/; both git-ignored). Quarto comes from the docs extra (settings.ini's
# docs_requirements), installed into the venv the first time; no notebook cell is executed (tools/nbdocs.py says how).
# DOCS_WORKERS: notebooks processed at a time.
docs: $(STAMP)
	@export PATH="$(abspath $(BIN)):$$PATH"; \
	command -v quarto >/dev/null || $(BIN)/pip install -q --no-build-isolation -e ".[docs]" \
	  || { echo "error: make docs needs Quarto: the docs extra (quarto-cli) did not install; its package downloads the Quarto binary from Quarto's releases when it builds. Install Quarto (quarto.org) or put its bin/ on PATH, then rerun" >&2; exit 1; }; \
	command -v quarto >/dev/null || { echo "error: make docs: no quarto on PATH after installing the docs extra" >&2; exit 1; }; \
	t0=$$(date +%s); \
	PYTHONPATH="$(CURDIR)/tools:$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH}" $(BIN)/python tools/nbdocs.py --n-workers "$${DOCS_WORKERS:-2}" \
	  && echo "make docs: _docs/ in $$(( $$(date +%s) - t0 )) s (open _docs/index.html)"

lab: $(STAMP)
	$(BIN)/jupyter lab --allow-root --notebook-dir=nbs

clean-runs:
	rm -rf runs

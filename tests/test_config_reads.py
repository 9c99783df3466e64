"""The config keys each stage reads (vlrl.config.reads): its params, and what it may read besides
to size its launch."""

from __future__ import annotations

import pytest

from vlrl.config.reads import LAUNCH_READS, MODEL_RUN, STAGE_READS, allowed_reads, declared_reads
from vlrl.core.errors import ConfigError


@pytest.mark.parametrize("stage", sorted(STAGE_READS))
def test_declared_reads_are_the_stage_s_entry_in_order(stage: str) -> None:
    assert declared_reads(stage) == STAGE_READS[stage]
    assert declared_reads(stage), "a stage that reads nothing would have no params"


def test_the_model_runs_read_the_model_run_keys_first() -> None:
    for stage in ("sft", "grpo", "infer"):
        assert declared_reads(stage)[: len(MODEL_RUN)] == MODEL_RUN, stage
    assert declared_reads("merge") == ("base_model", "sft.enabled", "cpu_threads", "cpu_kernels")


def test_an_unknown_stage_is_an_error_naming_the_table_and_the_stages() -> None:
    with pytest.raises(ConfigError) as err:
        declared_reads("trian")
    assert str(err.value) == (
        "stage 'trian' declares no config keys in vlrl/config/reads.py STAGE_READS (stages "
        "declared: base_model, data, download, grpo, infer, merge, report, score, sft)"
    )
    with pytest.raises(ConfigError, match="stage 'trian'"):
        allowed_reads("trian")


@pytest.mark.parametrize(
    ("stage", "extra"),
    [
        ("sft", ("resources.sft.cpus", "resources.sft.mem_mb")),
        ("grpo", ("resources.grpo.cpus", "resources.grpo.mem_mb")),
        ("infer", ()),
        ("report", ()),
    ],
)
def test_allowed_reads_add_the_launch_keys_after_the_params(stage: str, extra: tuple) -> None:
    assert allowed_reads(stage) == (*STAGE_READS[stage], *extra)
    assert LAUNCH_READS.get(stage, ()) == extra
    assert not set(extra) & set(declared_reads(stage)), "launch keys are no params"

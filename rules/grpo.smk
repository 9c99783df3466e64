# GRPO with TRL (vlrl/stages/grpo.py), then a standalone model from its final checkpoint
# (vlrl/stages/merge.py). Training curves: results/<exp>/grpo/dvclive (plots in dvc.yaml).


rule grpo:
    input:
        data=get_data,
        model=get_grpo_init,
        code=grpo_code,
        params=stage_params("grpo"),
    output:
        directory(paths.grpo_dir("{exp}")),
    log:
        paths.log_file("grpo", "{exp}"),
    benchmark:
        "logs/timings/grpo/{exp}.tsv"
    conda:
        "../envs/main.yaml"
    container:
        config.get("container")
    threads: job_threads("grpo")
    resources:
        **stage_resources("grpo"),
    shell:
        vlrl("grpo", "{wildcards.exp}")


rule merge:
    input:
        grpo=get_grpo_output,
        # a LoRA adapter is merged into the model GRPO started from
        model=get_grpo_init,
        code=code("merge"),
        params=stage_params("merge"),
    output:
        directory(paths.merged_model_dir("{exp}")),
    log:
        paths.log_file("merge", "{exp}"),
    conda:
        "../envs/main.yaml"
    container:
        config.get("container")
    threads: 1
    resources:
        **stage_resources("merge"),
    shell:
        vlrl("merge", "{wildcards.exp}")

# Evaluation: predictions of one model of the experiment (checkpoint: base, sft or grpo) on one
# benchmark (vlrl/stages/infer.py), then their scores (vlrl/stages/score.py).


rule infer:
    input:
        bench=get_benchmark_inputs,
        model=get_checkpoint_model,
        code=code("infer"),
        params=stage_params("infer"),
    output:
        paths.predictions_file("{exp}", "{checkpoint}", "{bench}"),
    log:
        paths.log_file("infer", "{exp}", "{checkpoint}", "{bench}"),
    benchmark:
        "logs/timings/infer/{exp}/{checkpoint}/{bench}.tsv"
    conda:
        "../envs/main.yaml"
    container:
        config.get("container")
    threads: job_threads("infer")
    resources:
        **stage_resources("infer"),
    shell:
        vlrl("infer", "{wildcards.exp}", "{wildcards.checkpoint}", "{wildcards.bench}")


rule score:
    input:
        predictions=get_predictions,
        bench=lambda wildcards: [rel(f) for f in benchmarks.benchmark_files(wildcards.bench)],
        code=code("score"),
        params=stage_params("score"),
    output:
        paths.scores_file("{exp}", "{checkpoint}", "{bench}"),
    log:
        paths.log_file("score", "{exp}", "{checkpoint}", "{bench}"),
    conda:
        "../envs/main.yaml"
    container:
        config.get("container")
    threads: 1
    resources:
        **stage_resources("score"),
    shell:
        vlrl("score", "{wildcards.exp}", "{wildcards.checkpoint}", "{wildcards.bench}")

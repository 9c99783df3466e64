# Report: tables, plots and metrics.json (for `dvc exp show`) of one experiment
# (vlrl/stages/report.py).


rule report:
    input:
        scores=get_scores,
        code=code("report"),
    output:
        report=directory(paths.report_dir("{exp}")),
        metrics=paths.metrics_file("{exp}"),
    params:
        config=experiment_params("report"),
    log:
        paths.log_file("report", "{exp}"),
    conda:
        "../envs/main.yaml"
    threads: 1
    shell:
        "vlrl report {wildcards.exp} > {log} 2>&1"

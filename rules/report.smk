# Report: tables, plots and metrics.json (for `dvc exp show`) of one experiment
# (vlrl/stages/report.py).


rule report:
    input:
        scores=get_scores,
        code=code("report"),
        params=stage_params("report"),
    output:
        report=directory(paths.report_dir("{exp}")),
        metrics=paths.metrics_file("{exp}"),
    log:
        paths.log_file("report", "{exp}"),
    conda:
        "../envs/main.yaml"
    threads: 1
    shell:
        "workflow_scripts/vlrl.sh report {wildcards.exp} > {log} 2>&1"

# Report: tables, plots, a sample gallery and metrics.json (for `dvc exp show`) of one
# experiment (vlrl/stages/report.py). Besides the scores, it reads the predictions and the
# benchmarks' images (the gallery), the GRPO output (training curves), the published tables it
# links, what its provenance section shows, the training records (its answer prior), and for a
# child experiment (extends:) its parent's scores, to pair with its own.


rule report:
    input:
        scores=get_scores,
        predictions=get_report_predictions,
        bench=get_report_benchmarks,
        curves=get_report_curves,
        published=get_report_published,
        parent=get_report_parent_scores,
        training=get_report_training,
        provenance=get_report_provenance,
        code=code("report"),
        params=stage_params("report"),
    output:
        report=directory(paths.report_dir("{exp}")),
        metrics=paths.metrics_file("{exp}"),
    log:
        paths.log_file("report", "{exp}"),
    conda:
        "../envs/main.yaml"
    container:
        config.get("container")
    threads: 1
    resources:
        **stage_resources("report"),
    shell:
        vlrl("report", "{wildcards.exp}")

# Download: fetch a dataset or benchmark named by config/datasets/<dataset>.yaml (hub repo id +
# 40-hex revision + files) into resources/datasets/<dataset>/, shared by every experiment whose
# benchmarks name it (vlrl/stages/download.py).


rule download:
    input:
        code=code("download"),
        params=stage_params("download"),
        local=get_local_dataset,
    output:
        directory(paths.dataset_resource("{dataset}")),
    log:
        paths.log_file("download", "{dataset}"),
    conda:
        "../envs/main.yaml"
    container:
        config.get("container")
    threads: 1
    shell:
        vlrl("download", "{wildcards.dataset}")

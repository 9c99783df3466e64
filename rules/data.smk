# Data: generate or convert the experiment's data into canonical records (vlrl/stages/data.py).


rule data:
    input:
        code=code("data"),
        params=stage_params("data"),
        datasets=get_data_datasets,
    output:
        directory(paths.data_dir("{exp}")),
    log:
        paths.log_file("data", "{exp}"),
    conda:
        "../envs/main.yaml"
    container:
        config.get("container")
    threads: 1
    resources:
        **stage_resources("data"),
    shell:
        vlrl("data", "{wildcards.exp}")

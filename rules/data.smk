# Data: generate or convert the experiment's data into canonical records (vlrl/stages/data.py).


rule data:
    input:
        code=code("data"),
    output:
        directory(paths.data_dir("{exp}")),
    params:
        config=experiment_params("data"),
    log:
        paths.log_file("data", "{exp}"),
    conda:
        "../envs/main.yaml"
    threads: 1
    shell:
        "vlrl data {wildcards.exp} > {log} 2>&1"

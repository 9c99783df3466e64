# Base models: build (tiny) or download (hub) into resources/models/<model>/, shared by every
# experiment that names the model (vlrl/stages/base_model.py).


rule base_model:
    input:
        code=code("base_model"),
        params=stage_params("base_model"),
    output:
        directory(paths.model_resource("{model}")),
    log:
        paths.log_file("base_model", "{model}"),
    conda:
        "../envs/main.yaml"
    container:
        config.get("container")
    threads: 1
    shell:
        vlrl("base-model", "{wildcards.model}")

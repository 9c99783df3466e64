# Cold-start SFT with LLaMA-Factory (vlrl/stages/sft.py).


rule sft:
    input:
        data=get_data,
        model=get_base_model,
        code=code("sft"),
        params=stage_params("sft"),
    output:
        directory(paths.sft_dir("{exp}")),
    log:
        paths.log_file("sft", "{exp}"),
    benchmark:
        "logs/timings/sft/{exp}.tsv"
    # The stage runs in the main environment: it converts the data and writes LLaMA-Factory's
    # config with the vlrl package, then launches llamafactory-cli from .venv-sft (envs/sft.yaml),
    # whose pins conflict with TRL's. So the rule's own environment is main, not sft.
    conda:
        "../envs/main.yaml"
    container:
        config.get("container")
    threads: job_threads("sft")
    resources:
        **stage_resources("sft"),
    shell:
        vlrl("sft", "{wildcards.exp}")

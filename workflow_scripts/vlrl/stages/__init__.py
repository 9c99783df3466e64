"""One module per pipeline stage; ``vlrl <stage>`` runs ``stages/<stage>.py:run``.

Each stage declares the experiment config keys it reads in its ``READS`` (its params,
:mod:`vlrl.workflow.stage_deps`); keys that several stages read are declared here once.
"""

MODEL_RUN = ("seed", "cpu_threads", "cpu_kernels", "prompt", "base_model")
"""What every stage that runs the model under a prompt reads (sft, grpo, infer): the seed, the
CPU threads and kernels (they change the bits), the prompt format and the base model."""

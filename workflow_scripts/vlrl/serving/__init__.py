"""The servers a stage starts beside its work, and what they serve.

- :mod:`~vlrl.serving.servers`: an endpoint's server (``vllm serve`` on GPUs, ``transformers
  serve`` on CPU) started for a ``with`` block and stopped after it, also on failure;
- :mod:`~vlrl.serving.commands`: its command, backend and name (``endpoint_id``), known before
  it starts;
- :mod:`~vlrl.serving.served_models`: what it serves: the model's config, the vLLM defaults it
  implies, the weights' fingerprint;
- :mod:`~vlrl.serving.gpus`: which of a stage's GPUs the servers take and which stay with its
  training ranks;
- :mod:`~vlrl.serving.trl_vllm`: TRL's ``trl vllm-serve`` of the policy (``grpo.vllm_mode:
  server``).

Which servers a GRPO run starts is the algorithm's business (:mod:`vlrl.algorithms.grpo_servers`);
the judge's, the scorer's (:mod:`vlrl.scoring.judging`).

May import: :mod:`vlrl.core`, :mod:`vlrl.config`, :mod:`vlrl.cluster`, :mod:`vlrl.hub`.
"""

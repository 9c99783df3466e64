"""An item's life between the stages: the record that asks it, the prompt that poses it, the
answer read from a response, the prediction and score recorded for it.

- :mod:`~vlrl.items.records`: the canonical record, one schema for every dataset after the data
  stage;
- :mod:`~vlrl.items.prompts`: the named prompt formats (:data:`~vlrl.items.prompts.PROMPTS`),
  built from the papers' texts and patterns in :mod:`~vlrl.items.prompt_texts`;
- :mod:`~vlrl.items.answers`: answer extraction and comparison shared by rewards and scorers;
- :mod:`~vlrl.items.frames`: the model-input frame boxes are read and taught in;
- :mod:`~vlrl.items.predictions`: the typed predictions and scores that infer, score and report
  pass on.

May import: :mod:`vlrl.core`.
"""

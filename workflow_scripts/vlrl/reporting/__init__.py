"""The pieces of the report stage (:mod:`vlrl.stages.report`), one floor below it.

- :mod:`~vlrl.reporting.frames`: the numbers, as rows and data frames: results, paired
  comparisons, ``metrics.json``;
- :mod:`~vlrl.reporting.combined`: benchmarks shown as one number (``report.combined``), their
  accuracy over all their items;
- :mod:`~vlrl.reporting.published`: published tables (``config/reference/*.yaml``), validated,
  and set beside the reproduced numbers;
- :mod:`~vlrl.reporting.tables`: the frames as the tables a person reads, every number
  formatted by :mod:`~vlrl.reporting.formatting`, the one place numbers become text;
- :mod:`~vlrl.reporting.gallery`: a seeded sample of items with every checkpoint's answer;
- :mod:`~vlrl.reporting.plots` and :mod:`~vlrl.reporting.curves`: the accuracy bars and the
  GRPO training curves;
- :mod:`~vlrl.reporting.provenance`: where every number comes from;
- :mod:`~vlrl.reporting.render`: the Jinja templates (``templates/*.j2``) that turn all of it
  into Markdown and HTML.

Nothing here prints wall-clock times, absolute paths or host names: the report is a DVC output
that a fresh clone reproduces byte for byte.

May import: :mod:`vlrl.core`, :mod:`vlrl.config`, :mod:`vlrl.items`, :mod:`vlrl.sharing`,
:mod:`vlrl.scoring`, :mod:`vlrl.benchmarks`.
"""

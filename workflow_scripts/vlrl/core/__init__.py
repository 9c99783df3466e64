"""The ground floor: what every other room uses and nothing of vlrl's own beneath it.

- :mod:`~vlrl.core.paths`: every path a stage touches, derived from the experiment name;
- :mod:`~vlrl.core.files`: atomic writes (a stage's output appears whole or not at all) and
  JSON / JSON Lines;
- :mod:`~vlrl.core.errors`: errors that name the file, row or key at fault;
- :mod:`~vlrl.core.volatile`: the run times that stay out of stage outputs;
- :mod:`~vlrl.core.moved`: the old import paths of modules that moved, for one release.

May import: nothing of vlrl.
"""

"""Datasets: the synthetic shapes world (:mod:`vlrl.data.shapes`) and converters between the
canonical record and what trainers read (:mod:`vlrl.data.convert`).

May import: :mod:`vlrl.core`, :mod:`vlrl.config`, :mod:`vlrl.items`, :mod:`vlrl.hub`,
:mod:`vlrl.scoring`.
"""

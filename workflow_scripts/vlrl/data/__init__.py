"""Datasets: the synthetic shapes world (:mod:`vlrl.data.shapes`) and converters between the
canonical record and what trainers read (:mod:`vlrl.data.convert`)."""

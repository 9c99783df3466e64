"""Orchestration around the stage commands: the Snakemake DAG, dvc.yaml generation, checks.

May import: every room but :mod:`vlrl.cli` (the stages included: it runs them).
"""

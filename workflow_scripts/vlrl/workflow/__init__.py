"""Orchestration around the stage commands: the Snakemake DAG, dvc.yaml generation, checks."""

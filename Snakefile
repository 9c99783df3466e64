# vlrl: the one declaration of the pipeline. dvc.yaml is generated from this DAG by
# `vlrl dvc-yaml`; every rule runs exactly one `vlrl <stage> ...` command.
#
#   snakemake --profile profiles/local            # everything in params.yaml, locally
#   snakemake --profile profiles/slurm            # the same DAG on a Slurm cluster
#   snakemake -n --config 'experiments=[name]'    # one experiment, dry run

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

from vlrl.workflow.check import params_problems

min_version("9.27")


configfile: "params.yaml"


# One line per problem, with a "did you mean" (Snakemake's own validation prints the schema).
if problems := params_problems(config, "params.yaml"):
    raise WorkflowError("\n".join(problems))
validate(config, "config/schema/params.schema.yaml")  # fills in the schema's defaults


include: "rules/common.smk"
include: "rules/download.smk"
include: "rules/data.smk"
include: "rules/model.smk"
include: "rules/sft.smk"
include: "rules/grpo.smk"
include: "rules/evaluate.smk"
include: "rules/report.smk"


# The report of every experiment in params.yaml (config["experiments"]).
rule all:
    input:
        get_reports,
    default_target: True


# After a successful run, DVC records the same jobs as up to date (dvc commit --no-relink:
# changes no file but dvc.lock, and dvc.yaml where it no longer describes the DAG), so
# `dvc status` and `dvc repro` agree with Snakemake (vlrl.workflow.handover).
# `snakemake --no-hooks` skips it.
onsuccess:
    from vlrl.workflow import handover

    handover.after_snakemake(workflow.dag.jobs)

#!/bin/sh
# The `vlrl` command every Snakemake rule and DVC stage runs, whatever the caller's PATH:
# the environment $VLRL_VENV names (absolute, or relative to this checkout: `VLRL_VENV=.venv-gpu`
# for the GPU set of `make setup-gpu`, or the image's own environment in a container), else this
# checkout's .venv when it has one (`make setup`), else the `vlrl` on PATH (a conda env on a
# cluster, or an environment you installed vlrl into).
root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
venv=${VLRL_VENV:-$root/.venv}
case $venv in /*) ;; *) venv="$root/$venv" ;; esac
if [ -x "$venv/bin/vlrl" ]; then
    PATH="$venv/bin:$PATH"
    export PATH
    exec "$venv/bin/vlrl" "$@"
fi
if [ -n "${VLRL_VENV:-}" ]; then
    echo "vlrl: VLRL_VENV=$VLRL_VENV has no bin/vlrl (looked in $venv): run \`make setup-gpu\` or unset it" >&2
    exit 127
fi
if ! command -v vlrl >/dev/null 2>&1; then
    echo "vlrl: not found: run \`make setup\` in $root (creates .venv) or install vlrl (pip install -e .)" >&2
    exit 127
fi
exec vlrl "$@"

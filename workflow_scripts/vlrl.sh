#!/bin/sh
# The `vlrl` command every Snakemake rule and DVC stage runs, whatever the caller's PATH:
# this checkout's .venv when it has one (`make setup`), else the `vlrl` on PATH (a conda env on
# a cluster, or an environment you installed vlrl into).
root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
if [ -x "$root/.venv/bin/vlrl" ]; then
    PATH="$root/.venv/bin:$PATH"
    export PATH
    exec "$root/.venv/bin/vlrl" "$@"
fi
if ! command -v vlrl >/dev/null 2>&1; then
    echo "vlrl: not found: run \`make setup\` in $root (creates .venv) or install vlrl (pip install -e .)" >&2
    exit 127
fi
exec vlrl "$@"

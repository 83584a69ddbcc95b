#!/usr/bin/env bash
# Installs wmdeval into the conda environment of wmdeval.yaml, once, right after Snakemake
# created it (Snakemake runs <env file name>.post-deploy.sh inside the activated environment).
#
# Snakemake runs a copy of this script (.snakemake/conda/<hash>.post-deploy.sh) from its
# working directory, so the checkout is found as the working directory, never relative to
# this file. The install is editable: the jobs run the checkout's current code, and an edit
# takes effect without rebuilding the environment (whose hash only covers wmdeval.yaml and
# this script). --no-deps and --no-build-isolation: conda provides every dependency and the
# build backend, and nothing is fetched from PyPI.
set -euo pipefail

checkout="$PWD"
if ! grep -qs '^name = "wmdeval"$' "$checkout/pyproject.toml"; then
    echo "wmdeval.post-deploy.sh: $checkout/pyproject.toml: not found or not wmdeval's;" \
        "run snakemake from the wmdeval checkout" >&2
    exit 1
fi
"$CONDA_PREFIX/bin/python" -m pip install --quiet --no-deps --no-build-isolation --no-index \
    --editable "$checkout"

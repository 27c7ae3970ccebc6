#!/usr/bin/env bash
# Builds the API reference from the docstrings (pdoc, in the test extra) into build/api or "$1".
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-build/api}"
"${PYTHON:-python}" -m pdoc sdv_dpkme sdv_dpkme.datasets sdv_dpkme.domain sdv_dpkme.evaluation \
    sdv_dpkme.images -o "$out"
echo "API reference written to $out/index.html"

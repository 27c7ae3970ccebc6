#!/usr/bin/env bash
# Installs the package (CPU torch pinned) and runs the main job on the bundled Adult sample.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet 'torch==2.13.0' -e .
python -m sdv_dpkme demo "$@"

#!/usr/bin/env bash
# Installs the package with its test dependencies (CPU torch pinned) and runs the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet 'torch==2.13.0' -e '.[test]'
python -m pytest -q "$@"

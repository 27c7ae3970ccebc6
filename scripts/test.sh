#!/usr/bin/env bash
# Installs the package with its test dependencies (CPU torch pinned) and runs the test suite on
# every core (pytest-xdist; whole files per worker, so a module's shared fit is made once).
# Extra arguments go to pytest: `bash scripts/test.sh -m "not slow"` runs the
# fast subset, `-n 0` runs in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install --quiet 'torch==2.13.0' -e '.[test]'
python -m pytest -q -n auto --dist loadfile "$@"

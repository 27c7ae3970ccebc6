#!/usr/bin/env bash
# Create benchmarks/.venv-smartnoise: a separate virtualenv with smartnoise-synth (MST, AIM)
# for the Adult benchmark (benchmarks/studies/adult.py). smartnoise-synth pins old packages
# (opacus<0.15, mbi<2, pac-synth 0.0.8) that must not enter the project's own venv.
#
# Usage (from anywhere):   bash benchmarks/peers/setup_smartnoise.sh [--force]
#   PYTHON=python3.11 bash benchmarks/peers/setup_smartnoise.sh   # choose the interpreter
#
# What it does
#   1. python -m venv benchmarks/.venv-smartnoise (Python >=3.10,<3.15 as smartnoise-synth
#      1.0.8 requires; tested with 3.11.7).
#   2. Installs a CPU-only torch first (opacus 0.14 depends on torch; MST and AIM never use
#      it, but without this pip pulls the default CUDA torch build, ~6 GB instead of ~1.5 GB).
#      Tries torch==2.13.0+cpu from the configured indexes/find-links, then the PyTorch CPU
#      index, then gives up on the CPU build and lets pip choose.
#   3. Installs smartnoise-synth==1.0.8 constrained by smartnoise-constraints.txt (the exact
#      set that resolved and was tested here), then runs `pip check` and a smoke import.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BENCH="$(dirname "$HERE")"
VENV="$BENCH/.venv-smartnoise"
PYTHON="${PYTHON:-python3.11}"
CONSTRAINTS="$HERE/smartnoise-constraints.txt"
TORCH_CPU="torch==2.13.0+cpu"

if [[ "${1:-}" == "--force" ]]; then
    rm -rf "$VENV"
fi
if [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" -c 'import snsynth' 2>/dev/null; then
    echo "smartnoise venv already present: $VENV (use --force to rebuild)"
    exit 0
fi

if ! command -v "$PYTHON" >/dev/null 2>&1; then
    PYTHON=python3
fi
"$PYTHON" - <<'EOF'
import sys
if not ((3, 10) <= sys.version_info[:2] < (3, 15)):
    sys.exit(f'smartnoise-synth 1.0.8 needs Python >=3.10,<3.15, got {sys.version.split()[0]}')
EOF

echo "creating $VENV with $("$PYTHON" -V)"
"$PYTHON" -m venv "$VENV"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
"${PIP[@]}" install -q --upgrade "pip>=23" wheel

echo "installing a CPU-only torch (needed only to satisfy opacus' requirement)"
if ! "${PIP[@]}" install -q "$TORCH_CPU" 2>/dev/null; then
    if ! "${PIP[@]}" install -q "$TORCH_CPU" --index-url https://download.pytorch.org/whl/cpu 2>/dev/null; then
        echo "WARNING: no CPU torch wheel found; pip will install its default torch build (large)"
    fi
fi

echo "installing smartnoise-synth==1.0.8"
if [[ -f "$CONSTRAINTS" ]]; then
    # The constraints pin the set that was tested; if they cannot be met (another platform /
    # Python), retry unconstrained so the install still has a chance.
    if ! "${PIP[@]}" install -q "smartnoise-synth==1.0.8" -c "$CONSTRAINTS"; then
        echo "WARNING: the tested pins did not resolve here; retrying without constraints"
        "${PIP[@]}" install -q "smartnoise-synth==1.0.8"
    fi
else
    "${PIP[@]}" install -q "smartnoise-synth==1.0.8"
fi

"${PIP[@]}" check
"$VENV/bin/python" - <<'EOF'
from snsynth import Synthesizer
import snsynth, mbi
from importlib.metadata import version
for name in ('smartnoise-synth', 'mbi', 'opacus', 'torch', 'jax', 'numpy', 'pandas', 'opendp'):
    print(f'  {name} {version(name)}')
Synthesizer.create('mst', epsilon=1.0, delta=1e-5)
Synthesizer.create('aim', epsilon=1.0, delta=1e-5)
print('smartnoise-synth MST/AIM import OK')
EOF
"${PIP[@]}" freeze > "$VENV/pip-freeze.txt"
du -sh "$VENV" | awk '{print "venv size: " $1}'
echo "done: $VENV/bin/python benchmarks/peers/run_smartnoise.py --help"

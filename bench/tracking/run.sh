#!/usr/bin/env bash
# The Interaction Network, FlexGraph against PyTorch + PyG on generated tracking events
# (bench/tracking/run_tracking.py says what runs and what is printed). Builds build/release's
# flexgraph and machine_ceilings, sets up bench/.venv (bench/baselines/setup_venv.sh), then runs.
#   bench/tracking/run.sh [--particles "50 200 1000"] [--events 6] [--epochs 3] [--threads 2] ...
set -euo pipefail
cd "$(dirname "$0")/../.."
cmake --build --preset release --target flexgraph machine_ceilings > /dev/null
bash bench/baselines/setup_venv.sh > /dev/null
exec python3 bench/tracking/run_tracking.py "$@"

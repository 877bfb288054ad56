#!/usr/bin/env bash
# The reproduction's GPU plan in one prepared script (trainers/reproduce.py --plan gpu: about 10 minutes on one GPU).
#
#   scripts/reproduce_gpu.sh --dry-run   # first, on the CPU: the GPU plan's every stage and flag at tiny sizes
#   scripts/reproduce_gpu.sh             # on the GPU machine: writes docs/results-gpu.{md,json,png}
#
# It builds .venv with the reproduction's extras (make venv-repro) unless HSA_NO_SETUP=1, and leaves the work folder
# in runs/repro-gpu (runs/repro-gpu-dry for the dry run), so an interrupted run resumes where it stopped.
# Extra arguments go to trainers.reproduce (for example --set eval_records=150 to fit a slower GPU).
set -euo pipefail
cd "$(dirname "$0")/.."

dry=0
args=()
for a in "$@"; do
  if [ "$a" = "--dry-run" ]; then dry=1; else args+=("$a"); fi
done

if [ "${HSA_NO_SETUP:-0}" != 1 ]; then
  # a GPU machine needs the CUDA build of torch: TORCH_PIN=torch (the Makefile pins the CPU build of this project's
  # machine by default)
  if [ "$dry" = 0 ]; then make venv-repro TORCH_PIN="${TORCH_PIN:-torch>=2.4}"; else make venv-repro; fi
fi
py=.venv/bin/python

if [ "$dry" = 1 ]; then
  exec "$py" -m trainers.reproduce --plan gpu --dry-run --device cpu --out runs/repro-gpu-dry \
    --results-name results-gpu-dry ${args[@]+"${args[@]}"}
fi

"$py" - <<'EOF'
import sys

import torch

if not torch.cuda.is_available():
    sys.exit("error: torch sees no CUDA GPU here (torch " + torch.__version__ + "); on a CPU run --dry-run instead")
print(f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}", flush=True)
EOF
exec "$py" -m trainers.reproduce --plan gpu --device cuda --out runs/repro-gpu --docs docs \
  --results-name results-gpu ${args[@]+"${args[@]}"}

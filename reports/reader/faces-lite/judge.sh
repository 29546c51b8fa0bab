#!/bin/bash
# Side-by-side judge of the candidate (docs/history/faces-pretrained.md): old manifest then candidate, same code.
set -e
cd /work/wt/faces
export PYTHONPATH=$PWD
PY="/work/main/.venv/bin/python -c"
T='import sys; from api.cli import main; sys.argv=["throwbox"]+sys.argv[1:]; main()'
R=/work/shared/datasets/real
O=/work/faces-runs/judge; mkdir -p $O
for m in old cand; do
  if [ $m = old ]; then M=models/manifest.json; else M=/work/faces-runs/cand/manifest.json; fi
  /work/main/.venv/bin/python -c "$T" eval $R/d6-topdown-nellbyler --split test --json --manifest $M --plot $O/n-$m.png > $O/nellbyler-$m.json
  /work/main/.venv/bin/python -c "$T" eval $R/d6-webcam-matteop65 --split valid --json --manifest $M --plot $O/m-$m.png > $O/matteop65-$m.json
done
for m in old cand; do
  if [ $m = old ]; then M=models/manifest.json; else M=/work/faces-runs/cand/manifest.json; fi
  /work/main/.venv/bin/python -c "$T" bench --frames 100 --json --manifest $M > $O/bench-$m.json
done
date -u

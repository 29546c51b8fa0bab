#!/bin/bash
# Issue 47, fourth try: the merge setting chosen on two tuning sets (docs/history/faces-pretrained-4.md).
set -e
cd /work/main
export PYTHONPATH=$PWD
PY=/work/main/.venv/bin/python
T='import sys; from api.cli import main; sys.argv=["throwbox"]+sys.argv[1:]; main()'
HERE=reports/reader/faces-lite-4/tune
C=/work/faces-runs/f4/cands
mkdir -p $HERE
date -u
for set in /work/faces-runs/f4/clearval-s47600 /work/wt/gamecount/data/judge/planetune-wide-s14200; do
  s=$(basename $set)
  for m in old C1 C2 C3; do
    if [ $m = old ]; then M=models/manifest.json; else M=$C/$m/manifest.json; fi
    $PY -c "$T" lab eval $set --json --manifest $M > $HERE/$s-$m.json
  done
done
date -u
$PY reports/reader/faces-lite-4/choose.py $HERE | tee $HERE/choice.md

#!/bin/bash
# Side-by-side judge of issue 47's sixth candidate (docs/history/faces-pretrained-6.md; the fifth's script, its paths changed): each set read with
# the shipped manifest, then with the candidate's, same code, one run; then the two benches one after the other.
# The figures of the issue's bars that the rule does not decide on (the enrollment study) follow.
set -e
cd /work/main
export PYTHONPATH=$PWD
PY=/work/main/.venv/bin/python
T='import sys; from api.cli import main; sys.argv=["throwbox"]+sys.argv[1:]; main()'
R=/work/shared/datasets/real
HERE=reports/reader/faces-lite-6
FIX=reports/reader/faces-lite-2/nellbyler-label-overrides.json
O=/work/faces-runs/f6/judge; mkdir -p $O
CAND=/work/faces-runs/f6/cand/manifest.json
RUN=/work/faces-runs/f6/run
# The candidate manifest: the shipped one with `pips` pointing at the run's ONNX (the other models shared).
mkdir -p /work/faces-runs/f6/cand
for d in detect_centernet judge_diestate pips_facenet; do ln -sfn $PWD/models/$d /work/faces-runs/f6/cand/$d; done
cp $RUN/pips_lite6_2026dec.onnx /work/faces-runs/f6/cand/
$PY - <<'PYEOF'
import json
from vision.onnx_session import sha256_of
from pathlib import Path
cand = Path("/work/faces-runs/f6/cand")
m = json.loads(Path("models/manifest.json").read_text())
m["models"]["pips"].update(file="pips_lite6_2026dec.onnx", sha256=sha256_of(cand / "pips_lite6_2026dec.onnx"),
                           version="candidate")
(cand / "manifest.json").write_text(json.dumps(m, indent=2) + "\n")
PYEOF
date -u
for m in old cand; do
  if [ $m = old ]; then M=models/manifest.json; else M=$CAND; fi
  $PY -c "$T" lab eval $R/d6-topdown-nellbyler --split test --json --manifest $M --label-overrides $FIX --plot $O/n-$m.png > $HERE/nellbyler-$m.json
  $PY -c "$T" lab eval $R/d6-webcam-matteop65 --split valid --json --manifest $M --plot $O/m-$m.png > $HERE/matteop65-$m.json
  $PY -c "$T" lab eval /work/wt/faces2/data/synth/clearfresh-s47471 --json --manifest $M --plot $O/c-$m.png > $HERE/clearfresh-$m.json
  $PY -c "$T" lab eval /work/faces-runs/f4/clearfresh2-s47900 --json --manifest $M --plot $O/c2-$m.png > $HERE/clearfresh2-$m.json
done
date -u
for m in old cand; do
  if [ $m = old ]; then M=models/manifest.json; else M=$CAND; fi
  $PY -c "$T" lab bench --frames 200 --json --manifest $M > $HERE/bench-$m.json
done
date -u
$PY reports/reader/faces-lite-5/verdict.py $HERE | tee $HERE/verdict.md
date -u

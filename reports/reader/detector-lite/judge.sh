#!/bin/bash
# Side-by-side judge of issue 48's detector candidate (docs/history/detector-pretrained.md): each set read with
# the shipped manifest, then with the candidate's (the shipped one with `detector` pointing at the candidate's
# file and SHA-256), the same code, one run; then the two benches one after the other; then verdict.py.
# Usage: bash reports/reader/detector-lite/judge.sh CANDIDATE.onnx
set -euo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
CAND_ONNX=$(realpath "$1")
PY=/work/main/.venv/bin/python
T='import sys; from api.cli import main; sys.argv=["throwbox"]+sys.argv[1:]; main()'
R=/work/shared/datasets/real
J=/work/wt/gamecount/data/judge
O=reports/reader/detector-lite
C=/work/det-runs/cand
P=/work/det-runs/judge-plots
# The candidate manifest: the shipped models linked in, `detector` replaced (file and SHA-256).
rm -rf $C && mkdir -p $C $P
for d in models/*/; do ln -s "$PWD/$d" "$C/$(basename "$d")"; done
mkdir $C/detect_lite_candidate && cp "$CAND_ONNX" $C/detect_lite_candidate/
$PY - "$C" "$(basename "$CAND_ONNX")" <<'PYEOF'
import json, sys
from pathlib import Path
from vision.onnx_session import sha256_of
c, name = Path(sys.argv[1]), sys.argv[2]
m = json.loads(Path("models/manifest.json").read_text())
m["models"]["detector"]["file"] = f"detect_lite_candidate/{name}"
m["models"]["detector"]["sha256"] = sha256_of(c / "detect_lite_candidate" / name)
m["models"]["detector"]["version"] = "candidate"
(c / "manifest.json").write_text(json.dumps(m, indent=2) + "\n")
PYEOF
date -u
for m in shipped cand; do
  if [ $m = shipped ]; then M=models/manifest.json; else M=$C/manifest.json; fi
  for s in wide usual; do
    $PY -c "$T" lab eval $J/$s-s14000-first100 --verdicts --json --manifest $M --plot $P/$s-$m.png > $O/$s-$m.json
  done
  $PY -c "$T" lab eval $R/d6-topdown-nellbyler --split test --json --manifest $M --plot $P/n-$m.png > $O/nellbyler-$m.json
  $PY -c "$T" lab eval $R/d6-webcam-matteop65 --split valid --json --manifest $M --plot $P/m-$m.png > $O/matteop65-$m.json
done
date -u
for m in shipped cand; do
  if [ $m = shipped ]; then M=models/manifest.json; else M=$C/manifest.json; fi
  $PY -c "$T" lab bench --frames 200 --json --manifest $M > $O/bench-$m.json
done
date -u
$PY $O/verdict.py $O | tee $O/verdict.md

#!/bin/bash
# Side-by-side judge of the die-state candidate (docs/history/state-pretrained.md): the shipped manifest, then
# the candidate manifest (the shipped one with `die_state` pointing at the candidate), the same code, one run.
# Usage: bash reports/reader/state-lite/judge.sh CANDIDATE.onnx
set -euo pipefail
cd "$(dirname "$0")/../../.."
export PYTHONPATH=$PWD
CAND_ONNX=$(realpath "$1")
PY=/work/main/.venv/bin/python
T='import sys; from api.cli import main; sys.argv=["throwbox"]+sys.argv[1:]; main()'
R=/work/shared/datasets/real
HELD=data/judge/stateheld-s48480
O=reports/reader/state-lite
C=/work/state-runs/cand
# The candidate manifest: the shipped models linked in, `die_state` replaced (file and SHA-256).
rm -rf $C && mkdir -p $C
for d in models/*/; do [ "$(basename "$d")" = judge_diestate_lite ] || ln -s "$PWD/$d" "$C/$(basename "$d")"; done
mkdir $C/judge_diestate_lite && cp "$CAND_ONNX" $C/judge_diestate_lite/
$PY - "$C" "$(basename "$CAND_ONNX")" <<'PYEOF'
import json, sys
from pathlib import Path
from vision.onnx_session import sha256_of
c, name = Path(sys.argv[1]), sys.argv[2]
m = json.loads(Path("models/manifest.json").read_text())
m["models"]["die_state"]["file"] = f"judge_diestate_lite/{name}"
m["models"]["die_state"]["sha256"] = sha256_of(c / "judge_diestate_lite" / name)
(c / "manifest.json").write_text(json.dumps(m, indent=2) + "\n")
PYEOF
date -u
for m in shipped cand; do
  if [ $m = shipped ]; then M=models/manifest.json; else M=$C/manifest.json; fi
  nice -n 5 $PY -c "$T" lab eval $HELD --verdicts --json --manifest $M > $O/held-$m.json
  nice -n 5 $PY -c "$T" lab eval $R/d6-topdown-nellbyler --split test --json --manifest $M > $O/nellbyler-$m.json
  nice -n 5 $PY -c "$T" lab eval $R/d6-webcam-matteop65 --split valid --json --manifest $M > $O/matteop65-$m.json
done
for m in shipped cand; do
  if [ $m = shipped ]; then M=models/manifest.json; else M=$C/manifest.json; fi
  $PY -c "$T" lab bench --frames 100 --json --manifest $M > $O/bench-$m.json
done
date -u
$PY "$O/rule.py" "$O"

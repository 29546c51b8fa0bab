#!/usr/bin/env bash
# Enrollment on the shipped face model 18c (with its embedding output), 60 dice, seed 0 (issue 47).
# Run from the repository root; the two rendered sets are outside the repository (data/ of their worktrees).
set -euo pipefail
M=models/pips_facenet/pips_facenet_18c_2026dec.onnx
OUT=reports/reader/enroll-18c
python -m lab.enroll_study "$M" --synth "${PLANETUNE:-data/judge/planetune-wide-s14200}" > "$OUT/enroll-study-planetune-wide-s14200.json"
python -m lab.enroll_study "$M" --synth "${STYLEBLUE:-data/synth/styleblue-s47472}" > "$OUT/enroll-study-styleblue-s47472.json"
python -m lab.enroll_study "$M" > "$OUT/enroll-study-matteop65.json"

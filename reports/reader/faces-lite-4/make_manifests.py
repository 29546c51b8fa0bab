"""Candidate manifests of issue 47's fourth try (docs/history/faces-pretrained-4.md): the shipped manifest
plus a `pips_second` entry for the third try's Lite0 file, one folder per merge setting.

python reports/reader/faces-lite-4/make_manifests.py LITE_ONNX OUT_DIR
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from vision.onnx_session import sha256_of

SETTINGS = {"C1": (1.0, None), "C2": (0.5, None), "C3": (1.0, 0.9)}


def main() -> None:
    lite, out = Path(sys.argv[1]), Path(sys.argv[2])
    models = Path("models")
    shipped = json.loads((models / "manifest.json").read_text(encoding="utf-8"))
    for name, (weight, accept) in SETTINGS.items():
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        for d in ("detect_centernet", "judge_diestate", "pips_facenet"):
            link = folder / d
            if not link.exists():
                link.symlink_to((models / d).resolve())
        shutil.copyfile(lite, folder / lite.name)
        m = json.loads(json.dumps(shipped))
        entry = dict(
            m["models"]["pips"], file=lite.name, sha256=sha256_of(folder / lite.name), version="candidate"
        )
        entry["second_weight"] = weight
        if accept is not None:
            entry["second_accept"] = accept
        m["models"]["pips_second"] = entry
        (folder / "manifest.json").write_text(json.dumps(m, indent=2) + "\n", encoding="utf-8")
        print(folder / "manifest.json")


if __name__ == "__main__":
    main()

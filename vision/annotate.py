"""The evidence frame: every die's box, top-face quad, read face and confidence, and the verdict."""

from __future__ import annotations

import cv2
import numpy as np

from vision.types import ImageArray, Roll, Verdict

GREEN = (60, 200, 60)
AMBER = (0, 170, 255)
RED = (40, 40, 230)
WHITE = (255, 255, 255)
GREY = (150, 150, 150)


def tile_grid(tiles: list[ImageArray], columns: int) -> ImageArray:
    """Tiles of one size in rows of `columns`, the last row filled out in white (a small white image if
    there are none)."""
    if not tiles:
        return np.full((40, 320, 3), 255, np.uint8)
    padded = tiles + [np.full_like(tiles[0], 255)] * (-len(tiles) % columns)
    return np.vstack([np.hstack(padded[i : i + columns]) for i in range(0, len(padded), columns)])


def annotate(
    image_bgr: ImageArray, roll: Roll, *, winner: int | None = None, match_count: int | str | None = None
) -> ImageArray:
    """A copy of the frame with the read drawn on it (green: read, amber: uncertain; banner: verdict, and the
    winner and match count where the caller gives them: the rules engine's, `api.read_document`)."""
    out = image_bgr.copy()
    h, w = out.shape[:2]
    scale = max(0.4, min(w, h) / 900.0)
    thick = max(1, round(scale * 2))
    # Detections left out as no die (a chip stack), a calibration marker or a table mark (print the
    # detector takes for a die): a thin grey frame, so a person sees what was set aside and can check that
    # none of it was a die.
    for aside in roll.set_aside:
        x0, y0, x1, y1 = (round(v) for v in aside.box_xyxy)
        cv2.rectangle(out, (x0, y0), (x1, y1), GREY, max(1, thick // 2))
        cv2.putText(
            out,
            aside.label,
            (x0, y1 + round(14 * scale)),
            cv2.FONT_HERSHEY_SIMPLEX,
            0.45 * scale,
            GREY,
            max(1, thick // 2),
        )
    for i, die in enumerate(roll.dice, start=1):
        colour = AMBER if die.uncertain else GREEN
        x0, y0, x1, y1 = (round(v) for v in die.candidate.box_xyxy)
        cv2.rectangle(out, (x0, y0), (x1, y1), colour, thick)
        quad = np.array(die.candidate.top_quad, np.float32).round().astype(np.int32)
        cv2.polylines(out, [quad], isClosed=True, color=WHITE, thickness=max(1, thick // 2))
        label = f"#{i} {die.face if die.face is not None else '?'} {die.confidence:.2f}"
        if die.pip_count is not None and die.pip_count != die.face:
            label += f" pips:{die.pip_count}"
        (tw, th), _ = cv2.getTextSize(label, cv2.FONT_HERSHEY_SIMPLEX, 0.5 * scale, thick)
        ty = y0 - 4 if y0 - th - 6 >= 0 else y1 + th + 4
        cv2.rectangle(out, (x0, ty - th - 3), (x0 + tw + 4, ty + 3), colour, -1)
        cv2.putText(out, label, (x0 + 2, ty), cv2.FONT_HERSHEY_SIMPLEX, 0.5 * scale, (0, 0, 0), thick)
    # The dice each finding concerns (vision/judge): a second, outer frame in the finding's colour and its
    # reason code under the die, so the evidence shows which dice made the roll invalid, void or unclear.
    for finding in roll.findings:
        colour = {Verdict.VALID: GREEN, Verdict.NO_DECISION: AMBER}.get(finding.verdict, RED)
        for die_id in finding.die_ids:
            if not 1 <= die_id <= len(roll.dice):
                continue
            die = roll.dice[die_id - 1]
            pad = 3 * thick
            x0, y0, x1, y1 = (round(v) for v in die.candidate.box_xyxy)
            cv2.rectangle(out, (x0 - pad, y0 - pad), (x1 + pad, y1 + pad), colour, 2 * thick)
            tag = (
                finding.reason
                if die.tilt_deg is None or not die.cocked
                else f"{finding.reason} {die.tilt_deg:.0f}deg"
            )
            cv2.putText(
                out,
                tag,
                (x0 - pad, y1 + pad + round(14 * scale)),
                cv2.FONT_HERSHEY_SIMPLEX,
                0.45 * scale,
                colour,
                thick,
            )
    banner = {Verdict.VALID: GREEN, Verdict.NO_DECISION: AMBER}.get(roll.verdict, RED)
    text = f"{roll.verdict.value}  faces {list(roll.faces)}"
    if winner is not None:
        text += f"  winner {winner}  match {match_count}"
    bar_h = round(28 * scale) + 6
    cv2.rectangle(out, (0, 0), (w, bar_h), banner, -1)
    cv2.putText(out, text, (6, bar_h - 8), cv2.FONT_HERSHEY_SIMPLEX, 0.6 * scale, (0, 0, 0), thick)
    for j, reason in enumerate(roll.reasons[:6]):
        y = bar_h + round((j + 1) * 20 * scale)
        cv2.putText(out, reason[:120], (6, y), cv2.FONT_HERSHEY_SIMPLEX, 0.45 * scale, AMBER, thick)
    return out

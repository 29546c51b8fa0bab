"""lab.big_dice: its frames put the die where and as big as its table says (the measurement's truth)."""

from __future__ import annotations

import numpy as np

from lab.big_dice import FRAME_HW, place, rendered_closeups


def test_a_scaled_die_is_pasted_in_the_middle_at_the_asked_size() -> None:
    crop = np.full((60, 60, 3), 200, np.uint8)  # a 40 px die with a 10 px margin each side
    frame, box = place(crop, 40.0, 0.5, np.random.default_rng(0))
    h, w = FRAME_HW
    assert frame.shape == (h, w, 3)
    x0, y0, x1, y1 = box[0]
    assert (x1 - x0, y1 - y0) == (0.5 * h, 0.5 * h)
    assert (x0 + x1) / 2 == w / 2 and (y0 + y1) / 2 == h / 2
    assert (frame[int(y0) + 5 : int(y1) - 5, int(x0) + 5 : int(x1) - 5] == 200).all()


def test_a_rendered_close_up_frames_its_die_at_the_asked_share_of_the_frame() -> None:
    (shot,) = rendered_closeups(1, [0.3])
    fraction, frame, face, box = shot
    x0, y0, x1, y1 = box[0]
    h, w = FRAME_HW
    assert fraction == 0.3 and frame.shape == (h, w, 3) and face in range(1, 7)
    # The die's whole box as seen (top face and a little of its sides) spans about 30 % of the short side,
    # centred where the camera looks.
    assert 0.27 * h <= max(x1 - x0, y1 - y0) <= 0.4 * h
    assert abs((x0 + x1) / 2 - w / 2) < 0.05 * w and abs((y0 + y1) / 2 - h / 2) < 0.05 * h

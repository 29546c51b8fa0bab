"""What `train_detector --hard-negatives` mines: the detector's boxes centred off every labelled die."""

from __future__ import annotations

import numpy as np

from models.train_detector import false_alarm_centres

DIE = np.array([[100.0, 100.0, 140.0, 140.0]], np.float32)
NONE = np.zeros((0, 4), np.float32)


def test_a_box_centred_off_every_die_is_a_false_alarm() -> None:
    detected = np.array([[101, 99, 139, 141], [300, 300, 340, 340]], np.float32)
    assert false_alarm_centres(detected, labelled_xyxy=DIE).tolist() == [[320.0, 320.0]]


def test_a_centre_within_a_tenth_of_the_die_around_it_is_the_die() -> None:
    # The labelled box grows 4 px a side (10 % of 40): a centre 3 px outside it is the die, 5 px is not.
    near = np.array([[123, 100, 163, 140]], np.float32)  # centre x 143
    far = np.array([[125, 100, 165, 140]], np.float32)  # centre x 145
    assert false_alarm_centres(near, labelled_xyxy=DIE).shape == (0, 2)
    assert false_alarm_centres(far, labelled_xyxy=DIE).tolist() == [[145.0, 120.0]]


def test_an_image_with_no_detection_or_no_die_is_fine() -> None:
    assert false_alarm_centres(NONE, labelled_xyxy=DIE).shape == (0, 2)  # failed before: reshape(0, -1)
    assert false_alarm_centres(NONE, labelled_xyxy=NONE).shape == (0, 2)
    assert false_alarm_centres(DIE, labelled_xyxy=NONE).tolist() == [[120.0, 120.0]]

"""Detector pre/post-processing: letterbox, peak decoding back to frame pixels, NMS, top-face quad."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from tests.vision.drawn import draw_die, plain
from tests.vision.fakes import FakeDetectorSession
from vision.detect.centernet import DetectorConfig, decode, preprocess, top_quad_of


def test_preprocess_scales_long_side_and_pads_to_32() -> None:
    tensor, lb = preprocess(np.zeros((960, 1280, 3), np.uint8), input_long_px=640)
    assert tensor.shape == (1, 3, 480, 640) and tensor.dtype == np.float32
    assert lb.scale == pytest.approx(0.5)
    tensor, lb = preprocess(np.zeros((100, 333, 3), np.uint8), input_long_px=640)
    assert tensor.shape[2] % 32 == 0 and tensor.shape[3] == 640


@pytest.mark.parametrize("hw", [(960, 1280), (100, 333), (481, 640)])  # no padding; padding; odd size
def test_preprocess_values_are_the_rgb_frame_scaled_to_unit(hw: tuple[int, int]) -> None:
    frame = np.random.default_rng(0).integers(0, 256, (*hw, 3), dtype=np.uint8)
    tensor, lb = preprocess(frame, input_long_px=640)
    h, w = round(hw[0] * lb.scale), round(hw[1] * lb.scale)
    resized = cv2.resize(frame, (w, h), interpolation=cv2.INTER_AREA if lb.scale < 1 else cv2.INTER_LINEAR)
    want = np.zeros((1, 3, *lb.input_hw), np.float32)
    want[0, :, :h, :w] = resized[:, :, ::-1].transpose(2, 0, 1).astype(np.float32) * np.float32(1 / 255)
    assert tensor.flags.c_contiguous
    assert np.array_equal(tensor, want)  # RGB order, [0, 1], zero padding right and bottom


def test_decode_returns_boxes_in_frame_pixels() -> None:
    frame = np.zeros((960, 1280, 3), np.uint8)
    tensor, lb = preprocess(frame, input_long_px=640)
    boxes_in = [(100.0, 100.0, 130.0, 128.0), (300.0, 200.0, 340.0, 240.0)]
    (head,) = FakeDetectorSession(boxes_in).run(None, {"image": tensor})
    boxes, scores = decode(head, letterbox=lb, image_wh=(1280, 960), config=DetectorConfig())
    assert len(boxes) == 2
    got = sorted(boxes.tolist())
    for want, have in zip(sorted(boxes_in), got, strict=True):
        assert np.allclose(np.array(want) * 2, have, atol=0.01)  # frame is twice the net input
    assert np.allclose(scores, 0.9)


def test_decode_below_threshold_is_empty_not_none() -> None:
    head = np.zeros((1, 5, 8, 8), np.float32)
    lb = preprocess(np.zeros((32, 32, 3), np.uint8), input_long_px=32)[1]
    boxes, scores = decode(head, letterbox=lb, image_wh=(32, 32), config=DetectorConfig(input_long_px=32))
    assert boxes.shape == (0, 4) and scores.shape == (0,)


def test_decode_rejects_a_wrong_head() -> None:
    lb = preprocess(np.zeros((32, 32, 3), np.uint8), input_long_px=32)[1]
    with pytest.raises(ValueError, match="detector output"):
        decode(np.zeros((1, 3, 8, 8), np.float32), letterbox=lb, image_wh=(32, 32), config=DetectorConfig())


def test_top_quad_follows_a_turned_die() -> None:
    img = plain(200, 200)
    box = draw_die(img, face=5, centre_xy=(100, 100), edge_px=80, angle_deg=30)
    quad = np.array(top_quad_of(img, np.array(box, np.float32)))
    sides = np.linalg.norm(quad - np.roll(quad, 1, axis=0), axis=1)
    assert np.allclose(sides, 80, atol=5)  # the drawn face's edge, not the larger axis-aligned box
    assert np.allclose(quad.mean(axis=0), (100, 100), atol=2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"input_long_px": 100}, "multiple"),
        ({"score_threshold": 0}, "score_threshold"),
        ({"input_blur_sigma": -0.5}, "input_blur_sigma"),
        ({"input_blur_sigma": float("nan")}, "input_blur_sigma"),
    ],
)
def test_config_is_validated(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DetectorConfig(**kwargs)  # type: ignore[arg-type]


def test_the_input_blur_softens_the_net_s_input_only_when_asked() -> None:
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)  # sensor noise: the blur must smooth it
    plain_t, plain_box = preprocess(img, input_long_px=64)
    same_t, _ = preprocess(img, input_long_px=64, blur_sigma=0.0)
    soft_t, soft_box = preprocess(img, input_long_px=64, blur_sigma=1.0)
    np.testing.assert_array_equal(plain_t, same_t)
    assert soft_t.shape == plain_t.shape and soft_box == plain_box  # the same letterbox: boxes map back alike
    # Smoothed: neighbouring pixels differ less, and the padding (rows 48..63) stays black.
    assert (
        np.abs(np.diff(soft_t[0, :, :48], axis=2)).mean()
        < 0.5 * np.abs(np.diff(plain_t[0, :, :48], axis=2)).mean()
    )
    assert not soft_t[0, :, 48:].any()

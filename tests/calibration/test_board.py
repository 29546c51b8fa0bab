"""Board descriptions (`--board`): parsing, refusals, rendering."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.board import BoardSpec, detect_board
from calibration.errors import BadImageError, BoardSpecError


@pytest.mark.parametrize(
    ("text", "expected", "exception"),
    [
        # ChArUco with the default dictionary
        ("charuco:7x5:40:30", BoardSpec("charuco", 7, 5, 40.0, 30.0, "DICT_5X5_100"), None),
        # explicit dictionary, lower case accepted
        ("charuco:5x4:30:22:dict_4x4_50", BoardSpec("charuco", 5, 4, 30.0, 22.0, "DICT_4X4_50"), None),
        # chessboard: squares, not inner corners
        ("chessboard:10x7:25", BoardSpec("chessboard", 10, 7, 25.0), None),
        # too few fields
        ("charuco:7x5", None, BoardSpecError),
        # size not COLSxROWS
        ("charuco:7-5:40:30", None, BoardSpecError),
        # marker larger than the square
        ("charuco:7x5:40:45", None, BoardSpecError),
        # unknown dictionary
        ("charuco:7x5:40:30:DICT_9X9_7", None, BoardSpecError),
        # unknown kind
        ("circles:7x5:40", None, BoardSpecError),
        # square chessboard: orientation ambiguous
        ("chessboard:8x8:25", None, BoardSpecError),
        # too small
        ("chessboard:2x5:25", None, BoardSpecError),
        # negative square
        ("chessboard:10x7:-25", None, BoardSpecError),
        # chessboard with a marker size
        ("chessboard:10x7:25:20", None, BoardSpecError),
        # not a number
        ("charuco:7x5:forty:30", None, BoardSpecError),
    ],
)
def test_parse(text: str, expected: BoardSpec | None, exception: type[Exception] | None) -> None:
    if exception is not None:
        with pytest.raises(exception):
            BoardSpec.parse(text)
        return
    spec = BoardSpec.parse(text)
    assert spec == expected
    assert BoardSpec.parse(spec.describe()) == spec


@pytest.mark.parametrize("text", ["charuco:5x4:30:22", "chessboard:6x5:20"])
def test_rendered_board_is_found_with_all_corners(text: str) -> None:
    spec = BoardSpec.parse(text)
    img = spec.render(px_per_mm=4.0)
    padded = np.pad(img, 40, constant_values=255)
    view = detect_board(padded, spec)
    assert view is not None
    assert view.count == spec.corner_count
    # Corner k of the board frame is at (mm * px_per_mm - 0.5 + pad) in pixel-centre coordinates.
    expected = view.object_points[:, :2] * 4.0 - 0.5 + 40
    # A plain chessboard may be listed from either end (a half turn of the board); intrinsics do not care.
    error = min(np.abs(view.image_points - expected).max(), np.abs(view.image_points[::-1] - expected).max())
    assert error < 0.2


def test_blank_image_has_no_board() -> None:
    assert detect_board(np.full((200, 300), 128, np.uint8), BoardSpec.parse("charuco:5x4:30:22")) is None


@pytest.mark.parametrize(
    "image",
    [
        None,  # nothing
        np.zeros((100, 100), np.float32),  # not 8-bit
        np.zeros((100, 100, 4), np.uint8),  # four channels
        np.zeros((8, 8), np.uint8),  # too small
        [[0, 1], [2, 3]],  # not an array
    ],
)
def test_bad_images_are_refused(image: object) -> None:
    with pytest.raises(BadImageError):
        detect_board(image, BoardSpec.parse("charuco:5x4:30:22"))

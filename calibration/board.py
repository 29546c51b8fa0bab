"""Calibration boards (chessboard or ChArUco): parsing `--board`, rendering, and finding corners.

Board frame: x to the right along the printed board, y down, origin at the board's outer top-left corner,
millimetres; corners lie on z = 0. This matches `cv2.aruco.CharucoBoard` and the image it generates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.errors import BoardSpecError
from calibration.images import UInt8Image, to_gray

BoardKind = Literal["charuco", "chessboard"]
DEFAULT_DICTIONARY = "DICT_5X5_100"


@dataclass(frozen=True)
class BoardSpec:
    """A printed calibration board: kind, squares across (x) and down (y), square and marker size in mm."""

    kind: BoardKind
    squares_x: int
    squares_y: int
    square_mm: float
    marker_mm: float = 0.0
    dictionary: str = DEFAULT_DICTIONARY

    def __post_init__(self) -> None:
        if self.kind not in ("charuco", "chessboard"):
            raise BoardSpecError(f"board kind must be 'charuco' or 'chessboard', got {self.kind!r}")
        if self.squares_x < 3 or self.squares_y < 3:
            raise BoardSpecError(f"a board needs at least 3x3 squares, got {self.squares_x}x{self.squares_y}")
        if self.squares_x == self.squares_y and self.kind == "chessboard":
            raise BoardSpecError("a chessboard needs different square counts across and down (orientation)")
        if not self.square_mm > 0:
            raise BoardSpecError(f"square size must be positive, got {self.square_mm} mm")
        if self.kind == "charuco":
            if not 0 < self.marker_mm < self.square_mm:
                raise BoardSpecError(
                    f"ChArUco marker size must be between 0 and the square size ({self.square_mm} mm), "
                    f"got {self.marker_mm} mm"
                )
            if not hasattr(cv2.aruco, self.dictionary) or not self.dictionary.startswith("DICT_"):
                raise BoardSpecError(f"unknown ArUco dictionary {self.dictionary!r} (e.g. DICT_5X5_100)")

    @classmethod
    def parse(cls, text: str) -> BoardSpec:
        """Parse `charuco:COLSxROWS:SQUARE_MM:MARKER_MM[:DICT]` or `chessboard:COLSxROWS:SQUARE_MM`.

        COLS and ROWS count squares (a chessboard of 10x7 squares has 9x6 inner corners).
        """
        parts = text.strip().split(":")
        usage = "expected charuco:COLSxROWS:SQUARE_MM:MARKER_MM[:DICT] or chessboard:COLSxROWS:SQUARE_MM"
        if len(parts) < 3:
            raise BoardSpecError(f"cannot parse board {text!r}: {usage}")
        kind = parts[0].lower()
        try:
            cols_s, rows_s = parts[1].lower().split("x")
            cols, rows = int(cols_s), int(rows_s)
            square = float(parts[2])
            if kind == "charuco":
                if len(parts) not in (4, 5):
                    raise BoardSpecError(f"cannot parse board {text!r}: {usage}")
                marker = float(parts[3])
                dictionary = parts[4].upper() if len(parts) == 5 else DEFAULT_DICTIONARY
                return cls("charuco", cols, rows, square, marker, dictionary)
            if kind == "chessboard":
                if len(parts) != 3:
                    raise BoardSpecError(f"cannot parse board {text!r}: {usage}")
                return cls("chessboard", cols, rows, square)
        except ValueError as exc:
            if isinstance(exc, BoardSpecError):
                raise
            raise BoardSpecError(f"cannot parse board {text!r}: {usage} ({exc})") from exc
        raise BoardSpecError(f"cannot parse board {text!r}: unknown kind {parts[0]!r}; {usage}")

    def describe(self) -> str:
        """The canonical `--board` string for this board."""
        base = f"{self.kind}:{self.squares_x}x{self.squares_y}:{self.square_mm:g}"
        if self.kind == "charuco":
            return f"{base}:{self.marker_mm:g}:{self.dictionary}"
        return base

    @property
    def size_mm(self) -> tuple[float, float]:
        """Printed size (width, height) in mm."""
        return (self.squares_x * self.square_mm, self.squares_y * self.square_mm)

    @property
    def corner_count(self) -> int:
        """Number of inner (chessboard) corners."""
        return (self.squares_x - 1) * (self.squares_y - 1)

    def charuco_board(self) -> cv2.aruco.CharucoBoard:
        """The OpenCV board object (ChArUco boards only)."""
        if self.kind != "charuco":
            raise BoardSpecError("not a ChArUco board")
        dictionary = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, self.dictionary))
        return cv2.aruco.CharucoBoard(
            (self.squares_x, self.squares_y), self.square_mm, self.marker_mm, dictionary
        )

    def render(self, *, px_per_mm: float) -> UInt8Image:
        """The printable board as a grey image, pixel (0, 0)'s outer corner at the board origin."""
        w_px = round(self.size_mm[0] * px_per_mm)
        h_px = round(self.size_mm[1] * px_per_mm)
        if self.kind == "charuco":
            img = self.charuco_board().generateImage((w_px, h_px), marginSize=0, borderBits=1)
            return np.asarray(img, dtype=np.uint8)
        xs = np.floor((np.arange(w_px) + 0.5) / px_per_mm / self.square_mm).astype(np.int64)
        ys = np.floor((np.arange(h_px) + 0.5) / px_per_mm / self.square_mm).astype(np.int64)
        black = (xs[None, :] + ys[:, None]) % 2 == 0
        return np.where(black, 0, 255).astype(np.uint8)


@dataclass(frozen=True)
class BoardView:
    """Board corners found in one image: (n, 3) board-frame mm and (n, 2) pixel positions, float32."""

    object_points: NDArray[np.float32]
    image_points: NDArray[np.float32]

    def __post_init__(self) -> None:
        if self.object_points.shape[0] != self.image_points.shape[0]:
            raise ValueError("object and image point counts differ")

    @property
    def count(self) -> int:
        """Number of corners."""
        return int(self.image_points.shape[0])


MIN_CHARUCO_CORNERS = 8


def detect_board(image: object, spec: BoardSpec) -> BoardView | None:
    """Find the board's inner corners with sub-pixel accuracy; None when the board is not seen.

    A plain chessboard's corners may come back listed from either end (a half turn of the board): that is
    still a rigid motion of the board, which is all an intrinsics calibration needs.
    """
    gray = to_gray(image)
    if spec.kind == "charuco":
        board = spec.charuco_board()
        params = cv2.aruco.CharucoParameters()
        detector = cv2.aruco.CharucoDetector(board, params)
        corners, ids, _marker_corners, _marker_ids = detector.detectBoard(gray)
        if ids is None or corners is None or len(ids) < MIN_CHARUCO_CORNERS:
            return None
        # The stubs want a sequence of corners; OpenCV accepts the (n, 1, 2) array detectBoard returns.
        obj, img = board.matchImagePoints(corners, ids)  # type: ignore[call-overload]
        return BoardView(
            object_points=np.asarray(obj, dtype=np.float32).reshape(-1, 3),
            image_points=np.asarray(img, dtype=np.float32).reshape(-1, 2),
        )
    pattern = (spec.squares_x - 1, spec.squares_y - 1)
    found, corners = cv2.findChessboardCornersSB(gray, pattern, flags=cv2.CALIB_CB_ACCURACY)
    if not found or corners is None:
        return None
    gx, gy = np.meshgrid(np.arange(1, pattern[0] + 1), np.arange(1, pattern[1] + 1))
    obj = np.stack([gx.ravel(), gy.ravel(), np.zeros(gx.size)], axis=1) * np.array(
        [spec.square_mm, spec.square_mm, 1.0]
    )
    return BoardView(
        object_points=obj.astype(np.float32),
        image_points=np.asarray(corners, dtype=np.float32).reshape(-1, 2),
    )

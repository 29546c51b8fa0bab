"""The throw box and its labelled layout boxes (58 Pa. Code 593.1(b)(4)), in millimetres.

593.1(b)(4): the throw box layout has an area for the dice labelled "Ace" through "Six" (and "Two"),
with the "Ace" box farthest to the dealer's left and the "Two" box farthest to the dealer's right.
Coordinates follow `calibration.camera`: x from the dealer's left to right, y away from the dealer,
origin at the inner corner on the dealer's side, dealer's left. Dimensions are table settings; the
defaults are a plausible throw box, not a regulation value (the regulation fixes no size).
"""

from __future__ import annotations

from dataclasses import dataclass

# Layout boxes from the dealer's left to the dealer's right (593.1(b)(4)).
LAYOUT_ORDER: tuple[int, ...] = (1, 6, 5, 4, 3, 2)
LAYOUT_LABELS: dict[int, str] = {1: "Ace", 6: "Six", 5: "Five", 4: "Four", 3: "Three", 2: "Two"}

DIE_EDGE_MM = 19.0  # casino dice, 3/4 inch


@dataclass(frozen=True)
class RectMM:
    """Axis-aligned rectangle on the felt plane, in mm."""

    x0: float
    y0: float
    x1: float
    y1: float

    def __post_init__(self) -> None:
        if not (self.x1 > self.x0 and self.y1 > self.y0):
            raise ValueError(f"empty rectangle {self}")

    def contains(self, x_mm: float, y_mm: float) -> bool:
        """True when the point lies inside (borders included)."""
        return self.x0 <= x_mm <= self.x1 and self.y0 <= y_mm <= self.y1

    @property
    def corners(self) -> tuple[tuple[float, float], ...]:
        """Corners in order: (x0,y0), (x1,y0), (x1,y1), (x0,y1)."""
        return ((self.x0, self.y0), (self.x1, self.y0), (self.x1, self.y1), (self.x0, self.y1))

    @property
    def centre(self) -> tuple[float, float]:
        """Centre point."""
        return ((self.x0 + self.x1) / 2.0, (self.y0 + self.y1) / 2.0)


@dataclass(frozen=True)
class ThrowBoxLayout:
    """Inner size of the throw box, its wall height, and the strip of labelled layout boxes."""

    width_mm: float = 600.0
    depth_mm: float = 450.0
    wall_height_mm: float = 60.0
    strip_depth_mm: float = 70.0  # the layout strip along the dealer's side
    strip_margin_mm: float = 15.0  # gap between layout boxes and from the walls
    die_edge_mm: float = DIE_EDGE_MM

    def __post_init__(self) -> None:
        if self.width_mm <= 0 or self.depth_mm <= 0 or self.wall_height_mm <= 0:
            raise ValueError("throw box dimensions must be positive")
        if self.strip_depth_mm + 2 * self.strip_margin_mm >= self.depth_mm:
            raise ValueError("layout strip does not fit in the throw box")

    @property
    def box(self) -> RectMM:
        """The whole inner felt area of the throw box."""
        return RectMM(0.0, 0.0, self.width_mm, self.depth_mm)

    @property
    def throw_area(self) -> RectMM:
        """Where thrown dice land: the felt beyond the layout strip."""
        y0 = self.strip_margin_mm + self.strip_depth_mm + self.strip_margin_mm
        return RectMM(0.0, y0, self.width_mm, self.depth_mm)

    def layout_boxes(self) -> dict[int, RectMM]:
        """The six labelled boxes keyed by face (1 = Ace), Ace at the dealer's left."""
        n = len(LAYOUT_ORDER)
        m = self.strip_margin_mm
        w = (self.width_mm - (n + 1) * m) / n
        y0, y1 = m, m + self.strip_depth_mm
        return {
            face: RectMM(m + i * (w + m), y0, m + i * (w + m) + w, y1) for i, face in enumerate(LAYOUT_ORDER)
        }

    def layout_box_at(self, x_mm: float, y_mm: float) -> int | None:
        """The face of the layout box containing the point, or None."""
        for face, rect in self.layout_boxes().items():
            if rect.contains(x_mm, y_mm):
                return face
        return None

"""Per-table geometry and appearance: intrinsics, throw-box homography, layout boxes, felt."""

"""Detection stage: one `DieCandidate` per die in a frame (box, top-face quadrilateral, score)."""

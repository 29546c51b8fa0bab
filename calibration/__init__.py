"""Per-table geometry and appearance: intrinsics, throw-box homography, layout boxes, felt.

A module per idea:

    camera.py     pinhole camera model and pose (shared with the generator)
    layout.py     the throw box and its labelled layout boxes, 593.1(b)(4) (shared with the generator)
    board.py      calibration boards (`--board`), rendering and corner detection
    intrinsics.py intrinsics and distortion from board views, refused when untrustworthy
    markers.py    the ArUco markers in the box corners
    plane.py      pixels <-> felt millimetres (homography) and the camera pose
    table.py      `TableCalibration` (everything about one table) and `calibrate_table`
    die_scale.py  expected die size in pixels across the box, checked against a measured die
    felt.py       the empty-felt colour model and the per-pixel "not felt" score
    rectify.py    the top-down millimetre view
    reference.py  the reference picture for the marker-less camera check
    moved.py      has the camera moved since calibration?
    overlay.py    drawing a calibration over a frame
    store.py      versioned, checksummed JSON files per table
    errors.py     the exception tree
"""

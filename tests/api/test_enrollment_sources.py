"""Where enrollment's labelled dice come from (api/enrollment_sources.py): archives and their limits, die
photos by face, YOLO-labelled frames, and which dice of a confirmed roll have a certain face."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from api.enrollment_sources import (
    ArchiveError,
    assign_confirmed,
    check_enough,
    dice_per_face,
    folder_files,
    frame_examples,
    photo_examples,
    zip_files,
)
from tests.vision.enroll_data import fake_face_model, frames_zip, photo, photos_zip, write_frames
from vision.pips.enroll import EnrollDataError, enroll_table


def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


# --- the confirmed-roll rule: only dice whose face is certain ----------------------------------------------
@pytest.mark.parametrize(
    ("read", "confirmed", "labels", "skipped", "roll_skipped"),
    [
        # every die sure, and the dealer agrees (in another order): all used
        ([3, 5, 5, 1], [5, 1, 5, 3], {0: 3, 1: 5, 2: 5, 3: 1}, [], None),
        # one unsure die: the one face left is its face
        ([3, None, 5, 1], [5, 1, 6, 3], {0: 3, 1: 6, 2: 5, 3: 1}, [], None),
        # three unsure dice, the faces left all 6: one way only
        ([None, 2, None, None], [6, 6, 2, 6], {0: 6, 1: 2, 2: 6, 3: 6}, [], None),
        # two unsure dice and faces 4 and 6 left: two ways; the sure dice are used, the unsure skipped
        ([None, 2, None, 1], [6, 4, 2, 1], {1: 2, 3: 1}, [0, 2], None),
        # every die unsure and the faces differ: nothing is certain
        ([None, None], [1, 2], {}, [0, 1], None),
        # a sure face the dealer did not key: the two disagree, the roll is skipped
        ([3, None, 5, 5], [5, 1, 6, 3], {}, [], "disagree"),
        # another number of dice (an Extra Roll keys the rethrown dice only): skipped
        ([3, 5, 5], [5, 1, 6, 3], {}, [], "the read has 3 dice"),
        # a face that is no face: skipped
        ([3, 5], [5, 7], {}, [], "not all 1 .. 6"),
    ],
    ids=[
        "all-sure",
        "one-unsure",
        "all-equal-left",
        "ambiguous",
        "all-unsure",
        "disagree",
        "count",
        "bad-face",
    ],
)
def test_assign_confirmed(
    read: list[int | None],
    confirmed: list[int],
    labels: dict[int, int],
    skipped: list[int],
    roll_skipped: str | None,
) -> None:
    out = assign_confirmed(read, confirmed)
    assert out.labels == labels
    assert sorted(out.skipped) == skipped
    if roll_skipped is None:
        assert out.roll_skipped is None
    else:
        assert out.roll_skipped is not None and roll_skipped in out.roll_skipped
    if skipped:
        assert all("ways" in why for why in out.skipped.values())


# --- archives -------------------------------------------------------------------------------------------
def test_zip_refusals() -> None:
    with pytest.raises(ArchiveError, match="not a zip"):
        zip_files(b"PK\x03\x04 but no archive after all")
    with pytest.raises(ArchiveError, match="entries"):
        zip_files(_zip({f"1/{k}.txt": b"" for k in range(11)}), max_files=10)
    bomb = _zip({"1/zeros.jpg": bytes(20 * 1024 * 1024)})
    assert len(bomb) < 100_000
    with pytest.raises(ArchiveError, match="zip bomb"):
        zip_files(bomb)
    with pytest.raises(ArchiveError, match="unpacks to"):
        zip_files(_zip({"a": bytes(2000), "b": bytes(2000)}), max_unpacked_bytes=3000)
    files = zip_files(_zip({"1/a.jpg": b"x", "__MACOSX/1/._a.jpg": b"y", "1/.DS_Store": b"z", "2/": b""}))
    assert files.names == ("1/a.jpg",) and files.read("1/a.jpg") == b"x"


def test_photos_by_face_from_a_zip() -> None:
    examples = photo_examples(zip_files(photos_zip({f: 12 for f in range(1, 7)})), limit=60)
    assert len(examples) == 60 and dice_per_face(examples) == {str(f): 10 for f in range(1, 7)}
    assert all(crop.shape == (64, 64, 3) for crop, _ in examples)
    # the crop is the die's own grey: the face is not mixed up with another
    assert all(abs(int(crop[32, 32, 0]) - int(photo(face)[0, 0, 0])) <= 3 for crop, face in examples)


@pytest.mark.parametrize(
    ("entries", "match"),
    [
        ({"dice/seven/a.jpg": b""}, "folders named by their face"),
        ({"a.jpg": b""}, "no folder"),
        ({"x/y/1/a.jpg": b""}, "folders named by their face"),
        ({"1/notes.txt": b""}, "not a die photo"),
        ({"1/a.jpg": b"not an image"}, "not a readable image"),
    ],
    ids=["wrong-folder", "no-folder", "too-deep", "not-a-photo", "unreadable"],
)
def test_photo_layout_refused(entries: dict[str, bytes], match: str) -> None:
    with pytest.raises(EnrollDataError, match=match):
        photo_examples(zip_files(_zip(entries)))


def test_too_few_per_face_refused() -> None:
    examples = [
        (np.zeros((64, 64, 3), np.uint8), f) for f in (1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6)
    ]
    with pytest.raises(EnrollDataError, match="short: 6: 2"):
        check_enough(examples)
    check_enough([*examples, (examples[0][0], 6)])


@pytest.mark.parametrize("layout", ["images", "flat"])
def test_yolo_frames_from_a_zip(layout: str) -> None:
    examples, left = frame_examples(zip_files(frames_zip(layout=layout)))
    assert dice_per_face(examples) == {"1": 4, "2": 4, "3": 4, "4": 4, "5": 5, "6": 5}
    assert left == {"frames_without_label": 0, "labels_without_frame": 0}
    from tests.vision.enroll_data import level

    assert all(abs(int(crop[32, 32, 0]) - level(face)) <= 3 for crop, face in examples)


def test_yolo_frames_from_a_folder_and_their_refusals(tmp_path: Path) -> None:
    folder = write_frames(tmp_path / "frames")
    (folder / "unlabelled.png").write_bytes((folder / "f0.png").read_bytes())
    examples, left = frame_examples(folder_files(folder), limit=18)
    assert len(examples) == 18 and set(dice_per_face(examples).values()) == {3}
    assert left["frames_without_label"] == 1
    (folder / "f1.txt").write_text("9 0.5 0.5 0.1 0.1\n")
    with pytest.raises(EnrollDataError, match=r"f1\.txt: not a YOLO label file"):
        frame_examples(folder_files(folder))
    with pytest.raises(EnrollDataError, match="none of the 1 frames"):
        frame_examples(zip_files(_zip({"a.jpg": b""})))


def test_progress_is_told_and_reaches_one(tmp_path: Path) -> None:
    told: list[float] = []
    model = fake_face_model(tmp_path / "m")
    result = enroll_table(model, "t", [(photo(f)[:64, :64], f) for f in range(1, 7)], progress=told.append)
    assert told[-1] == 1.0 and told == sorted(told) and len(told) > 3
    assert result.enrollment.fitted_at is not None and result.enrollment.fitted_at.endswith("+00:00")


# The service reads YOLO labels without the generator's package (api may not import datasets): its reading
# must stay the loaders' own, box for box, and refuse what they refuse.
@pytest.mark.parametrize(
    "text",
    [
        "0 0.5 0.5 0.1 0.2\n5 0.25 0.75 0.05 0.05\n",  # two dice, faces 1 and 6
        "\n2 0.0 0.0 0.2 0.2\n\n",  # blank lines; a box cut at the frame's corner
        "3 0.99 0.99 0.1 0.1",  # cut at the far corner, no newline at the end
        "",  # no dice
        "1 0.5 0.5 0.1\n",  # four fields
        "x 0.5 0.5 0.1 0.1\n",  # not a number
        "6 0.5 0.5 0.1 0.1\n",  # class 6: no face 7
    ],
    ids=["two", "corner", "far-corner", "empty", "four-fields", "not-a-number", "class-6"],
)
def test_yolo_labels_read_as_the_loaders_read_them(text: str) -> None:
    from api.enrollment_sources import yolo_dice
    from datasets.loaders import DatasetError, parse_yolo

    try:
        expected = [
            (d.box_xyxy, d.face)
            for d in parse_yolo(text, resolution_wh=(320, 240), box_kind="die", where="f.txt")
        ]
    except DatasetError as exc:
        with pytest.raises(EnrollDataError) as refused:
            yolo_dice(text, resolution_wh=(320, 240), where="f.txt")
        assert str(refused.value) == f"f.txt: not a YOLO label file ({exc})"
        return
    assert yolo_dice(text, resolution_wh=(320, 240), where="f.txt") == expected

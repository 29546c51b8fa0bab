"""Where a table's labelled dice come from, for enrollment (the fit: `vision.pips.enroll`): the one
implementation that `throwbox enroll` and `POST /v1/tables/{id}/enrollment` share.

Three sources, each giving (die crop, face) examples cut as the reader cuts a die (`crop_die`):

- **photos**: one die per photo, laid out `DIR/<face>/*.jpg` (faces 1..6), in a folder or a zip archive
  (which may wrap them in one top folder);
- **frames**: whole frames with YOLO labels (`class xc yc w h`, normalised; class k = face k+1, the format of
  the real sets), each image beside a `.txt` of the same stem (or under `images/` with its label under
  `labels/` or `labels_yolo/`), in a folder or a zip;
- **confirmed rolls**: a roll the dealer keyed (the confirmed faces) with the read it came from (the die
  boxes and the reader's faces) and its frame. Only dice whose face is certain are used (`assign_confirmed`).
  Reading the service's database is the service's part (`api/enrollment.py`); the rule is here.

An archive is read in memory, never unpacked to disk (so no name in it can point outside a folder), and is
refused before anything is decoded when it is not a zip, holds more than `MAX_ARCHIVE_FILES` entries, would
unpack to more than `MAX_UNPACKED_BYTES`, or packs one entry more than `MAX_PACK_RATIO` times (a zip bomb).
`zipfile` from the standard library reads it; each entry is read with a bound, as a declared size can lie.

Every problem is an `EnrollDataError` (`ArchiveError` for the archive itself) naming the file and the fix.
"""

from __future__ import annotations

import io
import math
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal, TypeVar

import numpy as np
from numpy.typing import NDArray

from vision.pips.crops import crop_die
from vision.pips.enroll import EnrollDataError, photo_crop

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")
MAX_DICE = 60  # labelled dice used at most (balanced over the faces)
MAX_ARCHIVE_FILES = 2_000
MAX_UNPACKED_BYTES = 256 * 1024 * 1024
MAX_ENTRY_BYTES = 40 * 1024 * 1024
MAX_PACK_RATIO = 100  # a JPEG packs about 1:1 and a label file a few times; a bomb packs a thousand
MIN_DICE_PER_FACE = 3
FACES = tuple(range(1, 7))

Example = tuple[NDArray[np.uint8], int]
T = TypeVar("T")


class ArchiveError(EnrollDataError):
    """The upload is not a zip, or is too large unpacked, holds too many files, or is a zip bomb."""


@dataclass(frozen=True)
class FileSet:
    """Named files (POSIX relative paths) and how to read one: a folder on disk or an archive in memory."""

    names: tuple[str, ...]
    read: Callable[[str], bytes]


def folder_files(folder: Path) -> FileSet:
    """The files under `folder`, read from disk when asked."""
    if not folder.is_dir():
        raise EnrollDataError(f"not a folder: {folder}")
    paths = {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file()}
    return FileSet(
        names=tuple(n for n in paths if not _hidden(n)), read=lambda name: paths[name].read_bytes()
    )


def zip_files(
    data: bytes,
    *,
    max_files: int = MAX_ARCHIVE_FILES,
    max_unpacked_bytes: int = MAX_UNPACKED_BYTES,
    max_entry_bytes: int = MAX_ENTRY_BYTES,
    max_ratio: float = MAX_PACK_RATIO,
) -> FileSet:
    """The files of a zip archive held in memory, checked against the limits before any is read."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        raise ArchiveError(f"the archive is not a zip file ({exc})") from exc
    if len(infos) > max_files:
        raise ArchiveError(f"the archive holds {len(infos)} entries; at most {max_files} are taken")
    files = {i.filename: i for i in infos if not i.is_dir() and not _hidden(i.filename)}
    total = sum(i.file_size for i in infos)
    if total > max_unpacked_bytes:
        raise ArchiveError(f"the archive unpacks to {total} bytes; at most {max_unpacked_bytes} are taken")
    for info in files.values():
        if info.file_size > max_entry_bytes:
            raise ArchiveError(
                f"{info.filename}: {info.file_size} bytes; one file may have {max_entry_bytes}"
            )
        if info.file_size > 1024 * 1024 and info.file_size > max_ratio * max(info.compress_size, 1):
            raise ArchiveError(
                f"{info.filename}: packed {info.file_size // max(info.compress_size, 1)} to 1 "
                f"(at most {max_ratio:g} to 1 is taken): a zip bomb?"
            )
        if info.flag_bits & 0x1:
            raise ArchiveError(f"{info.filename}: encrypted; send the archive without a password")

    def read(name: str) -> bytes:
        info = files[name]
        try:
            with archive.open(info) as handle:
                out = handle.read(info.file_size + 1)
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, EOFError) as exc:
            raise ArchiveError(f"{name}: cannot be unpacked ({exc})") from exc
        if len(out) > info.file_size:
            raise ArchiveError(f"{name}: unpacks to more than its declared {info.file_size} bytes")
        return out

    return FileSet(names=tuple(files), read=read)


def _hidden(name: str) -> bool:
    """A file a packer adds beside the user's (macOS's __MACOSX, dot files such as .DS_Store)."""
    return any(part.startswith(".") or part == "__MACOSX" for part in PurePosixPath(name).parts)


def _decode(data: bytes, name: str) -> NDArray[np.uint8]:
    import cv2

    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise EnrollDataError(f"{name}: not a readable image")
    return np.asarray(image, np.uint8)


def _is_image(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in IMAGE_SUFFIXES


def balanced(by_face: Mapping[int, Sequence[T]], *, limit: int = MAX_DICE) -> list[T]:
    """At most `limit` items, taken in turn from each face in order (so a cut keeps the faces balanced)."""
    out: list[T] = []
    k = 0
    while len(out) < limit and any(k < len(v) for v in by_face.values()):
        for face in FACES:
            items = by_face.get(face, ())
            if k < len(items) and len(out) < limit:
                out.append(items[k])
        k += 1
    return out


def dice_per_face(examples: Iterable[Example]) -> dict[str, int]:
    """How many examples of each face, "1".."6"."""
    counts = Counter(face for _, face in examples)
    return {str(face): counts.get(face, 0) for face in FACES}


def check_enough(examples: Sequence[Example], *, min_per_face: int = MIN_DICE_PER_FACE) -> None:
    """Refuse (EnrollDataError) unless every face has at least `min_per_face` labelled dice."""
    counts = dice_per_face(examples)
    short = [f"{face}: {n}" for face, n in counts.items() if n < min_per_face]
    if short:
        raise EnrollDataError(
            f"too few labelled dice: at least {min_per_face} of each face are needed ({MAX_DICE} at most are "
            f"used); short: {', '.join(short)} (found {len(examples)} in all)"
        )


def photo_examples(files: FileSet, *, limit: int = MAX_DICE) -> list[Example]:
    """(crop, face) of each die photo laid out `<face>/<photo>` (faces 1..6), under at most one top folder."""
    by_name: dict[int, list[str]] = {face: [] for face in FACES}
    for name in sorted(files.names):
        parts = PurePosixPath(name).parts
        if not _is_image(name):
            raise EnrollDataError(f"{name}: not a die photo ({', '.join(IMAGE_SUFFIXES)})")
        folder = parts[-2] if len(parts) >= 2 else ""
        if folder not in {str(f) for f in FACES} or len(parts) > 3:
            raise EnrollDataError(
                f"{name}: die photos go in folders named by their face, 1 .. 6 (<face>/<photo>, or "
                f"<top folder>/<face>/<photo>); this one is in {folder or 'no folder'!r}"
            )
        by_name[int(folder)].append(name)
    if not any(by_name.values()):
        raise EnrollDataError("no die photos: lay them out as <face>/<photo>, faces 1 .. 6")
    names = balanced({face: [(n, face) for n in v] for face, v in by_name.items()}, limit=limit)
    return [(photo_crop(_decode(files.read(name), name)), face) for name, face in names]


def _label_for(image: str, labels: Mapping[str, str]) -> str | None:
    """The label file of an image: same folder and stem, or images/ -> labels/ or labels_yolo/."""
    path = PurePosixPath(image)
    candidates = [path.with_suffix(".txt")]
    parts = list(path.parts)
    for i, part in enumerate(parts[:-1]):
        if part == "images":
            for other in ("labels", "labels_yolo"):
                swapped = [*parts[:i], other, *parts[i + 1 :]]
                candidates.append(PurePosixPath(*swapped).with_suffix(".txt"))
    for candidate in candidates:
        if candidate.as_posix() in labels:
            return labels[candidate.as_posix()]
    return None


def yolo_dice(
    text: str, *, resolution_wh: tuple[int, int], where: str
) -> list[tuple[tuple[float, float, float, float], int]]:
    """(box_xyxy in pixels, face) of each YOLO line `class xc yc w h` (normalised; class k = face k+1).

    The real sets' label format, read as `datasets.loaders.parse_yolo` reads it (a test holds the two
    equal): the service reads uploads without the generator's package, which it may not import.
    """

    def refused(n: int, why: str) -> EnrollDataError:
        return EnrollDataError(f"{where}: not a YOLO label file ({where}:{n}: {why})")

    w, h = resolution_wh
    dice = []
    for n, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 5:
            raise refused(n, f"expected 5 fields, got {len(parts)}")
        try:
            cls = int(parts[0])
            xc, yc, bw, bh = (float(v) for v in parts[1:])
        except ValueError as exc:
            raise refused(n, f"not a YOLO label line: {line!r}") from exc
        if cls not in range(6):
            raise refused(n, f"class must be 0..5 (faces 1..6), got {cls}")
        box = (
            max(0.0, (xc - bw / 2) * w),
            max(0.0, (yc - bh / 2) * h),
            min(float(w), (xc + bw / 2) * w),
            min(float(h), (yc + bh / 2) * h),
        )
        dice.append((box, cls + 1))
    return dice


def frame_examples(files: FileSet, *, limit: int = MAX_DICE) -> tuple[list[Example], dict[str, int]]:
    """(crop, face) of the labelled dice of YOLO-labelled frames, balanced over faces; and what was left
    out (`frames_without_label`, `labels_without_frame`)."""
    images = sorted(n for n in files.names if _is_image(n))
    labels = {
        n: n for n in files.names if n.lower().endswith(".txt") and PurePosixPath(n).name != "classes.txt"
    }
    if not images:
        raise EnrollDataError("no frames: send images with YOLO labels (a .txt of the same name beside each)")
    per_face_cap = math.ceil(limit / len(FACES))
    by_face: dict[int, list[Example]] = {face: [] for face in FACES}
    unlabelled = 0
    used_labels: set[str] = set()
    for name in images:
        label = _label_for(name, labels)
        if label is None:
            unlabelled += 1
            continue
        used_labels.add(label)
        if all(len(v) >= per_face_cap for v in by_face.values()):
            continue  # enough of every face: the rest is not decoded
        image = _decode(files.read(name), name)
        h, w = image.shape[:2]
        try:
            text = files.read(label).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise EnrollDataError(f"{label}: not a YOLO label file ({exc})") from exc
        for box_xyxy, face in yolo_dice(text, resolution_wh=(w, h), where=label):
            x0, y0, x1, y1 = box_xyxy
            if x1 - x0 < 2 or y1 - y0 < 2 or len(by_face[face]) >= per_face_cap:
                continue
            by_face[face].append((crop_die(image, box_xyxy), face))
    if unlabelled == len(images):
        raise EnrollDataError(
            f"none of the {len(images)} frames has a YOLO label (<name>.txt beside it, or under labels/)"
        )
    left = {"frames_without_label": unlabelled, "labels_without_frame": len(set(labels) - used_labels)}
    return balanced(by_face, limit=limit), left


# --- confirmed rolls: which dice's faces are certain -----------------------------------------------------


@dataclass(frozen=True)
class Assignment:
    """The faces a confirmed roll gives its read's dice: `labels` (die index -> face) for the dice whose face
    is certain; `skipped` (die index -> why) for the rest; `roll_skipped`: why no die of it was used."""

    labels: dict[int, int]
    skipped: dict[int, str]
    roll_skipped: str | None = None
    how: Literal["sure", "one_unsure", "all_equal", "ambiguous", "none"] = "none"


def assign_confirmed(read_faces: Sequence[int | None], confirmed: Sequence[int]) -> Assignment:
    """Give the confirmed faces (the dealer's, in any order) to the read's dice (a face, or None where the
    reader was unsure), using only what is certain.

    The read's sure faces must all be among the confirmed ones (as a multiset), or the roll is skipped: the
    two disagree. The confirmed faces left over go to the unsure dice when they can go in one way only: one
    unsure die, or all the faces left equal. Otherwise the sure dice are used and the unsure skipped.
    A read with another number of dice than the confirmed roll is skipped (an Extra Roll keys only the
    rethrown dice; a die missed or one too many).
    """
    if len(read_faces) != len(confirmed):
        return Assignment(
            {}, {}, f"the read has {len(read_faces)} dice, the confirmed roll {len(confirmed)} faces"
        )
    if any(f not in FACES for f in confirmed):
        return Assignment({}, {}, f"confirmed faces {list(confirmed)} are not all 1 .. 6")
    left = Counter(confirmed)
    sure = {i: f for i, f in enumerate(read_faces) if f is not None}
    read_sure = Counter(sure.values())
    extra = read_sure - left
    if extra:
        return Assignment(
            {},
            {},
            f"the reader's sure faces {sorted(read_sure.elements())} disagree with the confirmed "
            f"{sorted(confirmed)} (read {sorted(extra.elements())} beyond them)",
        )
    left -= read_sure
    unsure = [i for i, f in enumerate(read_faces) if f is None]
    if not unsure:
        return Assignment(dict(sure), {}, how="sure")
    remaining = sorted(left.elements())
    if len(unsure) == 1 or len(set(remaining)) == 1:
        given = dict(zip(unsure, remaining, strict=True))
        return Assignment({**sure, **given}, {}, how="one_unsure" if len(unsure) == 1 else "all_equal")
    ways = math.factorial(len(remaining)) // math.prod(math.factorial(n) for n in Counter(remaining).values())
    why = f"{len(unsure)} unsure dice and faces {remaining} left: {ways} ways to give them"
    return Assignment(dict(sure), {i: why for i in unsure}, how="ambiguous")

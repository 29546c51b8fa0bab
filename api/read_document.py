"""The reader's JSON contract (docs/architecture.md, "The read result as JSON"): a `vision.types.Roll` as
the document that `throwbox read --json`, `POST /v1/reads` and the live loop's stored reads carry.

vision/ reads dice and knows nothing of the game (it imports no `rules/`); the Pip Street winner and the Like
Kind count of a valid roll are the rules engine's (`rules.hrd.dice`), added here at the api edge, in the
document's place for them (after "faces") and on the annotated evidence frame's banner.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rules.hrd.dice import NO_MATCH, DiceCount, classify, face_counts, winner_of_counts
from vision.types import ImageArray, Roll, Verdict


def classify_faces(faces: Sequence[int]) -> tuple[int | None, int | str | None]:
    """Pip Street winner and Like Kind count of a roll (rules.hrd.dice); "no match" for 6 distinct dice."""
    faces = tuple(faces)
    if not faces:
        return None, None
    if len(faces) in (6, 10):
        rc = classify(faces, dice=DiceCount(len(faces)))
        if len(faces) == 6 and rc.match_count == NO_MATCH:
            return rc.winner, "no match"
        return rc.winner, rc.match_count
    # Any other number of dice (a photo read without a game): same rule, most frequent face, ties by rank.
    counts = face_counts(faces)
    return winner_of_counts(counts), max(counts)


def winner_and_count(roll: Roll) -> tuple[int | None, int | str | None]:
    """The winner and match count of a valid roll's faces; (None, None) for any other verdict."""
    return classify_faces(roll.faces) if roll.verdict is Verdict.VALID else (None, None)


def read_document(roll: Roll) -> dict[str, Any]:
    """`Roll.as_dict()` with "winner" and "match_count" after "faces", as the contract lists them."""
    winner, match_count = winner_and_count(roll)
    doc: dict[str, Any] = {}
    for key, value in roll.as_dict().items():
        doc[key] = value
        if key == "faces":
            doc["winner"] = winner
            doc["match_count"] = match_count
    return doc


# The plain frame's JPEG quality: near the camera's own (a table learns its dice from it, cut at 64 px).
PLAIN_JPEG_QUALITY = 95


def plain_jpeg(image: ImageArray) -> bytes | None:
    """The frame as the camera gave it, nothing drawn on it, as JPEG (`PLAIN_JPEG_QUALITY`; None: not
    encodable): what a table learns its dice from (`api.read_records.FRAME_KEY`)."""
    import cv2

    ok, encoded = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, PLAIN_JPEG_QUALITY])
    return bytes(encoded) if ok else None


def annotate_read(image: ImageArray, roll: Roll) -> ImageArray:
    """The annotated evidence frame (vision.annotate), its banner naming the winner and match count."""
    from vision.annotate import annotate

    winner, match_count = winner_and_count(roll)
    return annotate(image, roll, winner=winner, match_count=match_count)

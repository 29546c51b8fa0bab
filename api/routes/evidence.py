"""Evidence frames: uploaded by the reader or a dealer terminal, fetched (checked) by anyone who watches."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Path, Request, Response, status

from api import evidence_service
from api.deps import DatabaseDep, RollSubmitter, SettingsDep, Viewer
from api.schemas.admin import EvidenceOut
from api.schemas.errors import AUTH_RESPONSES, MESSAGE_OR_VALIDATION, errors
from api.uploads import check_image_upload

router = APIRouter(prefix="/v1/evidence", tags=["evidence"], responses=AUTH_RESPONSES)

# The formats kept as evidence (served back as they came), and the types a body may be declared as: one of
# theirs, or application/octet-stream (the bytes decide).
FORMATS = ("JPEG", "PNG", "WebP")
MEDIA_TYPES = ("image/jpeg", "image/png", "image/webp")
DECLARED_TYPES = (*MEDIA_TYPES, "application/octet-stream")
SHA256_PATTERN = r"^[0-9a-f]{64}$"


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=EvidenceOut,
    responses=errors(
        (415, "The body's bytes are not a JPEG, PNG or WebP image, or not the type it declares."),
        (422, "The body is empty, a corrupt image, or larger than the service keeps."),
        unprocessable=MESSAGE_OR_VALIDATION,
    ),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                media: {"schema": {"type": "string", "format": "binary", "minLength": 1}}
                for media in DECLARED_TYPES
            },
        }
    },
)
async def upload(
    request: Request,
    principal: RollSubmitter,
    database: DatabaseDep,
    settings: SettingsDep,
    content_type: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> EvidenceOut:
    """Store a frame (the raw image as the body); refer to it from a roll by its SHA-256."""
    data = await request.body()
    # The one upload rule (api/uploads.py): a frame kept as evidence must be the image it says it is.
    media_type = check_image_upload(data, declared_type=content_type, source="the body", formats=FORMATS)
    sha256 = evidence_service.store(
        database=database, settings=settings, data=data, media_type=media_type, actor=principal.actor
    )
    return EvidenceOut(sha256=sha256, size_bytes=len(data), media_type=media_type)


@router.get(
    "/{sha256}",
    response_class=Response,
    responses={
        200: {
            "content": {media: {"schema": {"type": "string", "format": "binary"}} for media in MEDIA_TYPES}
        },
        **errors(404, (409, "The stored frame no longer matches its SHA-256.")),
    },
)
def fetch(
    sha256: Annotated[str, Path(pattern=SHA256_PATTERN)],
    _: Viewer,
    database: DatabaseDep,
    settings: SettingsDep,
) -> Response:
    """The frame's bytes, after checking them against their SHA-256 (409 when they no longer match)."""
    frame = evidence_service.fetch(database=database, settings=settings, sha256=sha256)
    return Response(frame.data, media_type=frame.media_type, headers={"X-Content-SHA256": sha256})

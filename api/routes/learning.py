"""The table's learning from its people (issue 56, item 3): its state, its setting, going back.

- `GET /v1/tables/{id}/learning`: what the table has learned, with the console's one line (dealer,
  surveillance, admin).
- `PUT /v1/tables/{id}/learning`: how many confirmed dice between refits (admin).
- `POST /v1/tables/{id}/learning/rollback`: back to the shipped model or the previous refit (admin).

The logic is `api.learning`; this module speaks HTTP, and starts a due refit after a confirmed roll
(`after_confirmation`, called by the roll and console routes).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request, status
from pydantic import BaseModel, ConfigDict, Field

from api import learning
from api.deps import Admin, DatabaseDep, SettingsDep, Viewer
from api.schemas.errors import AUTH_RESPONSES, errors
from api.settings import Settings

router = APIRouter(prefix="/v1/tables", tags=["learning"], responses=AUTH_RESPONSES)


class LearningOut(BaseModel):
    """What a table has learned from its people."""

    table_id: str
    learn_every_dice: int
    confirmed_dice: int
    next_refit_in_dice: int
    learned_from_dice: int | None
    learned_on: str | None
    held_out_accuracy: float | None
    shipped_accuracy: float | None
    has_previous: bool
    last_refit: dict[str, Any] | None
    path: Literal["head", "fine_tune"]
    line: str
    # The table's no-die filter, learned from the boxes its people struck out (vision/table/no_die.py):
    # {"struck", "dice", "fitted_at", "validation", "sha256"}; null: it has none.
    no_die: dict[str, Any] | None = None


class LearningIn(BaseModel):
    """A table's learning setting."""

    model_config = ConfigDict(extra="forbid")
    learn_every_dice: int = Field(ge=learning.MIN_EVERY_DICE, le=learning.MAX_EVERY_DICE)


class RollbackIn(BaseModel):
    """Where to go back to."""

    model_config = ConfigDict(extra="forbid")
    to: Literal["shipped", "previous"]


def _state(database: Any, settings: Settings, table_id: str) -> LearningOut:
    from vision.pips.enrolled import EnrollmentError

    try:
        state = learning.learning_state(database, calibration_dir=settings.calibration_dir, table_id=table_id)
    except learning.LearningError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=str(exc)) from exc
    except EnrollmentError as exc:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, detail=f"its enrollment: {exc}") from exc
    return LearningOut(**asdict(state))


@router.get("/{table_id}/learning", response_model=LearningOut, responses=errors(404))
def get_learning(table_id: str, _: Viewer, database: DatabaseDep, settings: SettingsDep) -> LearningOut:
    """What the table has learned from its confirmed dice, in figures and one line."""
    return _state(database, settings, table_id)


@router.put("/{table_id}/learning", response_model=LearningOut, responses=errors(400, 404))
def put_learning(
    table_id: str, body: LearningIn, principal: Admin, database: DatabaseDep, settings: SettingsDep
) -> LearningOut:
    """Set how many confirmed dice between refits (admin; audited)."""
    try:
        learning.set_learn_every(
            database, table_id=table_id, every_dice=body.learn_every_dice, actor=principal.actor
        )
    except learning.LearningError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, detail=str(exc)) from exc
    return _state(database, settings, table_id)


@router.post(
    "/{table_id}/learning/rollback",
    response_model=LearningOut,
    responses=errors(400, 404, (409, "Nothing to go back to.")),
)
def post_rollback(
    table_id: str, body: RollbackIn, principal: Admin, database: DatabaseDep, settings: SettingsDep
) -> LearningOut:
    """Go back to the shipped model or to the previous refit (admin; audited)."""
    _state(database, settings, table_id)  # 404 for no table
    try:
        learning.rollback(
            database,
            calibration_dir=settings.calibration_dir,
            table_id=table_id,
            to=body.to,
            actor=principal.actor,
            webhook_urls=settings.webhook_urls,
        )
    except learning.LearningError as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, detail=str(exc)) from exc
    return _state(database, settings, table_id)


def after_confirmation(request: Request, *, database: Any, settings: Settings, table_id: str) -> None:
    """Start the table's refit when one is due (a thread; the request only counts). Never fails the
    request that confirmed: a problem is logged."""
    from api.routes.reads import get_reader

    try:
        learning.after_confirmation(
            database=database,
            calibration_dir=settings.calibration_dir,
            evidence_dir=settings.evidence_dir,
            table_id=table_id,
            face_model=lambda: get_reader(request).onnx_models["pips"],
            webhook_urls=settings.webhook_urls,
        )
    except Exception:  # the roll is confirmed whatever happens here
        learning.log.exception("table %s: could not start a refit", table_id)

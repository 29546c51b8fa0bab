"""The models in use (issue 55, item 7): which the service reads with, and a reload when the manifest changed.

`throwbox models use|rollback` change the manifest on disk; `POST /v1/models/reload` (admin) is how the
service is told: it loads the manifest's models again (each weight file checked by its SHA-256), swaps the
reader that `POST /v1/reads` uses and appends `models.reload` to the audit chain with the models before and
after. A manifest that cannot be loaded is a 409 and the models in use stay. Live table loops already running
keep their reader until the service restarts (docs/reader.md, "Putting a model in use").
"""

from __future__ import annotations

import threading
from typing import Any

from fastapi import APIRouter, Request

from api import audit
from api.deps import Admin, DatabaseDep, Watcher
from api.errors import StateConflictError
from api.schemas.errors import AUTH_RESPONSES, errors
from api.schemas.models_in_use import ModelOut, ModelsOut

router = APIRouter(prefix="/v1/models", tags=["models"], responses=AUTH_RESPONSES)
_RELOAD_LOCK = threading.Lock()


def _in_use(reader: Any) -> list[ModelOut]:
    """The loaded models of a reader, by manifest name."""
    return [
        ModelOut(
            name=name,
            tag=model.spec.tag,
            version=model.spec.version,
            sha256=model.spec.sha256,
            temperature=model.spec.temperature,
            sure_bar=model.spec.sure_bar,
        )
        for name, model in sorted(reader.onnx_models.items())
    ]


@router.get("", response_model=ModelsOut, responses=errors(503))
def models_in_use(request: Request, _: Watcher) -> ModelsOut:
    """The models the service reads with (loaded now if not yet; 503 if they cannot be)."""
    from api.routes.reads import get_reader

    reader = get_reader(request)
    return ModelsOut(manifest=str(request.app.state.settings.manifest_path), models=_in_use(reader))


@router.post(
    "/reload", response_model=ModelsOut, responses=errors((409, "The manifest's models cannot be loaded."))
)
def reload(request: Request, principal: Admin, database: DatabaseDep) -> ModelsOut:
    """Load the manifest's models again and read with them from now on; audited (admin)."""
    from vision.onnx_session import ModelError
    from vision.reader import Reader

    manifest = request.app.state.settings.manifest_path
    with _RELOAD_LOCK:
        try:
            fresh = Reader(threads=1, manifest_path=manifest)
        except ModelError as exc:
            raise StateConflictError(f"the models in use stay: {exc}") from exc
        old = getattr(request.app.state, "reader", None)
        before = {} if old is None else {m.name: m.sha256 for m in _in_use(old)}
        after_models = _in_use(fresh)
        after = {m.name: m.sha256 for m in after_models}
        changed = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
        audit.append_alone(
            database=database,
            actor=principal.actor,
            action="models.reload",
            subject=f"manifest:{manifest.name}",
            payload={"before": before, "after": after, "changed": changed},
        )
        request.app.state.reader = fresh
    return ModelsOut(manifest=str(manifest), models=after_models, changed=changed)

"""A worker's copy of a table's enrollment record, kept as the service has it.

The service stores a table's refit or enrollment as its record beside the table's calibration, and a
fine-tune's record names a model file beside it (vision/pips/enrolled.py). A worker reads its tables on
another machine, so it keeps both in its spool folder (`tables/`): at the loop's start from the live-config,
then every `POLL_S` from the live-config again (`EnrollmentCopy.refresh`, called from the lease thread):

- a record of another checksum: its fine-tuned file first (`GET /v1/tables/{id}/enrollment/model`, checked
  against the record's SHA-256; a file already here under that name and SHA-256 is kept), then the record,
  each written whole (`os.replace`);
- no record at the service (rolled back to the shipped model, or removed): the copy's record removed;
- the table's no-die filter (`<table>.no-die.json`, vision/table/no_die.py) the same way, from the
  live-config's `no_die` (`apply_no_die`).

The table's loop reads through `api.live_reader.TableReader` on that folder, so the next throw reads with
what was written. A copy that cannot be made (the service unreachable, the file refused) keeps what the
worker had, says why (`problem`) and is tried again at the next poll.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any

import httpx

from calibration.store import write_whole

log = logging.getLogger("throwbox.worker")

POLL_S = 30.0  # how often a worker asks whether a table's record changed (a refit takes minutes)


class EnrollmentCopyError(Exception):
    """The table's record or its fine-tuned file could not be copied (the copy keeps what it had)."""


def _sha256_of(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


class EnrollmentCopy:
    """The worker's copy of one table's enrollment record (and fine-tuned file) in `folder`."""

    def __init__(self, control: httpx.Client, folder: Path, table_id: str, *, poll_s: float = POLL_S) -> None:
        from vision.pips.enrolled import enrollment_path

        self.control = control
        self.folder = folder
        self.table_id = table_id
        self.path = enrollment_path(folder, table_id)
        self.poll_s = poll_s
        self.checked_at = time.monotonic()
        self.problem: str | None = None

    def _held_checksum(self) -> str | None:
        try:
            held = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return held.get("checksum") if isinstance(held, dict) else None

    def apply(self, document: dict[str, Any] | None) -> bool:
        """Make the copy the service's `document` (None: the table has no record); whether it changed.
        `EnrollmentCopyError` when the fine-tuned file cannot be had (nothing changed then)."""
        if document is None:
            if self.path.is_file():
                self.path.unlink()
                log.info("table %s: its enrollment was removed at the service", self.table_id)
                return True
            return False
        if document.get("checksum") == self._held_checksum():
            return False
        body = document.get("body")
        body = body if isinstance(body, dict) else {}
        model_file, sha256 = body.get("model_file"), body.get("model_file_sha256")
        if model_file is not None:
            if not isinstance(model_file, str) or Path(model_file).name != model_file or not sha256:
                raise EnrollmentCopyError(f"the record names {model_file!r}, not a file name and SHA-256")
            if _sha256_of(self.folder / model_file) != sha256:
                self._fetch_model(model_file, str(sha256))
        write_whole(self.path, json.dumps(document).encode("utf-8"), mode=0o600)
        log.info("table %s: its enrollment record %s copied", self.table_id, document.get("checksum"))
        return True

    def apply_no_die(self, document: dict[str, Any] | None) -> bool:
        """Make the copy of the table's no-die filter (vision/table/no_die.py) the service's `document`
        (None: the table has none); whether it changed. The table's reader checks it as it loads it."""
        from vision.table.no_die import no_die_path

        path = no_die_path(self.folder, self.table_id)
        if document is None:
            if path.is_file():
                path.unlink()
                return True
            return False
        try:
            held = json.loads(path.read_text(encoding="utf-8")).get("checksum")
        except (OSError, ValueError, AttributeError):
            held = None
        if document.get("checksum") == held:
            return False
        write_whole(path, json.dumps(document).encode("utf-8"), mode=0o600)
        log.info("table %s: its no-die filter %s copied", self.table_id, document.get("checksum"))
        return True

    def _fetch_model(self, model_file: str, sha256: str) -> None:
        try:
            response = self.control.get(f"/v1/tables/{self.table_id}/enrollment/model")
        except httpx.HTTPError as exc:
            raise EnrollmentCopyError(f"its fine-tuned model could not be fetched: {exc}") from exc
        if response.status_code != 200:
            detail = response.text[:300]
            raise EnrollmentCopyError(f"its fine-tuned model was refused ({response.status_code}): {detail}")
        got = hashlib.sha256(response.content).hexdigest()
        if got != sha256:
            raise EnrollmentCopyError(
                f"its fine-tuned model came with SHA-256 {got[:12]}..., the record names {sha256[:12]}..."
            )
        write_whole(self.folder / model_file, response.content, mode=0o600)  # its own copy

    def refresh(self, *, now: float | None = None, force: bool = False) -> bool:
        """At most every `poll_s` (or now, `force`): the service's record again from the live-config, applied;
        whether the copy changed. Never raises: a failure is `problem`, and the copy keeps what it had."""
        now = time.monotonic() if now is None else now
        if not force and now - self.checked_at < self.poll_s:
            return False
        self.checked_at = now
        try:
            response = self.control.get(f"/v1/tables/{self.table_id}/live-config")
            if response.status_code != 200:
                why = f"live-config answered {response.status_code}: {response.text[:300]}"
                raise EnrollmentCopyError(why)
            config = response.json()
            changed = self.apply(config.get("enrollment"))
            changed = self.apply_no_die(config.get("no_die")) or changed
        except (EnrollmentCopyError, httpx.HTTPError, ValueError, OSError) as exc:
            if str(exc) != self.problem:
                log.warning("table %s: its enrollment not copied: %s", self.table_id, exc)
            self.problem = str(exc)
            return False
        self.problem = None
        return changed

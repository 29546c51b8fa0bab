"""Service settings: one pydantic-settings class, read from `THROWBOX_*` environment variables.

Secrets (the database URL may carry a password; the webhook secret) are `SecretStr`, so they never
appear in a repr, a log line or an error message.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Everything the service reads from its environment (prefix `THROWBOX_`)."""

    model_config = SettingsConfigDict(env_prefix="THROWBOX_", extra="ignore", frozen=True)

    data_dir: Path = Field(
        default=Path("./data"),
        description="Holds the SQLite database, the evidence frames and the first admin key.",
    )
    database_url: SecretStr | None = Field(
        default=None,
        description="SQLAlchemy URL (e.g. postgresql+psycopg://user:pw@host/db); default SQLite in data_dir.",
    )
    webhook_urls: list[str] = Field(
        default_factory=list,
        description='URLs that receive every event by POST (JSON list, e.g. ["https://host/hook"]).',
    )
    webhook_secret: SecretStr | None = Field(
        default=None, description="HMAC-SHA256 key that signs webhook bodies (X-Throwbox-Signature)."
    )
    webhook_max_attempts: int = Field(default=8, ge=1, le=100, description="Deliveries tried per event.")
    webhook_backoff_s: float = Field(
        default=1.0, gt=0, le=3600, description="First retry delay; doubles per attempt."
    )
    webhook_timeout_s: float = Field(default=5.0, gt=0, le=120, description="Timeout of one delivery.")
    sse_poll_s: float = Field(default=0.25, gt=0, le=10, description="How often the event stream looks.")
    sse_notify_poll_s: float = Field(
        default=2.0,
        gt=0,
        le=60,
        description="On PostgreSQL, where LISTEN/NOTIFY wakes the event stream: its fallback poll.",
    )
    migrate_on_start: bool = Field(
        default=True,
        description="Migrate the database when the service starts; false: refuse a schema not at head "
        "(replicas: run `throwbox db upgrade` once instead).",
    )
    max_evidence_bytes: int = Field(
        default=20_000_000, ge=1, description="Largest evidence frame or uploaded image accepted."
    )
    # Hostile input (vision/image.py refuses an oversize image from its header, before decoding it). The
    # upper bounds stay inside OpenCV's own limits (2^30 pixels, 2^20 px a side), so ours always decide.
    max_request_bytes: int = Field(
        default=44_000_000,
        ge=1024,
        description="Largest request body accepted (413 beyond): a 40 MiB image and its form fields.",
    )
    max_image_side_px: int = Field(
        default=12_000, ge=16, le=100_000, description="Longest side of an uploaded image (422 beyond)."
    )
    max_image_pixels: int = Field(
        default=50_000_000,
        ge=256,
        le=1_000_000_000,
        description="Most pixels in an uploaded image (422 beyond): 50 MP holds a 48 MP photo.",
    )
    max_concurrent_reads: int = Field(
        default=4, ge=1, le=256, description="Reads (decode and models) in progress at once."
    )
    read_queue_s: float = Field(
        default=2.0,
        ge=0,
        le=60,
        description="How long a read waits for a free slot before a 503 with Retry-After.",
    )
    # The live table (api/live.py, api/live_service.py).
    demo: bool = Field(default=False, description="Run the demo table (`throwbox serve --demo`).")
    live_tables: bool = Field(
        default=False, description="Run the live loop for every table that has a camera_source."
    )
    self_url: str = Field(
        default="http://127.0.0.1:8000", description="This service's own URL (`throwbox serve` sets it)."
    )
    rules_url: str | None = Field(
        default=None,
        description="Another rules engine live rolls are POSTed to; default none: this service's round "
        "logic, in-process.",
    )
    rules_key: SecretStr | None = Field(
        default=None, description="A reader-role key at THROWBOX_RULES_URL (default: one made at start)."
    )
    demo_loaded_die: str | None = Field(
        default=None,
        pattern=r"^(all|[1-9]|10):[1-6]:-?[0-9]*\.?[0-9]+$",
        description="With --demo, also play table demo-dice with this loaded die, DIE:FACE:BIAS "
        "(e.g. 1:6:0.05: face 6 of die 1 at 1/6 + 0.05; DIE `all` loads the set): the fairness alarm.",
    )
    demo_dice_interval_s: float = Field(
        default=0.5, ge=0, le=3600, description="Pause between the demo-dice table's rounds."
    )
    demo_clips: Path | None = Field(
        default=None, description="Throw clips the demo table plays; default the ones in api/demo_clips."
    )
    # Table workers apart from the service (issue 50; api/leases.py, api/routes/workers.py).
    external_workers: bool = Field(
        default=False,
        description="`throwbox worker` processes run the tables with a camera: no live loop for them here.",
    )
    lease_ttl_s: float = Field(
        default=5.0, gt=0, le=3600, description="How long a table worker's lease lasts without a renewal."
    )
    worker_check_s: float = Field(
        default=1.0, gt=0, le=60, description="How often each replica looks for lost worker leases."
    )

    # The models in use (issue 55): `throwbox models use|rollback` change this manifest and
    # `POST /v1/models/reload` reads it again; None: the repository's models/manifest.json.
    models_manifest: Path | None = Field(
        default=None, description="The model manifest the reader loads; default models/manifest.json."
    )

    @property
    def manifest_path(self) -> Path:
        """The model manifest in force: the override, or the repository's."""
        from vision.onnx_session import MANIFEST_PATH

        return self.models_manifest or MANIFEST_PATH

    @field_validator("webhook_urls")
    @classmethod
    def _http_urls(cls, urls: list[str]) -> list[str]:
        for url in urls:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"webhook URL must start with http:// or https://: {url!r}")
        return urls

    @field_validator("self_url", "rules_url")
    @classmethod
    def _base_url(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError(f"URL must start with http:// or https://: {url!r}")
        return url

    @model_validator(mode="after")
    def _webhooks_are_signed(self) -> Settings:
        if self.webhook_urls and self.webhook_secret is None:
            raise ValueError("THROWBOX_WEBHOOK_URLS needs THROWBOX_WEBHOOK_SECRET: every webhook is signed")
        return self

    @property
    def resolved_database_url(self) -> str:
        """The database URL in force: the override, or SQLite under `data_dir`."""
        if self.database_url is not None:
            return self.database_url.get_secret_value()
        return f"sqlite:///{(self.data_dir / 'throwbox.sqlite3').resolve()}"

    @property
    def evidence_dir(self) -> Path:
        """Where evidence frames are written, one file per SHA-256."""
        return self.data_dir / "evidence"

    @property
    def calibration_dir(self) -> Path:
        """Where `throwbox calibrate` stores table calibrations for the service."""
        return self.data_dir / "calibration"

    @property
    def demo_clips_dir(self) -> Path:
        """The throw clips the demo table plays."""
        return (
            self.demo_clips if self.demo_clips is not None else Path(__file__).resolve().parent / "demo_clips"
        )

    @property
    def demo_key_path(self) -> Path:
        """Where `throwbox serve --demo` keeps the dashboard's surveillance key."""
        return self.data_dir / "demo-surveillance.key"

    @property
    def first_admin_key_path(self) -> Path:
        """Where `throwbox serve` writes the first admin key on a fresh database."""
        return self.data_dir / "first-admin.key"

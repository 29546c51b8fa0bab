"""`throwbox models list|use|rollback`: put a model in use by a command, not by editing manifest.json
(issue 55, item 7; api/model_registry.py). With `--service URL --key-file FILE`, `use` and `rollback` tell the
running service (`POST /v1/models/reload`, admin), which loads the models again and audits the change."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import typer

SERVICE_HELP = "Tell this running service (POST /v1/models/reload): it reloads and audits the change."


def _tell(service: str | None, key_file: Path | None) -> None:
    """Ask the service to reload its models; say what it answered."""
    if service is None:
        typer.echo(
            "  the service reads the old models until told: POST /v1/models/reload (admin), or restart it"
        )
        return
    import httpx

    from api.cli.worker import _read_key

    if key_file is None:
        typer.echo("throwbox models: --service needs --key-file (an admin key)", err=True)
        raise typer.Exit(2)
    key = _read_key(key_file, "--key-file")
    try:
        response = httpx.post(
            service.rstrip("/") + "/v1/models/reload", headers={"Authorization": f"Bearer {key}"}, timeout=120
        )
    except httpx.HTTPError as exc:
        typer.echo(f"throwbox models: the service at {service} was not told: {exc}", err=True)
        raise typer.Exit(1) from exc
    if response.status_code != 200:
        detail: Any = response.text
        with contextlib.suppress(ValueError):  # a body that is not JSON is said as it came
            detail = response.json().get("detail", detail)
        typer.echo(f"throwbox models: the service answered {response.status_code}: {detail}", err=True)
        raise typer.Exit(1)
    changed = response.json()["changed"]
    typer.echo(f"  the service reloaded its models; changed: {', '.join(changed) or 'none'} (audited)")


def _print_change(change: Any) -> None:
    for name, (old, new) in change.changed.items():
        typer.echo(f"  {name}: {(old or 'none')[:12]} -> {(new or 'none')[:12]}")
    if not change.changed:
        typer.echo("  no model changed")
    typer.echo(f"  kept: {change.kept}")


def register(app: typer.Typer) -> None:
    models = typer.Typer(
        help="The models in use: list, use (checked by SHA-256), roll back.", no_args_is_help=True
    )
    app.add_typer(models, name="models")

    def manifest_option() -> Any:
        return typer.Option(None, "--manifest", help="The manifest in use; default models/manifest.json.")

    @models.command("list")
    def list_models(manifest: Path | None = manifest_option()) -> None:
        """Each model of the manifest in use, its weight file checked by SHA-256; the kept manifests."""
        from api.model_registry import RegistryError, history, status
        from vision.onnx_session import MANIFEST_PATH

        path = manifest or MANIFEST_PATH
        try:
            entries = status(path)
        except RegistryError as exc:
            typer.echo(f"throwbox models: {exc}", err=True)
            raise typer.Exit(2) from exc
        for e in entries:
            calibration = "" if e.temperature is None else f" temperature {e.temperature:g}"
            calibration += "" if e.sure_bar is None else f" sure bar {e.sure_bar:g}"
            typer.echo(f"{e.name:12s} {e.state:8s} {e.file} ({e.version}) {e.sha256[:12]}{calibration}")
        for kept in history(path):
            typer.echo(f"kept: {kept}")
        if any(e.state != "ok" for e in entries):
            raise typer.Exit(1)

    @models.command("use")
    def use(
        candidate: Path = typer.Argument(
            ..., help="A manifest naming the candidate models (and their SHA-256)."
        ),
        model: list[str] = typer.Option([], "--model", help="Only these models of it (default: every one)."),
        manifest: Path | None = manifest_option(),
        service: str | None = typer.Option(None, "--service", help=SERVICE_HELP),
        key_file: Path | None = typer.Option(None, "--key-file", help="File holding an admin API key."),
    ) -> None:
        """Put the candidate's models in use, each weight file checked by its SHA-256; the manifest replaced
        is kept for `rollback`."""
        from api.model_registry import RegistryError
        from api.model_registry import use as use_models
        from vision.onnx_session import MANIFEST_PATH

        try:
            change = use_models(manifest or MANIFEST_PATH, candidate, names=model)
        except RegistryError as exc:
            typer.echo(f"throwbox models: {exc}", err=True)
            raise typer.Exit(2) from exc
        typer.echo(f"{change.manifest}: models from {candidate} in use")
        _print_change(change)
        _tell(service, key_file)

    @models.command("rollback")
    def rollback(
        manifest: Path | None = manifest_option(),
        service: str | None = typer.Option(None, "--service", help=SERVICE_HELP),
        key_file: Path | None = typer.Option(None, "--key-file", help="File holding an admin API key."),
    ) -> None:
        """Put the last kept manifest back in use."""
        from api.model_registry import RegistryError
        from api.model_registry import rollback as roll_back
        from vision.onnx_session import MANIFEST_PATH

        try:
            change = roll_back(manifest or MANIFEST_PATH)
        except RegistryError as exc:
            typer.echo(f"throwbox models: {exc}", err=True)
            raise typer.Exit(2) from exc
        typer.echo(f"{change.manifest}: rolled back")
        _print_change(change)
        _tell(service, key_file)

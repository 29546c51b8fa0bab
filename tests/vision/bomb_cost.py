"""What refusing a hostile image really costs: wall time and extra peak memory (RSS), measured in a fresh
process so that nothing else the test session did hides the figure.

`python -m tests.vision.bomb_cost WAY PATH` prints one JSON line: `{"seconds", "extra_mb", "outcome"}`.
WAY is `decode` (vision.image.load_image), `cli` (`throwbox read PATH`, in-process through typer) or `rest`
(`POST /v1/reads` to a real server in this process). Each way is warmed up first on a file it refuses
cheaply (imports, first calls); then the kernel's peak-RSS mark is reset (`/proc/self/clear_refs`, Linux;
elsewhere the lifetime peak `ru_maxrss` is used, which can only over-state the cost) and the bomb is read.
`extra_mb` is the new peak minus the RSS just before: the most memory the refusal held at once.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lab.hostile_images import jpeg_bomb, png_bomb, tiff_bomb

REPO_ROOT = Path(__file__).resolve().parents[2]

_STATUS = Path("/proc/self/status")


def _status_kb(field: str) -> int | None:
    try:
        found = re.search(rf"^{field}:\s+(\d+) kB", _STATUS.read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(found.group(1)) if found else None


def measure(run: Callable[[], str]) -> dict[str, Any]:
    """Time `run` and the peak RSS it adds over the RSS before it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        before_kb = _status_kb("VmRSS")
    except OSError:
        before_kb = None
    if before_kb is None:
        before_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    outcome = run()
    seconds = time.perf_counter() - start
    peak_kb = _status_kb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": seconds, "extra_mb": max(0, peak_kb - before_kb) / 1024, "outcome": outcome}


def _decode(path: Path, warm: Path) -> Callable[[], str]:
    from vision.image import UnreadableImageError, load_image

    def run(target: Path) -> str:
        try:
            shape = load_image(target).shape
        except UnreadableImageError as exc:
            return f"refused: {exc}"
        return f"read {shape}"

    run(warm)
    return lambda: run(path)


class _NoModels:
    """Stands in for the reader's models in `throwbox read`: a refused image never reaches them, and
    loading them is not part of what refusing an image costs."""

    models: dict[str, Any] = {}  # noqa: RUF012

    def __init__(self, **_: Any) -> None:
        pass


def _cli(path: Path, warm: Path) -> Callable[[], str]:
    from typer.testing import CliRunner

    import vision.reader
    from api.cli import app

    vision.reader.Reader = _NoModels  # type: ignore[misc,assignment]
    runner = CliRunner()

    def run(target: Path) -> str:
        result = runner.invoke(app, ["read", "--json", str(target)])
        return f"exit {result.exit_code}: {result.output.strip()}"

    run(warm)
    return lambda: run(path)


def _rest(path: Path, warm: Path, stack: list[Any]) -> Callable[[], str]:
    import httpx

    from api.auth import Role, create_key
    from api.main import create_app
    from api.settings import Settings
    from tests.conftest import serve_app

    data_dir = Path(tempfile.mkdtemp(prefix="bomb-cost-"))
    app = create_app(Settings(data_dir=data_dir))
    server = serve_app(app)
    base_url = server.__enter__()
    stack.append(server)
    with app.state.database.session() as session:
        key = create_key(session, role=Role.READER, name="camera").secret
    client = httpx.Client(timeout=60.0)
    stack.append(client)

    def run(target: Path) -> str:
        files = {"image": (target.name, target.read_bytes(), "application/octet-stream")}
        headers = {"Authorization": f"Bearer {key}"}
        response = client.post(f"{base_url}/v1/reads", files=files, headers=headers)
        return f"{response.status_code}: {response.text}"

    run(warm)
    return lambda: run(path)


BOMBS = {
    "png_30000x30000": lambda: png_bomb(30_000, 30_000),  # 2.7 GB as BGR if decoded
    "jpeg_65500x65500": lambda: jpeg_bomb(65_500, 65_500),  # 12.9 GB
    "tiff_100000x100": lambda: tiff_bomb(100_000, 100),  # a side over 12000 px
}


def cost_of(way: str, path: Path) -> dict[str, Any]:
    """The measured cost of reading `path` one way, in a fresh process (tests/vision/bomb_cost.py)."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OPENCV_LOG_LEVEL": "ERROR"}
    done = subprocess.run(
        [sys.executable, "-m", "tests.vision.bomb_cost", way, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
        env=env,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str]) -> None:
    """Measure one way of reading one file and print the JSON line."""
    way, path = argv[0], Path(argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm.jpg"
        warm.write_bytes(b"\xff\xd8\xff not really a JPEG")
        stack: list[Any] = []
        if way == "decode":
            run = _decode(path, warm)
        elif way == "cli":
            run = _cli(path, warm)
        else:
            run = _rest(path, warm, stack)
        result = measure(run)
        for item in reversed(stack):
            item.__exit__(None, None, None)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])

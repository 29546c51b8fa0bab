"""deploy/: what can be checked without a docker engine or a systemd host (issue 50, part 3).

The compose file parses and has the services the README describes; every `throwbox` command line in the
compose file, the systemd units and the Dockerfile is one this CLI accepts, options and values included
(parsed by the Typer app's own click parser, nothing run); every THROWBOX_* variable they set is a Settings
field with a valid value; HAProxy's config names every replica at its port; and, where they are installed,
`haproxy -c` and `systemd-analyze verify` accept the files. Anything missing fails.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml

from api.cli import app
from api.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
UNITS = DEPLOY / "systemd"
COMPOSE = DEPLOY / "compose.yaml"
HAPROXY = DEPLOY / "haproxy.cfg"
DOCKERFILE = ROOT / "Dockerfile"
BINARY = "/opt/throwbox/venv/bin/throwbox"  # where the units expect the venv (deploy/README.md)
REPLICAS = ("serve-1", "serve-2")

# click's UsageError, as this typer has it (typer 0.2x vendors its own click): BadParameter's base.
USAGE_ERROR: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return loaded


def env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of an EnvironmentFile (comments and blank lines skipped)."""
    pairs = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            pairs[key.strip()] = value.strip()
    return pairs


def unit_lines(path: Path, key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in path.read_text().splitlines() if line.startswith(f"{key}=")]


def expand_unit(command: str, instance: str) -> list[str]:
    """An ExecStart= line as the worker/serve unit would run it: specifiers and the worker env example's
    variables filled in (`${X}` one word, `$X` split into words, as systemd does)."""
    values = env_file(UNITS / "worker.env.example")
    for spec, value in {
        "%i": instance,
        "%H": "host",
        "%d": "/run/credentials/unit",
        "%S": "/var/lib",
    }.items():
        command = command.replace(spec, value)
    command = re.sub(r"\$\{(\w+)\}", lambda m: shlex.quote(values[m.group(1)]), command)
    command = re.sub(r"\$(\w+)", lambda m: values[m.group(1)], command)
    return shlex.split(command)


def command_lines() -> list[tuple[str, list[str]]]:
    """(where, argv after `throwbox`) for every throwbox command line in deploy/ and the Dockerfile."""
    found: list[tuple[str, list[str]]] = []
    for name, service in compose()["services"].items():
        if service.get("image") == "throwbox:latest":
            found.append((f"compose:{name}", list(service["command"])))
    for unit in sorted(UNITS.glob("*.service")):
        for line in unit_lines(unit, "ExecStart"):
            argv = expand_unit(line, "8001")
            assert argv[0] == BINARY, f"{unit.name} runs {argv[0]}, not the venv's throwbox"
            found.append((f"unit:{unit.name}", argv[1:]))
    text = DOCKERFILE.read_text()
    entry = re.search(r"^ENTRYPOINT (\[.*\])$", text, flags=re.MULTILINE)
    cmd = re.search(r"^CMD (\[.*\])$", text, flags=re.MULTILINE)
    assert entry and cmd and yaml.safe_load(entry.group(1)) == ["throwbox"]
    found.append(("Dockerfile:CMD", yaml.safe_load(cmd.group(1))))
    return found


def throwbox_variables() -> list[tuple[str, str, str]]:
    """(where, THROWBOX_* name, value) for every variable deploy/ and the Dockerfile set."""
    found = []
    for path in sorted(UNITS.glob("*.example")):
        for key, value in env_file(path).items():
            found.append((path.name, key, value))
    for name, service in compose()["services"].items():
        for key, value in (service.get("environment") or {}).items():
            found.append((f"compose:{name}", key, str(value)))
    for unit in sorted(UNITS.glob("*.service")):
        for line in unit_lines(unit, "Environment"):
            key, _, value = line.partition("=")
            found.append((unit.name, key, value))
    env_block = re.search(
        r"^ENV (.*?)(?=^\S)", DOCKERFILE.read_text() + "\nX", flags=re.MULTILINE | re.DOTALL
    )
    assert env_block is not None
    for key, value in re.findall(r"(\w+)=(\S+)", env_block.group(1)):
        found.append(("Dockerfile", key, value))
    return [item for item in found if item[1].startswith("THROWBOX_")]


def test_the_compose_file_has_the_services_of_the_readme() -> None:
    services = compose()["services"]
    assert set(services) == {"postgres", "migrate", *REPLICAS, "lb", "worker-1", "worker-2"}
    assert services["migrate"]["command"] == ["db", "upgrade"]
    assert services["migrate"]["restart"] == "no"
    for name in REPLICAS:
        replica = services[name]
        assert replica["command"][0] == "serve"
        assert replica["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        assert replica["environment"]["THROWBOX_MIGRATE_ON_START"] == "false"
        assert replica["environment"]["THROWBOX_DATABASE_URL"].startswith("postgresql+psycopg://")
        assert replica["volumes"] == ["data:/data"]  # one data dir (evidence) for every replica
    assert "./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro" in services["lb"]["volumes"]
    secrets = compose()["secrets"]
    for name in ("worker-1", "worker-2"):
        worker = services[name]
        secret = f"worker_{name[-1]}_key"
        argv = worker["command"]
        assert argv[argv.index("--key-file") + 1] == f"/run/secrets/{secret}"
        assert secret in secrets and secret in worker["secrets"]
        assert "environment" not in worker  # a worker holds its key only: no database URL
        assert argv[argv.index("--service") + 1] == "http://lb:8080"
    tables = [
        argv[k + 1]
        for argv in (services[n]["command"] for n in ("worker-1", "worker-2"))
        for k, arg in enumerate(argv)
        if arg == "--table"
    ]
    assert len(tables) == len(set(tables)) == 4  # no table given to two workers


def _readme_shell_lines() -> list[str]:
    """The shell lines of deploy/README.md's code blocks, `\\` continuations joined."""
    lines: list[str] = []
    inside = False
    for line in (DEPLOY / "README.md").read_text().splitlines():
        if line.startswith("```"):
            inside = not inside
            continue
        if inside:
            if lines and lines[-1].endswith("\\"):
                lines[-1] = lines[-1][:-1] + " " + line.strip()
            else:
                lines.append(line)
    return lines


def test_the_compose_demo_tables_have_a_croupier() -> None:
    # The README's compose tables play the demo clips; their rounds are opened by the workers' croupier, a
    # dealer key the README makes and compose hands to every worker as a secret. Without it every demo
    # throw found no open round (409, `roll_not_posted`), issue 57.
    shell = _readme_shell_lines()
    assert any('\\"camera_source\\": \\"<demo clips>\\"' in line for line in shell)
    services, secrets = compose()["services"], compose()["secrets"]
    made = {
        (DEPLOY.parent / line.rsplit(">", 1)[1].strip()).resolve()
        for line in shell
        if "keys create --role dealer" in line and ">" in line
    }
    for name in ("worker-1", "worker-2"):
        argv = services[name]["command"]
        assert "--croupier-key-file" in argv, f"{name}: no croupier, no demo round"
        path = argv[argv.index("--croupier-key-file") + 1]
        assert path.startswith("/run/secrets/")
        secret = path.removeprefix("/run/secrets/")
        assert secret in services[name]["secrets"]
        # The secret's file is one the README fills with a dealer key.
        assert (DEPLOY / secrets[secret]["file"]).resolve() in made


def _command_path(argv: list[str]) -> tuple[Any, tuple[str, ...], list[str]]:
    """The click command argv names, the sub-command path, and the arguments left for it."""
    command: Any = typer.main.get_command(app)
    path: list[str] = []
    rest = list(argv)
    while hasattr(command, "commands"):
        name = rest.pop(0)
        path.append(name)
        command = command.commands.get(name)
        if command is None:
            break
    return command, tuple(path), rest


@pytest.mark.parametrize(("where", "argv"), [pytest.param(w, a, id=w) for w, a in command_lines()])
def test_every_command_line_is_one_the_cli_accepts(where: str, argv: list[str]) -> None:
    command, path, rest = _command_path(argv)
    if command is None:
        pytest.fail(f"{where}: `throwbox {' '.join(path)}` is not a throwbox command")
    try:
        command.make_context(" ".join(path), rest)  # parses options and values; runs nothing
    except typer.BadParameter as exc:
        if "does not exist" not in str(exc):  # a key file on the target host is fine
            pytest.fail(f"{where}: throwbox {' '.join(argv)}: {exc}")
    except USAGE_ERROR as exc:
        pytest.fail(f"{where}: throwbox {' '.join(argv)}: {exc}")


def test_a_wrong_flag_is_caught_by_that_check() -> None:
    """The check above can fail: a flag `serve` does not have is refused by the same parser."""
    command, path, rest = _command_path(["serve", "--port", "8000", "--workers", "4"])
    assert path == ("serve",)
    with pytest.raises(USAGE_ERROR, match="--workers"):
        command.make_context("serve", rest)


@pytest.mark.parametrize(
    ("where", "name", "value"), [pytest.param(w, n, v, id=f"{w}:{n}") for w, n, v in throwbox_variables()]
)
def test_every_throwbox_variable_is_a_setting(
    where: str, name: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    field = name.removeprefix("THROWBOX_").lower()
    if field not in Settings.model_fields:
        pytest.fail(f"{where}: {name} is not a field of api.settings.Settings")
    if "${" in value:  # compose interpolation (the password from deploy/.env)
        value = re.sub(r"\$\{[^}]*\}", "secret", value)
    monkeypatch.setenv(name, value)
    settings = Settings()
    assert getattr(settings, field) is not None  # read from the variable, and valid


def test_haproxy_sends_to_every_replica_at_its_port() -> None:
    services = compose()["services"]
    ports = {}
    for name in REPLICAS:
        argv = services[name]["command"]
        ports[name] = argv[argv.index("--port") + 1]
    backends: dict[str, set[str]] = {}
    current = None
    for line in HAPROXY.read_text().splitlines():
        words = line.split()
        if words[:1] == ["backend"]:
            current = words[1]
            backends[current] = set()
        elif words[:1] == ["server"] and current is not None:
            backends[current].add(words[2])
        elif words[:1] in (["frontend"], ["defaults"], ["global"], ["resolvers"]):
            current = None
    assert set(backends) == {"replicas", "events"}
    for servers in backends.values():
        assert servers == {f"{name}:{port}" for name, port in ports.items()}
    frontend_port = HAPROXY.read_text().split("frontend throwbox")[1].split("bind :")[1].split()[0]
    assert f"{frontend_port}:{frontend_port}" in services["lb"]["ports"]
    assert "compression" not in HAPROXY.read_text().replace("do not\n# add `compression`", "")


@pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy is not installed here")
def test_haproxy_accepts_its_config() -> None:
    done = subprocess.run(["haproxy", "-c", "-f", str(HAPROXY)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "[WARNING]" in line or "[ALERT]" in line]
    # The replicas' names resolve on the compose network only.
    assert all("could not resolve address" in line for line in warnings), warnings


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed here")
def test_systemd_accepts_the_units(tmp_path: Path) -> None:
    true = shutil.which("true")
    assert true is not None
    for unit in UNITS.glob("*.service"):  # the venv is not installed here: any executable stands in
        (tmp_path / unit.name).write_text(unit.read_text().replace(BINARY, true))
    names = ["throwbox-db-upgrade.service", "throwbox-serve@8001.service", "throwbox-worker@floor1.service"]
    done = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", *[f"./{name}" for name in names]],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    # Unknown keys and bad values are only warnings to systemd: none is allowed here.
    assert done.returncode == 0 and done.stdout + done.stderr == "", done.stdout + done.stderr


def test_the_units_are_hardened_and_ordered() -> None:
    serve = (UNITS / "throwbox-serve@.service").read_text()
    assert "Requires=throwbox-db-upgrade.service" in serve and "After=" in serve
    assert "--port %i" in serve
    upgrade = (UNITS / "throwbox-db-upgrade.service").read_text()
    assert "Type=oneshot" in upgrade
    for unit in UNITS.glob("*.service"):
        text = unit.read_text()
        assert "ProtectSystem=strict" in text and "NoNewPrivileges=yes" in text, unit.name
        assert "DynamicUser=yes" in text or "User=throwbox" in text, unit.name
        if "Type=oneshot" not in text:
            assert "Restart=on-failure" in text, unit.name
    env = env_file(UNITS / "throwbox.env.example")
    assert env["THROWBOX_EXTERNAL_WORKERS"] == "true" and env["THROWBOX_MIGRATE_ON_START"] == "false"
    assert env["THROWBOX_DATABASE_URL"].startswith("postgresql+psycopg://")


def test_the_dockerfile_installs_the_product_only_as_a_non_root_user() -> None:
    text = DOCKERFILE.read_text()
    assert re.findall(r"^FROM (\S+)", text, flags=re.MULTILINE)[-1] == "python:3.11-slim"
    users = re.findall(r"^USER (\S+)", text, flags=re.MULTILINE)
    assert users and users[-1] not in ("root", "0")
    assert re.search(r"^HEALTHCHECK .*\n?.*/healthz", text, flags=re.MULTILINE)
    (install,) = re.findall(r"pip install (\S+)", text)
    for extra in ("lab", "synth", "train", "dev"):
        assert extra not in install
    # Every package setuptools ships is copied into the build (and none the .dockerignore leaves out).
    copied = set(re.findall(r"^COPY (\w+) \./\1$", text, flags=re.MULTILINE))
    pyproject = (ROOT / "pyproject.toml").read_text()
    include = re.search(r"^include = \[(.*)\]$", pyproject, flags=re.MULTILINE)
    assert include is not None
    packages = {name.strip(' "*') for name in include.group(1).split(",")}
    assert copied == packages
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert not (copied | {"pyproject.toml", "README.md", "LICENSE"}) & ignored
    assert {".git", ".venv", "data", "tests"} <= ignored

# The throwbox service (and its table worker) as an image: python:3.11-slim, the package without the lab,
# synth or train extras, run as a non-root user. Build from the repository root:
#   docker build -t throwbox .
# deploy/compose.yaml runs it as PostgreSQL + a one-shot migration + two replicas behind HAProxy + workers.
# (No docker engine was available where this file was written; tests/test_deploy.py checks what it can.)

FROM python:3.11-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/throwbox
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY api ./api
COPY calibration ./calibration
COPY datasets ./datasets
COPY lab ./lab
COPY models ./models
COPY rules ./rules
COPY vision ./vision
# [postgres]: the psycopg driver; no [lab], [synth] or [train] (those commands say what to install).
RUN /opt/throwbox/bin/pip install ".[postgres]"

FROM python:3.11-slim
# OpenCV headless and onnxruntime: glib and OpenMP are what the slim image lacks.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libglib2.0-0 libgomp1 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin throwbox \
    && mkdir -p /data /spool \
    && chown throwbox:throwbox /data /spool
COPY --from=build /opt/throwbox /opt/throwbox
# A lone container (SQLite in /data) migrates on start; deploy/compose.yaml runs `throwbox db upgrade` once
# and starts its replicas with THROWBOX_MIGRATE_ON_START=false.
ENV PATH=/opt/throwbox/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    THROWBOX_DATA_DIR=/data
USER throwbox
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8000
# /healthz is open (no key) and answers while the process serves; no curl in the slim image.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"]
ENTRYPOINT ["throwbox"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]

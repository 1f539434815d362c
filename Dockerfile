# syntax=docker/dockerfile:1
# The gangplace image: `gangplace serve`, `gangplace adapter`, `gangplace replan` (deploy/).
#   docker build -t gangplace:latest .
# To pin the base, replace the tag by tag@sha256:<digest> in both FROM lines.

# ---- builder: the package and its dependencies, installed into a venv ---------------------
FROM python:3.11-slim AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
WORKDIR /src
# the build metadata first, then the sources (the generated gRPC code lives in solver/gen)
COPY pyproject.toml README.md requirements.lock ./
COPY solver ./solver
COPY adapter ./adapter
# a regular (non-editable) install at the versions requirements.lock pins (scripts/lock.sh):
# the venv holds everything, /src is not needed after it
RUN /opt/venv/bin/pip install --no-compile -c requirements.lock '.[adapter]' \
 && /opt/venv/bin/python -m compileall -q -j 0 /opt/venv/lib \
 && /opt/venv/bin/gangplace --help > /dev/null \
 && /opt/venv/bin/gangplace adapter --help > /dev/null

# ---- final: the venv only, run as a fixed non-root user -------------------------------------
FROM python:3.11-slim
LABEL org.opencontainers.image.title="gangplace" \
      org.opencontainers.image.description="Optimal gang placement for Kubernetes (CP-SAT solver service and secondary scheduler)" \
      org.opencontainers.image.licenses="Apache-2.0"
# the uid/gid the manifests in deploy/ run as (runAsUser 10001)
RUN groupadd --system --gid 10001 gangplace \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin gangplace
COPY --from=builder /opt/venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# the root filesystem is read-only in deploy/: only /tmp (an emptyDir there) is writable
WORKDIR /tmp
USER 10001:10001
EXPOSE 50051 9090
ENTRYPOINT ["gangplace"]
CMD ["serve"]

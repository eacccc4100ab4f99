# The hosted brain server: brain and its two models (inside the package, sha256-checked at
# build) in a venv, run as a user that is not root. See docs/deploy.md.
#   podman build -t brain-server .        (or docker build)
# BASE: any Debian-based image with python3 ≥ 3.11 and venv; PIP_CA: a CA bundle for pip
# where a proxy re-signs TLS (a build-time mount; nothing of it stays in the image).
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}
ARG PIP_CA=""
RUN useradd --uid 10001 --create-home --home-dir /home/brain --shell /usr/sbin/nologin brain \
 && install -d -o brain -g brain -m 700 /var/lib/brain/keys
COPY pyproject.toml README.md /src/
COPY brain /src/brain
COPY vault-template /src/vault-template
RUN if [ -n "$PIP_CA" ]; then export PIP_CERT="$PIP_CA"; fi \
 && python3 -m venv /opt/brain \
 && /opt/brain/bin/pip install --no-cache-dir --disable-pip-version-check \
        "/src[hosted]" \
 && rm -rf /src
# The models are baked in: fail the build if a shipped file is missing or not the pinned one.
RUN /opt/brain/bin/python -c "from brain._indexes.shipped import folder; folder('minilm'); folder('splade-tiny')"
ENV PATH=/opt/brain/bin:$PATH PYTHONUNBUFFERED=1
USER brain
WORKDIR /home/brain
EXPOSE 8765
ENTRYPOINT ["brain"]
CMD ["serve", "--http", "0.0.0.0:8765", "--public"]

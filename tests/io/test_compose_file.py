"""``docker-compose.yml`` agrees with the README and waits on health checks, not sleeps.

Docker does not run here: the file is parsed and checked (pinned images, published ports, keys,
bucket names, health-check gating), the README's storage options are opened by lancejit, and
the GCS health check and bucket-creation commands run against fake-gcs-server (the emulator the
image packages) when the machine has the shell tools they call.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml  # PyYAML: installed with the test extras (moto requires it, through responses)

from lancejit.io import open_store
from lancejit.io.registry import clear_store_cache

ROOT = Path(__file__).resolve().parents[2]
STORES = {"minio": "minio-setup", "gcs": "gcs-setup"}  # store -> the service creating its bucket


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def readme() -> dict:
    """The README's "Local object stores" code block: its option dicts and the URIs it uses."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Local object stores"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)[1]
    found: dict = {"uris": re.findall(r'"((?:s3|gs)://[^"]+)"', code)}
    for node in ast.parse(code).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            found[node.targets[0].id] = ast.literal_eval(node.value)
    return found


def _command(service: dict) -> str:
    """The shell text a service runs (``entrypoint: [sh, -c]`` + ``command``), ``$$`` unescaped."""
    parts = service.get("command")
    text = parts if isinstance(parts, str) else " ".join(parts)
    return text.replace("$$", "$")


def test_images_are_pinned(compose):
    for name, service in compose["services"].items():
        image = service["image"]
        repo, _, tag = image.rpartition(":")
        assert repo and "/" not in tag, f"{name}: {image} has no tag"
        assert tag != "latest" and not tag.startswith("latest"), f"{name}: {image} is not pinned"
    # Docker Hub no longer serves MinIO's images; quay.io does
    assert compose["services"]["minio"]["image"].startswith("quay.io/minio/minio:RELEASE.")
    assert compose["services"]["minio-setup"]["image"].startswith("quay.io/minio/mc:RELEASE.")


def test_bucket_setup_waits_on_health_not_on_sleep(compose):
    services = compose["services"]
    for store, setup in STORES.items():
        check = services[store]["healthcheck"]
        assert check["test"][0] == "CMD" and check["retries"] >= 10
        assert services[setup]["depends_on"] == {store: {"condition": "service_healthy"}}
        assert services[setup]["entrypoint"] == ["/bin/sh", "-c"]
    for name, service in services.items():
        for key in ("command", "entrypoint"):
            text = service.get(key) or ""
            assert "sleep" not in (text if isinstance(text, str) else " ".join(text)), name


def test_ports_keys_and_buckets_match_the_readme(compose, readme):
    services = compose["services"]
    s3, gcs = readme["s3_options"], readme["gcs_options"]
    # endpoints: published on the loopback address, at the ports the README names
    s3_host = s3["aws_endpoint"].removeprefix("http://")
    gcs_host = gcs["gcs_endpoint"].removeprefix("http://")
    assert services["minio"]["ports"] == [f"{s3_host}:9000"]
    assert services["gcs"]["ports"] == [f"{gcs_host}:4443"]
    assert "--address" in services["minio"]["command"]
    assert services["minio"]["command"][services["minio"]["command"].index("--address") + 1] == "0.0.0.0:9000"
    gcs_args = services["gcs"]["command"]
    assert gcs_args[gcs_args.index("-port") + 1] == "4443"
    assert gcs_args[gcs_args.index("-external-url") + 1] == gcs["gcs_endpoint"]
    assert gcs_args[gcs_args.index("-public-host") + 1] == gcs_host
    # keys: the README's credentials are MinIO's root user, and the setup logs in with them
    env = services["minio"]["environment"]
    assert (env["MINIO_ROOT_USER"], env["MINIO_ROOT_PASSWORD"]) == (s3["aws_access_key_id"], s3["aws_secret_access_key"])
    assert f"http://minio:9000 {env['MINIO_ROOT_USER']} {env['MINIO_ROOT_PASSWORD']}" in _command(services["minio-setup"])
    assert s3["allow_http"] == "true" and gcs["anonymous"] == "true"
    # buckets: the one each setup creates is the one the README's URIs use
    buckets = {uri.split("://")[0]: uri.split("://")[1].split("/")[0] for uri in readme["uris"]}
    assert set(buckets) == {"s3", "gs"}
    assert f"mc mb --ignore-existing local/{buckets['s3']}" in _command(services["minio-setup"])
    assert f'{{"name":"{buckets["gs"]}"}}' in _command(services["gcs-setup"])


def test_readme_options_open_stores(readme):
    clear_store_cache()
    try:
        s3, _ = open_store("s3://lancejit/ds", readme["s3_options"])
        gcs, _ = open_store("gs://lancejit/ds", readme["gcs_options"])
        assert s3 is not None and gcs is not None
    finally:
        clear_store_cache()


@pytest.mark.gcs
def test_gcs_health_check_and_bucket_setup_run(compose, gcs_endpoint):
    """The health check passes against a running fake-gcs-server, and the setup command creates
    the bucket and succeeds again when it exists."""
    if not (shutil.which("sh") and shutil.which("curl") and shutil.which("wget")):
        pytest.skip("needs sh, curl and wget")
    services = compose["services"]
    health = [a.replace("http://127.0.0.1:4443", gcs_endpoint.url) for a in services["gcs"]["healthcheck"]["test"][1:]]
    assert subprocess.run(health, timeout=30).returncode == 0
    setup = _command(services["gcs-setup"]).replace("http://gcs:4443", gcs_endpoint.url)
    name = re.search(r'"name":"([^"]+)"', setup)[1]
    bucket = f"{name}-compose-check"  # the session's emulator is shared: a bucket of its own
    setup = setup.replace(f'"name":"{name}"', f'"name":"{bucket}"')
    for _ in range(2):  # created, then already there
        run = subprocess.run(["sh", "-c", setup], capture_output=True, text=True, timeout=30)
        assert run.returncode == 0, run.stdout + run.stderr
    assert "HTTP 409" in run.stdout
    listing = subprocess.run(["curl", "-s", f"{gcs_endpoint.url}/storage/v1/b"], capture_output=True, text=True,
                             timeout=30).stdout
    assert f'"name":"{bucket}"' in listing

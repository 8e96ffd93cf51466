"""A moto S3 server on 127.0.0.1 for tests (import the fixtures into a test module).

Credentials are fake and set through the environment, instance-metadata lookups
are disabled, and the region comes from ``AWS_DEFAULT_REGION`` (a region in
``client_kwargs`` makes bucket creation send a LocationConstraint moto rejects).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

BUCKET = "zarrdask-test"

_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def s3_storage_options(endpoint: str) -> dict[str, Any]:
    """s3fs options for the moto server at ``endpoint`` (one GET per whole-object read)."""
    return {
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"endpoint_url": endpoint},
        "max_concurrency": 1,
    }


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """URL of a moto S3 server listening on 127.0.0.1 (a free port), with one bucket."""
    import moto.server as moto_server  # a test dependency: fail loudly when it is missing
    saved = {k: os.environ.get(k) for k in _ENV}
    os.environ.update(_ENV)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        import s3fs

        fs = s3fs.S3FileSystem(**s3_storage_options(endpoint), skip_instance_cache=True)
        fs.mkdir(BUCKET)
        yield endpoint
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def s3_url(s3_endpoint: str) -> str:
    """A fresh, empty ``s3://`` prefix for one test."""
    return f"s3://{BUCKET}/{uuid.uuid4().hex}"

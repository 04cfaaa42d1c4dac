"""Fixtures: the sandbox's Motor (see harness.py), a webhook receiver, and
a scratch database for the inbox on the local Postgres."""

import os
import sys
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))


@pytest.fixture(scope="session")
def client():
    from harness import env

    from motor_sdk import Client

    return Client(env("MOTOR_URL"), env("MOTOR_TOKEN"), timeout=15)


@pytest.fixture(scope="session")
def instance_id():
    from harness import env

    return env("MOTOR_INSTANCE_ID")


@pytest.fixture(scope="session")
def receiver():
    from harness import start_receiver

    r = start_receiver()
    yield r
    r.server.shutdown()


@pytest.fixture(scope="session")
def inbox_database():
    """A scratch database on the local Postgres for the inbox tests (the
    receiver's own database, never Motor's); dropped at the end."""
    import psycopg

    base = os.environ.get("MOTOR_TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432")
    name = f"sdkpy_inbox_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    yield f"{base}/{name}"
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

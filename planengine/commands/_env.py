"""Shared CLI helpers: building a session from files and options."""

from __future__ import annotations

import argparse

from planengine.api import TableEnvironment
from planengine.errors import UserError
from planengine.runtime.engine.session import FIXED_CONF, set_cli_conf
from planengine.runtime.storage.job_store import AlreadyExists, Conflict
from planengine.runtime.storage.object_store import is_object_store
from planengine.runtime.storage.s3_job_store import object_at
from planengine.sql.source_text import decode_source as decode_text
from planengine.sql.source_text import read_source


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--catalog", action="append", default=[], metavar="FILE",
                        help="SQL script with catalog DDL (CREATE TABLE/VIEW/FUNCTION/CATALOG) run first; repeatable")
    parser.add_argument("-D", "--set", dest="options", action="append", default=[], metavar="KEY=VALUE",
                        help="session option (docs/options.md lists them), e.g. -D table.exec.state.ttl='1 h'; "
                             "repeatable")


def add_spark_conf_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--conf", dest="spark_conf", action="append", default=[], metavar="KEY=VALUE",
                        help="Spark setting for this driver, e.g. --conf spark.master=k8s://https://kubernetes."
                             "default.svc:443 or --conf spark.executor.instances=4; repeatable; beats "
                             "PLANENGINE_SPARK_MASTER and PLANENGINE_SPARK_CONF")


def spark_conf_from_args(args: argparse.Namespace) -> dict[str, str]:
    """``--conf KEY=VALUE`` pairs (``spark.*`` keys only), applied to the SparkSession this command creates."""
    conf: dict[str, str] = {}
    for item in getattr(args, "spark_conf", None) or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.startswith("spark.") or key == "spark.":
            raise UserError(f"--conf {item!r} is not a Spark setting KEY=VALUE with a spark.* key",
                            hint="e.g. --conf spark.executor.instances=4 (plan options go to -D KEY=VALUE)")
        conf[key] = value.strip()

    fixed = sorted(k for k in conf if k in FIXED_CONF and conf[k] != FIXED_CONF[k])
    if fixed:
        raise UserError(f"--conf cannot change {', '.join(fixed)}: the engine fixes "
                        f"{', '.join(f'{k}={FIXED_CONF[k]}' for k in fixed)} because checkpoints depend on it",
                        hint="remove the setting")
    set_cli_conf(conf)
    return conf


def session(args: argparse.Namespace) -> TableEnvironment:
    config = {}
    for item in args.options:
        if "=" not in item:
            raise UserError(f"option {item!r} is not KEY=VALUE", hint="e.g. -D table.exec.state.ttl='1 h'")
        key, value = item.split("=", 1)
        config[key.strip()] = value.strip()
    env = TableEnvironment(config)
    for path in args.catalog:
        env.execute_sql(read_text(path), source=path)
    return env


def read_text(path: str) -> str:
    """A script or plan file the user named, as text (a non-UTF-8 byte is a located user error); an ``s3a://``
    object is read through the job store (the operator checks the plan in force of an object-store job root)."""
    if is_object_store(path):
        store, key = object_at(path, named_by="the file's s3a:// URI")
        found = store.read(key)
        if found is None:
            raise UserError(f"file {path} does not exist", hint="planengine job-root read shows a job root's files")
        return decode_text(found.data, path)
    return read_source(path)


def write_text(path: str, text: str) -> None:
    """Write a whole ``s3a://`` object the user named (a migrated plan): created if absent, else replaced on the
    version read, so a concurrent writer is refused, never overwritten."""
    store, key = object_at(path, named_by="the output's s3a:// URI")
    current = store.read(key)
    try:
        if current is None:
            store.create(key, text.encode("utf-8"))
        else:
            store.replace(key, text.encode("utf-8"), expected=current.version)
    except (AlreadyExists, Conflict):
        raise UserError(f"{path} changed while it was written",
                        hint="another writer is at work on this job root; try again once it is done") from None


def decode_source(data: bytes, source: str) -> str:
    """Raw file bytes as text, exactly as :func:`read_text` decodes a file (for in-process callers)."""
    return decode_text(data, source)

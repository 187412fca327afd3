"""The one place that knows which engine runs the job.

``sail``: pysail's Spark Connect server in this process on 127.0.0.1 (random port), stopped at exit.
``spark``: classic ``SparkSession`` — the one spark-submit configures, or a local one; Delta through
delta-spark, whose jars are added only when none are configured. ``connect``: any Spark Connect URL.
Everything downstream receives a ``SparkSession`` and never asks which engine it has.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

ENGINES = ("sail", "spark", "connect")

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"

# Settings every engine gets: UTC so day boundaries and rendered timestamps match the contract.
COMMON_CONF = {"spark.sql.session.timeZone": "UTC"}


class EngineError(RuntimeError):
    """The engine could not start; the message says what to do."""


@contextmanager
def open_session(engine: str = "sail", *, remote: str | None = None, delta: bool = True,
                 master: str | None = None, shuffle_partitions: int = 8,
                 app_name: str = "rocketlens") -> Iterator[SparkSession]:
    """Yield a ready SparkSession for ``engine`` and stop it (and its server) afterwards."""
    if engine == "sail":
        with _sail_session() as spark:
            yield spark
    elif engine == "spark":
        spark = _classic_session(delta=delta, master=master,
                                 shuffle_partitions=shuffle_partitions, app_name=app_name)
        try:
            yield spark
        finally:
            spark.stop()
    elif engine == "connect":
        if not remote:
            raise EngineError("engine 'connect' needs --remote sc://host:port")
        spark = SparkSession.builder.remote(remote).getOrCreate()
        _apply_common_conf(spark)
        try:
            yield spark
        finally:
            spark.stop()
    else:
        raise EngineError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


def _apply_common_conf(spark: SparkSession) -> None:
    for key, value in COMMON_CONF.items():
        spark.conf.set(key, value)


@contextmanager
def _sail_session() -> Iterator[SparkSession]:
    os.environ.setdefault("RUST_LOG", "error")  # Sail logs INFO/WARN chatter to stderr
    try:
        from pysail.spark import SparkConnectServer
    except ImportError as exc:  # pragma: no cover - pysail is a dependency
        raise EngineError("pysail is not installed: pip install 'pysail==0.7.2'") from exc
    server = SparkConnectServer("127.0.0.1", 0)
    try:
        server.start(background=True)
    except Exception as exc:
        raise EngineError(f"the embedded Sail engine did not start: {exc}") from exc
    atexit.register(_stop_quietly, server)
    host, port = server.listening_address
    spark = SparkSession.builder.remote(f"sc://{host}:{port}").getOrCreate()
    try:
        _apply_common_conf(spark)
        yield spark
    finally:
        try:
            spark.stop()
        finally:
            _stop_quietly(server)


def _stop_quietly(server) -> None:
    try:
        if server.running:
            server.stop()
    except Exception:
        pass


def _classic_session(*, delta: bool, master: str | None, shuffle_partitions: int,
                     app_name: str) -> SparkSession:
    import shutil

    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # the JVM exists already (spark-submit)
    if not under_submit and not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise EngineError("engine 'spark' needs Java 17: install it or set JAVA_HOME "
                          "(or use --engine sail, which needs no JVM)")
    builder = SparkSession.builder.appName(app_name)
    if not under_submit:
        builder = (builder.master(master or "local[2]")
                   .config("spark.ui.enabled", "false")
                   .config("spark.sql.shuffle.partitions", str(shuffle_partitions)))
    for key, value in COMMON_CONF.items():
        builder = builder.config(key, value)
    if delta:
        builder = _with_delta(builder, under_submit)
    try:
        return builder.getOrCreate()
    except Exception as exc:
        raise EngineError(f"classic Spark did not start: {str(exc).splitlines()[0]}") from exc


def _with_delta(builder: SparkSession.Builder, under_submit: bool) -> SparkSession.Builder:
    """Add delta-spark's extension and catalog; add its jars only when none are configured.

    Under spark-submit the jars come from ``--packages io.delta:delta-spark_4.2_2.13:<v>`` or the
    cluster image, and the JVM is already up, so only the SQL settings are added here.
    """
    from pyspark import SparkConf

    configured = SparkConf() if under_submit else None
    def is_set(key: str) -> bool:
        return bool(configured and configured.get(key, None))

    if not under_submit and "delta" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        from delta import configure_spark_with_delta_pip

        builder = configure_spark_with_delta_pip(builder)
    if not is_set("spark.sql.extensions"):
        builder = builder.config("spark.sql.extensions", DELTA_EXTENSION)
    if not is_set("spark.sql.catalog.spark_catalog"):
        builder = builder.config("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
    return builder

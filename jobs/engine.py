"""The one place that knows which engine runs the job.

``sail``: pysail's Spark Connect server in this process on 127.0.0.1 (random port), stopped at exit.
``spark``: classic ``SparkSession`` — the one spark-submit configures, or a local one; Delta through
delta-spark, whose jars are added only when none are configured. ``connect``: any Spark Connect URL.
Everything downstream receives a ``SparkSession`` and never asks which engine it has.
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from jobs.settings import EngineSettings

ENGINES = ("sail", "spark", "connect")

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"

# Settings every engine gets: UTC so day boundaries and rendered timestamps match the contract.
COMMON_CONF = {"spark.sql.session.timeZone": "UTC"}


class EngineError(RuntimeError):
    """The engine could not start; the message says what to do."""


class EngineConfigError(EngineError):
    """The engine settings are wrong (unknown engine, bad or missing ``--remote``): bad usage."""


class JavaNotFound(EngineError):
    """``--engine spark`` outside spark-submit and no Java to start the JVM with."""


# Defaults of callers without settings (tests, replay): the settings model's (jobs/settings.py).
_DEFAULTS = EngineSettings()
CONNECT_TIMEOUT_SECONDS = _DEFAULTS.connect_timeout_seconds
SAIL_MEMORY_POOL_MIB = _DEFAULTS.sail_memory_pool_mib  # 0, unbounded: see _limit_sail_memory
SAIL_BATCH_ROWS = _DEFAULTS.sail_batch_rows  # see _set_sail_batch_rows
CODEGEN_CACHE_ENTRIES = 10_000  # a local classic session's compiled-class cache (Spark's default: 100)


@contextmanager
def open_session(engine: str = "sail", *, remote: str | None = None, delta: bool = True,
                 master: str | None = None,
                 shuffle_partitions: int = _DEFAULTS.shuffle_partitions,
                 app_name: str = "rocketlens",
                 connect_timeout: float = CONNECT_TIMEOUT_SECONDS,
                 sail_memory_pool_mib: int = SAIL_MEMORY_POOL_MIB,
                 sail_batch_rows: int = SAIL_BATCH_ROWS,
                 local_conf: dict[str, str] | None = None) -> Iterator[SparkSession]:
    """Yield a ready SparkSession for ``engine`` and stop it (and its server) afterwards.

    ``local_conf``: further settings of a local classic session (the tests' engine settings);
    ignored under spark-submit, whose settings are the cluster's, and by the other engines.
    Raises ``EngineError`` (or a subclass) when the session cannot be had, before any work.
    """
    if engine == "sail":
        with _sail_session(sail_memory_pool_mib, sail_batch_rows) as spark:
            yield spark
    elif engine == "spark":
        spark = _classic_session(delta=delta, master=master,
                                 shuffle_partitions=shuffle_partitions, app_name=app_name,
                                 local_conf=local_conf or {})
        try:
            yield spark
        finally:
            spark.stop()
    elif engine == "connect":
        if not remote:
            raise EngineConfigError("engine 'connect' needs --remote sc://host:port")
        _wait_for_connect_server(remote, connect_timeout)
        try:
            spark = SparkSession.builder.remote(remote).getOrCreate()
            _apply_common_conf(spark)
        except Exception as exc:
            raise EngineError(f"the Spark Connect session at {remote} did not start: "
                              f"{_first_line(exc)}") from exc
        try:
            yield spark
        finally:
            spark.stop()
    else:
        raise EngineConfigError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _wait_for_connect_server(remote: str, timeout: float) -> None:
    """Fail within ``timeout`` seconds when nothing answers at ``remote``.

    The Spark Connect client retries an unreachable server for about 10 minutes before giving
    up; a batch job should say at once that its engine is not there.
    """
    import grpc
    from pyspark.sql.connect.client.core import DefaultChannelBuilder

    try:
        builder = DefaultChannelBuilder(remote)
    except Exception as exc:
        raise EngineConfigError(f"--remote {remote!r} is not a Spark Connect URL "
                                f"(sc://host:port): {_first_line(exc)}") from None
    channel = builder.toChannel()
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
    except grpc.FutureTimeoutError:
        raise EngineError(f"no Spark Connect server answered at {remote} within {timeout:g}s: "
                          "start it or fix --remote") from None
    finally:
        channel.close()


def _apply_common_conf(spark: SparkSession) -> None:
    for key, value in COMMON_CONF.items():
        spark.conf.set(key, value)


def _limit_sail_memory(pool_mib: int) -> None:
    """Give the embedded server a bounded ``fair`` memory pool (0: unbounded): sorts and
    aggregates beyond it spill to temporary files (silver's sorts and windows over a day's
    snapshots are the largest; docs/engines.md). Off by default:
    Sail 0.7.2's hash-join build sides do not spill, so a pool too small for a day's joins fails
    the run (``HashJoinInput``; benchmarks/RESULTS.md). Sail reads these
    ``SAIL_*`` variables when its server starts; the setting always decides, so a value
    inherited from a parent run cannot override it."""
    keys = ("SAIL_RUNTIME__MEMORY_POOL__TYPE", "SAIL_RUNTIME__MEMORY_POOL__FAIR__MAX_SIZE")
    if pool_mib > 0:
        os.environ.update(zip(keys, ("fair", str(pool_mib << 20))))
    else:
        for key in keys:
            os.environ.pop(key, None)


# Sail reads Parquet and Delta string columns as Arrow view types (``Utf8View``) unless told
# not to (``parquet.schema_force_view_types``, on by default): plain strings made silver and
# gold ~3 s faster at M and the peak lower (benchmarks/RESULTS.md, session 30). Spark's string
# semantics are the same either way. Set when the server starts; this value always decides.
SAIL_PLAIN_STRINGS = {"SAIL_PARQUET__SCHEMA_FORCE_VIEW_TYPES": "false"}


def _set_sail_batch_rows(batch_rows: int) -> None:
    """The rows of each Arrow batch the embedded server's operators pass on (Sail's
    ``execution.batch_size``, 8,192 by default). Fewer, larger batches cost less per row in the
    sorts and windows over a day's snapshots: the bench M day 268.3 s at 8,192, 250.6 s at
    16,384 (peak 2.64 → 2.73 GiB) and 248.4 s at 32,768 (3.25 GiB); benchmarks/RESULTS.md,
    session 20. Read when the server starts; the setting always decides."""
    os.environ["SAIL_EXECUTION__BATCH_SIZE"] = str(batch_rows)


@contextmanager
def _sail_session(memory_pool_mib: int = SAIL_MEMORY_POOL_MIB,
                  batch_rows: int = SAIL_BATCH_ROWS) -> Iterator[SparkSession]:
    os.environ.setdefault("RUST_LOG", "error")  # Sail logs INFO/WARN chatter to stderr
    # The embedded server runs Python functions (mapInArrow, data sources' readers) in this
    # interpreter through pyspark's worker module, which since pyspark 4.2 refuses to load unless
    # the process says it is a Python worker: without this, mapInArrow fails on Sail 0.7.2.
    os.environ["SPARK_PYTHON_RUNTIME"] = "PYTHON_WORKER"
    _limit_sail_memory(memory_pool_mib)
    _set_sail_batch_rows(batch_rows)
    os.environ.update(SAIL_PLAIN_STRINGS)
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
    try:
        spark = SparkSession.builder.remote(f"sc://{host}:{port}").getOrCreate()
        _apply_common_conf(spark)
    except Exception as exc:
        _stop_quietly(server)
        raise EngineError(f"the embedded Sail engine did not start: {_first_line(exc)}") from exc
    try:
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
                     app_name: str, local_conf: dict[str, str]) -> SparkSession:
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # the JVM exists already (spark-submit)
    if not under_submit and java_executable() is None:
        home = os.environ.get("JAVA_HOME")
        where = f"JAVA_HOME={home} has no bin/java" if home else "no java on PATH"
        raise JavaNotFound(f"engine 'spark' needs Java 17 and finds none ({where}): install it "
                           "or set JAVA_HOME (or use --engine sail, which needs no JVM)")
    builder = SparkSession.builder.appName(app_name)
    if not under_submit:
        # Python workers (the landing data source) must run an interpreter with the job's
        # packages: this one, unless the user chose one; spark-submit users set it themselves
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = (builder.master(master or "local[2]")
                   .config("spark.ui.enabled", "false")
                   .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
                   # the local JVM's default heap ran out building broadcast tables chosen on
                   # low size estimates (compressed staged Parquet); under spark-submit the
                   # cluster's own settings apply
                   .config("spark.sql.autoBroadcastJoinThreshold", "-1")
                   # a day compiles thousands of generated classes and the next group batch or
                   # day the same ones again: the default cache of 100 recompiled them each time
                   # (a simulated day on local[2]: 143 s cold, 70-77 s with the classes cached)
                   .config("spark.sql.codegen.cache.maxEntries", str(CODEGEN_CACHE_ENTRIES)))
        if delta:
            # Delta rebuilds a table's state from its log in a shuffle of this many partitions,
            # 50 by default (sized for a cluster): a local session writes a day's ~30 tables, and
            # reads each back, in 50 tasks per table on its few cores; the session's own shuffle
            # width instead halved a small day's classic run (benchmarks/RESULTS.md, session 36)
            builder = builder.config("spark.databricks.delta.snapshotPartitions",
                                     str(shuffle_partitions))
        for key, value in local_conf.items():
            builder = builder.config(key, value)
    for key, value in COMMON_CONF.items():
        builder = builder.config(key, value)
    fetches_delta = delta and not under_submit and not _delta_in_submit_args()
    if delta:
        builder = _with_delta(builder, under_submit)
    try:
        return builder.getOrCreate()
    except Exception as exc:
        if fetches_delta and not delta_jars_cached():
            raise EngineError(
                f"classic Spark + Delta needs {delta_package()} and its dependencies from Maven "
                f"Central, cached in {ivy_jars_dir()}, and could not get them (offline?): run once "
                "with access to https://repo1.maven.org, copy that folder from a machine that "
                "has it, or use --engine sail") from exc
        raise EngineError(f"classic Spark did not start: {_first_line(exc)}") from exc


# The Delta jars for classic Spark: Maven Central serves io.delta:delta-spark_4.2_2.13 only as 4.4.0
# (checked 2026-12-07: maven-metadata.xml lists 4.4.0 alone; 4.4.1's pom is a 404), while the Python
# package is pinned to delta-spark 4.4.1 — whose own configure_spark_with_delta_pip would name the
# 4.4.1 jar nobody can fetch. The Python side only wraps the JVM classes (DeltaTable), unchanged
# between these patch releases; the suite runs the pair on classic Spark.
DELTA_SPARK_JAR_VERSION = "4.4.0"


def delta_package() -> str:
    """The Maven artifact of Delta for the installed pyspark: ``io.delta:delta-spark_<spark
    x.y>_2.13:DELTA_SPARK_JAR_VERSION`` (what ``--packages`` takes and the local session fetches)."""
    import pyspark

    spark_minor = ".".join(pyspark.__version__.split(".")[:2])
    return f"io.delta:delta-spark_{spark_minor}_2.13:{DELTA_SPARK_JAR_VERSION}"


def ivy_jars_dir() -> str:
    """Where ``spark.jars.packages`` puts the jars it fetched: Spark 4's default Ivy folder
    (``~/.ivy2.5.2``) when ``spark.jars.ivy`` is not set."""
    return os.path.join(os.path.expanduser("~"), ".ivy2.5.2", "jars")


def delta_jars_cached() -> bool:
    """Is Delta's jar (``delta_package()``) in the Ivy cache, so a start needs no network?"""
    group, artifact, ver = delta_package().split(":")
    return os.path.isfile(os.path.join(ivy_jars_dir(), f"{group}_{artifact}-{ver}.jar"))


def _delta_in_submit_args() -> bool:
    return "delta" in os.environ.get("PYSPARK_SUBMIT_ARGS", "")


def java_executable() -> str | None:
    """The ``java`` pyspark's launcher will run: ``$JAVA_HOME/bin/java`` when JAVA_HOME is set
    (spark-class then ignores PATH), else the first on PATH; None when that is not runnable."""
    import shutil

    home = os.environ.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        return java if os.path.isfile(java) and os.access(java, os.X_OK) else None
    return shutil.which("java")


def _with_delta(builder: SparkSession.Builder, under_submit: bool) -> SparkSession.Builder:
    """Add delta-spark's extension and catalog; add its jars only when none are configured.

    Under spark-submit the jars come from ``--packages io.delta:delta-spark_4.2_2.13:<v>`` or the
    cluster image, and the JVM is already up, so only the SQL settings are added here.
    """
    from pyspark import SparkConf

    configured = SparkConf() if under_submit else None
    def is_set(key: str) -> bool:
        return bool(configured and configured.get(key, None))

    if not under_submit and not _delta_in_submit_args():
        builder = builder.config("spark.jars.packages", delta_package())
    if not is_set("spark.sql.extensions"):
        builder = builder.config("spark.sql.extensions", DELTA_EXTENSION)
    if not is_set("spark.sql.catalog.spark_catalog"):
        builder = builder.config("spark.sql.catalog.spark_catalog", DELTA_CATALOG)
    return builder

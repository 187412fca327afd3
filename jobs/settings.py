"""Layered, strict settings (DESIGN.md §2).

Precedence, lowest first: ``conf/base.toml`` < ``conf/<env>.toml`` (``ROCKETLENS_ENV``, default
``local``) < ``--conf FILE`` < environment variables ``ROCKETLENS__SECTION__KEY``. Unknown sections
or keys and values of the wrong type fail with one line naming the key (:class:`SettingsError`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

ENV_PREFIX = "ROCKETLENS__"
DEFAULT_CONF_DIR = Path(__file__).resolve().parent.parent / "conf"


class SettingsError(ValueError):
    """A bad setting; its message is one line naming the key."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class EngineSettings(_Section):
    name: Literal["sail", "spark", "connect"] = "sail"
    remote: str = ""
    shuffle_partitions: int = Field(8, ge=1)
    connect_timeout_seconds: float = Field(10, gt=0)
    sail_memory_pool_mib: int = Field(0, ge=0)
    sail_batch_rows: int = Field(16384, ge=1)
    group_batch_rows: int = Field(2_000_000, ge=1)
    batch_threads: int = Field(2, ge=1)
    # landing reads are packed into at most this many partitions; 0: this machine's cores
    read_partitions: int = Field(0, ge=0)


_FIXED_OFFSET = re.compile(r"^(?:GMT|UTC)?\s*([+-])(\d{1,2})(?::?(\d{2}))?$")


def _known_zone(value: str) -> str:
    if value in ("UTC", "GMT", "Z") or _FIXED_OFFSET.match(value):
        return value
    from zoneinfo import ZoneInfo

    try:
        ZoneInfo(value)
    except Exception as exc:  # zoneinfo raises several types
        raise ValueError(f"unknown time zone {value!r}") from exc
    return value


class IngestSettings(_Section):
    # the JVM zone of 4.x clients (their inner logger writes it); 5.x-layout lines are GMT+8 by
    # their pattern whatever this says (jobs.ingest.client_logs.FIVE_X_LOG_ZONE)
    client_log_timezone: str = "GMT+8"
    # host glob -> zone of that host's rocketmq_client.log wall clock (first match wins, in the
    # order written); hosts no glob matches use client_log_timezone (DESIGN.md §5.1 "Clocks")
    client_log_timezones: dict[str, str] = Field(default_factory=dict)
    quarantine_raw_max_chars: int = Field(65536, ge=256)

    @field_validator("client_log_timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        return _known_zone(value)

    @field_validator("client_log_timezones")
    @classmethod
    def _zones(cls, value: dict[str, str]) -> dict[str, str]:
        for glob, zone in value.items():
            if not glob.strip():
                raise ValueError("a host glob is empty")
            try:
                _known_zone(zone)
            except ValueError as exc:
                raise ValueError(f"host {glob!r}: {exc}") from None
        return value

    def log_zones(self):
        """The per-host zones as the client-log parser takes them."""
        from jobs.ingest.client_logs import LogZones

        if not self.client_log_timezones:
            return self.client_log_timezone
        return LogZones(self.client_log_timezone, tuple(self.client_log_timezones.items()))


class DetectionSettings(_Section):
    liveness_window_seconds: int = Field(90, ge=1)
    max_snapshot_gap_seconds: int = Field(300, ge=1)
    orphan_min_duration_seconds: int = Field(120, ge=0)
    orphan_transient_max_seconds: int = Field(300, ge=0)
    stuck_min_duration_seconds: int = Field(300, ge=0)
    persist_interval_seconds: int = Field(5, ge=1)
    consume_concurrently_max_span: int = Field(2000, ge=1)
    pull_threshold_for_queue: int = Field(1000, ge=1)
    pull_threshold_size_for_queue_mib: int = Field(100, ge=1)
    heartbeat_interval_seconds: int = Field(30, ge=1)
    # the broker's channelExpiredTimeout (facts §4): how long it lists a dead client's channel
    channel_expiry_seconds: int = Field(120, ge=1)
    running_info_round_seconds: int = Field(30, ge=1)
    # DESIGN.md §5.3: after a broker group's master returns, its stale offset table wins for a
    # while; a committed offset that goes back on its queues within this window is accepted.
    master_return_window_seconds: int = Field(900, ge=0)


class SeveritySettings(_Section):
    critical_lag: int = Field(10000, ge=0)
    critical_minutes: int = Field(30, ge=0)
    rebalance_warn_count: int = Field(10, ge=1)


class ProducerSettings(_Section):
    """DESIGN.md §5.2: gold.producer_findings thresholds."""

    min_messages: int = Field(1000, ge=0)
    hot_queue_factor: float = Field(2.0, gt=1)
    hot_min_minutes: int = Field(60, ge=1)
    starved_min_minutes: int = Field(3, ge=1)
    starved_warn_minutes: int = Field(10, ge=1)
    # HOT_QUEUE is WARN only when no other queue of the topic grows by more than this fraction of
    # the hot queue's lag growth: healthy lags wobble by tens of messages between snapshots
    lag_growth_noise: float = Field(0.1, ge=0, lt=1)


class ClusterRetention(_Section):
    """A broker's commit-log retention (DESIGN.md §5.4; facts: ``MessageStoreConfig``):
    ``fileReservedTime`` hours, the ``deleteWhen`` hour in the broker's zone. RocketMQ's
    defaults: 72 h, 04 (``diskMaxUsedSpaceRatio`` 75 % deletes earlier at any hour: the forecast
    can only say so, it does not see the disk)."""

    file_reserved_hours: int = Field(72, ge=1)
    delete_when_hour: int = Field(4, ge=0, le=23)
    timezone: str = "UTC"
    disk_max_used_space_ratio: int = Field(75, ge=10, le=95)

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        return _known_zone(value)


class RetentionSettings(ClusterRetention):
    """The retention of every cluster, and per-cluster overrides (``clusters.<name>``: a full
    ``ClusterRetention``, RocketMQ's defaults for what it leaves out)."""

    clusters: dict[str, ClusterRetention] = Field(default_factory=dict)

    def of(self, cluster: str) -> ClusterRetention:
        return self.clusters.get(cluster, ClusterRetention(
            file_reserved_hours=self.file_reserved_hours, delete_when_hour=self.delete_when_hour,
            timezone=self.timezone, disk_max_used_space_ratio=self.disk_max_used_space_ratio))


class ForecastSettings(_Section):
    """DESIGN.md §5.4: gold.backlog_forecast and its findings."""

    # a queue at or below this lag is caught up (a healthy lag wobbles by tens of messages)
    cleared_lag: int = Field(100, ge=0)
    window_minutes: int = Field(60, ge=1)
    # |net rate| at or below this fraction of max(arrival, drain) is FLAT
    flat_fraction: float = Field(0.05, ge=0, lt=1)
    # BACKLOG_GROWING: a group x topic with at least this backlog, GROWING or FLAT
    min_backlog: int = Field(1000, ge=0)
    loss_warn_hours: int = Field(24, ge=0)
    loss_critical_hours: int = Field(6, ge=0)
    # capacity advice: the smallest number of consumers to add that clears every queue by then
    clear_by: str = "08:00"
    clear_by_timezone: str = "UTC"

    @field_validator("clear_by")
    @classmethod
    def _clock(cls, value: str) -> str:
        if not re.match(r"^([01]\d|2[0-3]):[0-5]\d$", value):
            raise ValueError(f"clear_by {value!r} is not HH:MM")
        return value

    @field_validator("clear_by_timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        return _known_zone(value)


class NotifySettings(_Section):
    # apprise URLs for `rocketlens notify` when no --to is given (they may hold secrets: prefer
    # the env var ROCKETLENS__NOTIFY__URLS='["slack://…"]' or a --conf file readable by the job only)
    urls: list[str] = []
    min_severity: Literal["INFO", "WARN", "CRITICAL"] = "WARN"


class CollectSettings(_Section):
    """``rocketlens collect``'s ACL credentials (DESIGN.md §1): the RocketMQ ``accessKey`` /
    ``secretKey`` the admin requests are signed with (the brokers' ``aclEnable``); both empty =
    no ACL. Prefer the env vars ``ROCKETLENS__COLLECT__ACCESS_KEY`` / ``…__SECRET_KEY`` or a
    ``--conf`` file readable by the collector only; the values are never printed (see
    ``SECRET_SETTINGS``)."""

    access_key: str = Field("", repr=False)
    secret_key: str = Field("", repr=False)


# (section, key) of settings that are secrets: an env var's text is taken as it is (never parsed
# as a TOML scalar, so a numeric secret stays a string) and an error never shows the value
SECRET_SETTINGS = {("collect", "access_key"), ("collect", "secret_key")}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        case_sensitive=False,
    )

    engine: EngineSettings = EngineSettings()
    ingest: IngestSettings = IngestSettings()
    detection: DetectionSettings = DetectionSettings()
    severity: SeveritySettings = SeveritySettings()
    producer: ProducerSettings = ProducerSettings()
    forecast: ForecastSettings = ForecastSettings()
    retention: RetentionSettings = RetentionSettings()
    notify: NotifySettings = NotifySettings()
    collect: CollectSettings = CollectSettings()



def _settings_from(files: list[Path]) -> type[Settings]:
    """A Settings subclass reading ``files`` (most specific last) and the env vars."""

    class _Layered(Settings):
        @classmethod
        def settings_customise_sources(cls, settings_cls, init_settings, env_settings,
                                       dotenv_settings, file_secret_settings):
            # Earlier sources win: env vars, then the files from the most specific to base.toml.
            tomls = tuple(TomlConfigSettingsSource(settings_cls, toml_file=f) for f in reversed(files))
            return (init_settings, _TypedEnvSource(settings_cls), *tomls)

    return _Layered


class _TypedEnvSource(PydanticBaseSettingsSource):
    """Env vars ``ROCKETLENS__SECTION__KEY``; values are read as TOML scalars so strict types hold.

    ``ROCKETLENS__DETECTION__LIVENESS_WINDOW_SECONDS=120`` gives the int 120; a value that is not a
    TOML literal (``sail``) is taken as a string.
    """

    def get_field_value(self, field, field_name):  # pragma: no cover - unused, see __call__
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        import tomllib

        out: dict[str, dict[str, Any]] = {}
        for name, raw in os.environ.items():
            if not name.upper().startswith(ENV_PREFIX):
                continue
            parts = name[len(ENV_PREFIX) :].lower().split("__")
            if len(parts) != 2 or not all(parts):
                raise SettingsError(
                    f"invalid setting env var {name}: expected {ENV_PREFIX}SECTION__KEY"
                )
            try:
                value = raw if tuple(parts) in SECRET_SETTINGS else tomllib.loads(f"v = {raw}")["v"]
            except tomllib.TOMLDecodeError:
                value = raw
            out.setdefault(parts[0], {})[parts[1]] = value
        return out


def _format_error(exc: ValidationError, sources: str) -> str:
    err = exc.errors()[0]
    key = ".".join(str(p) for p in err["loc"])
    if err["type"] == "extra_forbidden":
        return f"unknown setting '{key}' (from {sources}); see conf/base.toml for the valid keys"
    value = "<hidden>" if tuple(str(p) for p in err["loc"][:2]) in SECRET_SETTINGS else repr(err.get("input"))
    return f"invalid setting '{key}' = {value}: {err['msg']} (from {sources})"


def load_settings(conf_file: str | Path | None = None, env: str | None = None,
                  conf_dir: str | Path | None = None) -> Settings:
    """Load the layered settings; raise :class:`SettingsError` with one line on any problem."""
    conf_dir = Path(conf_dir or os.environ.get("ROCKETLENS_CONF_DIR") or DEFAULT_CONF_DIR)
    env = env or os.environ.get("ROCKETLENS_ENV", "local")
    files: list[Path] = []
    for candidate in (conf_dir / "base.toml", conf_dir / f"{env}.toml"):
        if candidate.is_file():
            files.append(candidate)
    if conf_file is not None:
        path = Path(conf_file)
        if not path.is_file():
            raise SettingsError(f"settings file {path} not found; pass an existing --conf FILE")
        files.append(path)
    sources = ", ".join(str(f) for f in files) + f", env {ENV_PREFIX}*"
    try:
        loaded = _settings_from(files)()
        return Settings.model_validate(loaded.model_dump())
    except ValidationError as exc:
        raise SettingsError(_format_error(exc, sources)) from None
    except SettingsError:
        raise
    except Exception as exc:  # tomllib errors from a broken file
        raise SettingsError(f"cannot read settings ({sources}): {exc}".replace("\n", " ")) from None

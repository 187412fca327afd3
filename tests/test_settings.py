import tomllib

import pytest

from jobs.settings import DEFAULT_CONF_DIR, Settings, SettingsError, load_settings


def test_base_toml_matches_the_model_defaults():
    with open(DEFAULT_CONF_DIR / "base.toml", "rb") as fh:
        base = tomllib.load(fh)
    assert Settings().model_dump() == base


def test_prod_env_selects_classic_spark(monkeypatch):
    monkeypatch.setenv("ROCKETLENS_ENV", "prod")
    assert load_settings().engine.name == "spark"


def test_conf_file_overrides_env_file_and_env_var_overrides_both(tmp_path, monkeypatch):
    conf = tmp_path / "site.toml"
    conf.write_text("[detection]\nliveness_window_seconds = 60\norphan_min_duration_seconds = 30\n")
    monkeypatch.setenv("ROCKETLENS__DETECTION__LIVENESS_WINDOW_SECONDS", "45")
    settings = load_settings(conf)
    assert settings.detection.liveness_window_seconds == 45
    assert settings.detection.orphan_min_duration_seconds == 30
    assert settings.detection.stuck_min_duration_seconds == 300


def test_unknown_key_fails_with_one_line_naming_it(tmp_path):
    conf = tmp_path / "bad.toml"
    conf.write_text("[detection]\nliveness_window = 60\n")
    with pytest.raises(SettingsError) as err:
        load_settings(conf)
    message = str(err.value)
    assert "detection.liveness_window" in message and "\n" not in message


def test_unknown_env_var_key_fails(monkeypatch):
    monkeypatch.setenv("ROCKETLENS__SEVERITY__CRITICAL_LAGG", "5")
    with pytest.raises(SettingsError, match="severity.critical_lagg"):
        load_settings()


def test_wrong_type_is_rejected_not_coerced(tmp_path):
    conf = tmp_path / "bad.toml"
    conf.write_text('[severity]\ncritical_lag = "10000"\n')
    with pytest.raises(SettingsError, match="severity.critical_lag"):
        load_settings(conf)


def test_unknown_time_zone_is_rejected(monkeypatch):
    monkeypatch.setenv("ROCKETLENS__INGEST__CLIENT_LOG_TIMEZONE", "Mars/Olympus")
    with pytest.raises(SettingsError, match="client_log_timezone"):
        load_settings()


def test_per_host_log_zones_come_from_the_conf_in_order(tmp_path):
    from jobs.ingest.client_logs import LogZones

    conf = tmp_path / "zones.toml"
    conf.write_text('[ingest.client_log_timezones]\n"k8s-*" = "UTC"\n"*" = "Asia/Tokyo"\n')
    zones = load_settings(conf).ingest.log_zones()
    assert zones == LogZones("GMT+8", (("k8s-*", "UTC"), ("*", "Asia/Tokyo")))
    assert load_settings().ingest.log_zones() == "GMT+8"  # no map: the one zone


def test_an_unknown_zone_for_a_host_names_the_host(tmp_path):
    conf = tmp_path / "zones.toml"
    conf.write_text('[ingest.client_log_timezones]\n"k8s-*" = "Mars/Olympus"\n')
    with pytest.raises(SettingsError, match="k8s-\\*.*Mars/Olympus"):
        load_settings(conf)


def test_missing_conf_file_says_so(tmp_path):
    with pytest.raises(SettingsError, match="not found"):
        load_settings(tmp_path / "nope.toml")

"""The standalone cluster helper (tests/standalone_cluster.py) fails in one line, before starting
anything, when Java is missing or the master's port is taken; and the spark-submit it runs is
docs/operations.md's block with only the master, the driver's Python and the paths put in."""

import socket
import sys
from pathlib import Path

import pytest

from tests.standalone_cluster import (
    DOC_MASTER,
    ClusterUnavailable,
    documented_submit,
    standalone_cluster,
    submit_script,
)


def test_no_java_is_one_line_naming_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))  # no bin/java there
    with pytest.raises(ClusterUnavailable) as err, standalone_cluster(tmp_path / "c"):
        pass
    assert "\n" not in str(err.value) and "install a JDK 17" in str(err.value)
    assert not (tmp_path / "c").exists()  # nothing started


def test_a_taken_master_port_is_one_line_naming_the_port(tmp_path):
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(ClusterUnavailable) as err, \
                standalone_cluster(tmp_path / "c", master_port=port):
            pass
    assert "\n" not in str(err.value) and f"port {port} on 127.0.0.1 is taken" in str(err.value)


def test_the_submit_is_the_documented_block_with_this_cluster_put_in():
    block = documented_submit()
    script = submit_script("spark://127.0.0.1:7", Path("/l"), Path("/k"), ["a=b"])
    assert DOC_MASTER in block and "make dist\n" in block
    assert "--master spark://127.0.0.1:7 --deploy-mode client --conf a=b" in script
    assert "make dist" not in script and sys.executable in script
    assert "--landing /l --lake /k" in script
    # everything else as documented: the archive, the packages, the driver's Python setting
    for line in block.splitlines():
        if "--archives" in line or "--packages" in line or "tar -xzf" in line:
            assert line in script

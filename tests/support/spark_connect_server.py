"""Start a Spark Connect server for tests: the one shipped in the pyspark wheel, offline.

The pyspark package carries Spark's jars, its Connect server among them
(``jars/spark-connect_*.jar``, class ``org.apache.spark.sql.connect.service.SparkConnectServer``)
and ``bin/spark-submit``; the server runs as a child process with its own JVM, on a free port of
127.0.0.1, with an in-memory catalog and a warehouse in a temporary directory: a cluster in
miniature, which the client reaches only through ``sc://127.0.0.1:PORT``.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
_START_SECONDS = 300  # a loaded two-core machine can take minutes to start a JVM and Spark


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


@contextlib.contextmanager
def spark_connect_server(root: Path, overrides: dict[str, str] | None = None,
                         cores: int = 2, driver_memory: str = "2g") -> Iterator[str]:
    """A Connect server's URL for the duration of the block; the server is stopped after it.

    ``overrides`` replace the test session's Spark settings below (a benchmark gives the
    embedded backend's: more shuffle partitions, adaptive execution), and the server runs
    ``local[cores]`` with ``driver_memory``.
    """
    import pyspark

    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    port = _free_port()
    settings = {
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.sql.warehouse.dir": str(root / "warehouse"),
        "spark.sql.shuffle.partitions": "1",  # small data, as in the embedded test session
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.codegen.wholeStage": "false",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={root}",
        **(overrides or {}),
    }
    command = [str(submit), "--class", _SERVER_CLASS, "--master", f"local[{cores}]",
               "--driver-memory", driver_memory]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    command.append("spark-internal")
    log = root / "server.log"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    with log.open("wb") as out:
        server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                  cwd=root, start_new_session=True)
    try:
        deadline = time.monotonic() + _START_SECONDS
        while not _answers(port):
            if server.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the Spark Connect server did not start on port {port}:\n"
                                   f"{tail}")
            time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()

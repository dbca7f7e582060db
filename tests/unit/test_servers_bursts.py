"""The burst client: one connection, the idle periods between bursts."""

import http.server
import json
import threading
from collections.abc import Iterator

import pytest

from servers import bursts


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # persistent connections

    def do_GET(self) -> None:
        body = b"x" * int(self.path.rsplit("/", 1)[-1])
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def local_server() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_burst_client_one_connection_and_idle_periods(local_server: int, capsys: pytest.CaptureFixture[str]) -> None:
    argv = bursts.burst_client_argv("127.0.0.1", [("/5000", 0.0), ("/20000", 0.2)], port=local_server)
    assert argv[1:3] == ["-m", "servers.bursts"]
    assert bursts.main(argv[3:]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["http_version"] == "1.1"
    first, second = doc["bursts"]
    assert (first["size"], second["size"]) == (5_000, 20_000)
    assert first["local_port"] == second["local_port"]
    assert 0.2 <= second["idle_before"] < 0.3 and second["completion_time"] > 0

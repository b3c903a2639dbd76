"""Starts Arize Phoenix for the OTLP push tests with every port on 127.0.0.1.

Phoenix binds its HTTP server to PHOENIX_HOST but its gRPC OTLP receiver to all interfaces
(`[::]`); the tests send only OTLP/HTTP, so the gRPC receiver is bound to the loopback address
before Phoenix starts it. Usage: python serve.py (configured by PHOENIX_* variables).
"""

import sys

from grpc.aio import _server as grpc_aio_server

_add_insecure_port = grpc_aio_server.Server.add_insecure_port


def _loopback_only(self, address):
    host, _, port = address.rpartition(":")
    return _add_insecure_port(self, f"127.0.0.1:{port}")


grpc_aio_server.Server.add_insecure_port = _loopback_only

from phoenix.server.main import main  # noqa: E402

sys.argv = ["phoenix", "serve"]
sys.exit(main())

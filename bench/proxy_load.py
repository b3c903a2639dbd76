"""Overhead of `looptrace proxy` against direct calls to the same local upstream.

usage: proxy_load.py LOOPTRACE OUT_DIR [CALLS] [CONCURRENT_ROUNDS]

Starts a threaded upstream on 127.0.0.1 that answers Chat Completions at once (a JSON body, or
ten server-sent events when `stream` is true), then a recording proxy in front of it, and times:

1. one client, keep-alive, CALLS non-streaming calls alternating direct and through the proxy:
   the median and p90 of each, and their difference (the proxy's overhead per call);
2. 64 clients at once, each making CONCURRENT_ROUNDS streaming calls, direct then through the
   proxy: p50/p99 of the whole call (until the last event) and the proxy's peak RSS (VmHWM),
   read after the first round and at the end, so a growth in memory with the number of calls
   shows.

Prints one JSON object. Loopback only; every loop is bounded.
"""

import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Upstream(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Without these, a reply leaves in two writes and Nagle's algorithm meets the client's
    # delayed ACK: 40 ms a call that are the benchmark's, not the server's.
    disable_nagle_algorithm = True
    wbufsize = -1

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        body = json.loads(self.rfile.read(length))
        if body.get("stream"):
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for i in range(10):
                event = json.dumps({"id": "c", "choices": [{"index": 0, "delta": {"content": f"w{i} "}}]})
                data = f"data: {event}\n\n".encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()  # one event, one write: as a model server streams
            done = b"data: [DONE]\n\n"
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(done), done))
            self.wfile.flush()
            return
        reply = json.dumps({
            "id": "c", "object": "chat.completion", "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1},
        }).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)
        self.wfile.flush()


def request(n, stream):
    return json.dumps({
        "model": "m", "stream": stream,
        "messages": [{"role": "user", "content": f"task {n}: " + "x" * 2000}],
    })


def call(connection, body):
    start = time.perf_counter()
    connection.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
    response = connection.getresponse()
    response.read()
    return time.perf_counter() - start


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def concurrent(port, rounds, offset):
    times, lock = [], threading.Lock()

    def client(k):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for r in range(rounds):
            spent = call(connection, request(offset + k * rounds + r, True))
            with lock:
                times.append(spent)
        connection.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times


def main():
    looptrace, out_dir = sys.argv[1], sys.argv[2]
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    ThreadingHTTPServer.request_queue_size = 256  # 64 clients connect at once
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = server.server_address[1]
    trace = os.path.join(out_dir, "proxy-bench.jsonl")
    if os.path.exists(trace):
        os.remove(trace)
    proxy = subprocess.Popen(
        [looptrace, "proxy", "--upstream", f"http://127.0.0.1:{upstream}", "--record", trace,
         "--listen", "127.0.0.1:0"],
        stderr=subprocess.PIPE, text=True,
    )
    port = int(proxy.stderr.readline().strip().rsplit(":", 1)[1])
    direct = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
    through = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for n in range(50):  # warm-up
        call(direct, request(n, False))
        call(through, request(n, False))
    d, p = [], []
    for n in range(calls):
        d.append(call(direct, request(n, False)))
        p.append(call(through, request(n, False)))
    single = {
        "calls": calls,
        "direct_median_ms": statistics.median(d) * 1e3,
        "proxy_median_ms": statistics.median(p) * 1e3,
        "overhead_median_ms": (statistics.median(p) - statistics.median(d)) * 1e3,
        "direct_p90_ms": percentile(d, 0.9) * 1e3,
        "proxy_p90_ms": percentile(p, 0.9) * 1e3,
    }
    first_direct = concurrent(upstream, 1, 10_000)
    first_proxy = concurrent(port, 1, 10_000)
    rss_after_first = peak_rss_kib(proxy.pid)
    cd = first_direct + concurrent(upstream, rounds - 1, 20_000)
    cp = first_proxy + concurrent(port, rounds - 1, 20_000)
    rss_end = peak_rss_kib(proxy.pid)
    many = {
        "clients": 64,
        "calls_each": rounds,
        "direct_p50_ms": percentile(cd, 0.5) * 1e3,
        "direct_p99_ms": percentile(cd, 0.99) * 1e3,
        "proxy_p50_ms": percentile(cp, 0.5) * 1e3,
        "proxy_p99_ms": percentile(cp, 0.99) * 1e3,
        "proxy_peak_rss_kib_after_64_calls": rss_after_first,
        "proxy_peak_rss_kib_after_all": rss_end,
    }
    proxy.send_signal(signal.SIGTERM)
    proxy.wait(timeout=60)
    print(json.dumps({"one_client": single, "streaming_64": many}, indent=2))


if __name__ == "__main__":
    main()

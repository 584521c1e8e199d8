#!/usr/bin/env python3
"""A small HTTP proxy for the object store tests: forwards GET and HEAD to an upstream server
(nginx) and injects faults on demand.

    fault_proxy.py UPSTREAM_PORT      prints "PORT <n>" once it listens on 127.0.0.1:<n>

Control (answered by the proxy itself, never forwarded):
    GET /__fault__?mode=M&count=N[&delay_ms=D][&status=S][&p=P&seed=X]
        the next N data requests (N=-1: all) get fault M, later ones pass through:
          status        answer S (default 503) with a short body (Retry-After: 0 for 429/503)
          slow          wait D ms, then pass through
          reset         send the headers and half the body, then reset the connection (RST)
          truncate      send the headers and half the body, then close (FIN)
          long_length   claim 16 more bytes in Content-Length than are sent, then close
          short_length  claim 16 fewer bytes in Content-Length than the body has
          wrong_range   answer bytes one further than asked, saying so in Content-Range
          ignore_range  answer 200 with the whole value (servers may ignore Range)
          chaos         with probability P (seeded by X) one of status/reset/truncate/
                        long_length/short_length/wrong_range, else pass through
    GET /__stats__   -> JSON {"requests": data requests seen, "faults": faults injected}
Only the standard library; run with /usr/bin/python3.
"""
import http.client
import http.server
import json
import random
import socket
import socketserver
import struct
import sys
import threading
import time
import urllib.parse

UPSTREAM = int(sys.argv[1])
LOCK = threading.Lock()
STATE = {"mode": "none", "count": 0, "delay_ms": 0, "status": 503, "p": 0.0,
         "rng": random.Random(0), "requests": 0, "faults": 0}


def take_fault():
    """The fault for the next data request, or None."""
    with LOCK:
        STATE["requests"] += 1
        if STATE["mode"] == "none" or STATE["count"] == 0:
            return None
        if STATE["count"] > 0:
            STATE["count"] -= 1
        mode = STATE["mode"]
        if mode == "chaos":
            if STATE["rng"].random() >= STATE["p"]:
                return None
            mode = STATE["rng"].choice(["status", "reset", "truncate", "long_length", "short_length", "wrong_range"])
        STATE["faults"] += 1
        return mode


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def upstream(self, method, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=30)
        conn.request(method, self.path, headers=headers or {})
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        return resp.status, [(k, v) for k, v in resp.getheaders() if k.lower() not in ("connection", "keep-alive")], body

    def send(self, status, headers, body, close=False):
        self.send_response_only(status)
        for k, v in headers:
            self.send_header(k, v)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if body:
            self.wfile.write(body)
        self.wfile.flush()

    def control(self):
        url = urllib.parse.urlparse(self.path)
        q = dict(urllib.parse.parse_qsl(url.query))
        if url.path == "/__fault__":
            with LOCK:
                STATE.update(mode=q.get("mode", "none"), count=int(q.get("count", "-1")),
                             delay_ms=int(q.get("delay_ms", "0")), status=int(q.get("status", "503")),
                             p=float(q.get("p", "0")), rng=random.Random(int(q.get("seed", "0"))),
                             requests=0, faults=0)
            body = b"ok"
        else:
            with LOCK:
                body = json.dumps({"requests": STATE["requests"], "faults": STATE["faults"]}).encode()
        self.send(200, [("Content-Length", str(len(body)))], body)

    def handle_any(self, method):
        if self.path.startswith("/__"):
            return self.control()
        fault = take_fault()
        fwd = {}
        if self.headers.get("Range") and fault != "ignore_range":
            fwd["Range"] = self.headers["Range"]
        if fault == "wrong_range" and "Range" in fwd:
            # Ask upstream for the range one byte further on, and pass its honest Content-Range on.
            spec = fwd["Range"][len("bytes="):]
            first, _, last = spec.partition("-")
            if first and last:
                fwd["Range"] = "bytes=%d-%d" % (int(first) + 1, int(last) + 1)
            elif first:
                fwd["Range"] = "bytes=%d-" % (int(first) + 1)
        if fault == "slow":
            time.sleep(STATE["delay_ms"] / 1000.0)
        if fault == "status":
            code = STATE["status"]
            body = b"injected fault\n"
            hdrs = [("Content-Length", str(len(body)))]
            if code in (429, 503):
                hdrs.append(("Retry-After", "0"))
            return self.send(code, hdrs, body if method == "GET" else b"")
        status, headers, body = self.upstream(method, fwd)
        if method == "HEAD" or fault in (None, "slow", "ignore_range", "wrong_range"):
            return self.send(status, headers, body if method == "GET" else b"")
        others = [(k, v) for k, v in headers if k.lower() != "content-length"]
        half = body[: len(body) // 2]
        if fault in ("reset", "truncate"):
            self.send_response_only(status)
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(half)
            self.wfile.flush()
            if fault == "reset":
                # SO_LINGER with a zero timeout turns close() into a TCP RST.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        if fault == "long_length":
            return self.send(status, others + [("Content-Length", str(len(body) + 16))], body, close=True)
        if fault == "short_length":
            n = max(0, len(body) - 16)
            return self.send(status, others + [("Content-Length", str(n))], body, close=True)
        raise AssertionError(fault)

    def do_GET(self):
        self.handle_any("GET")

    def do_HEAD(self):
        self.handle_any("HEAD")


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    server = Server(("127.0.0.1", 0), Handler)
    print("PORT %d" % server.server_address[1], flush=True)
    # Exit when the test that started us goes away (its end of our stdin closes).
    threading.Thread(target=lambda: (sys.stdin.read(), server.shutdown()), daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()

"""Baseline SSE reader for qualkit's client benchmark: Python standard library only, one thread
per stream, blocking socket reads. Each thread sends one streamed chat completion over a plain
socket and stamps every "data:" line with time.monotonic_ns() (CLOCK_MONOTONIC on Linux) as
soon as the buffered reader's readline() returns it (the chunked framing lines in between are
skipped); it stops at "data: [DONE]". All threads send together after a barrier.

usage: sse_reader.py HOST PORT STREAMS MAX_TOKENS
prints one JSON object per stream: {"id": ..., "stamps": [...], "err": ...}
"""
import json
import socket
import sys
import threading
import time


def stream(host, port, request, barrier, out, i):
    stamps, rid, err = [], "", None
    sock = None
    try:
        sock = socket.create_connection((host, port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        f = sock.makefile("rb", buffering=65536)
        barrier.wait()
        sock.sendall(request)
        status = f.readline()
        if b" 200 " not in status:
            raise RuntimeError("status " + status.decode(errors="replace").strip())
        while True:
            line = f.readline()
            if not line:
                raise RuntimeError("connection closed before data: [DONE]")
            if line.startswith(b"data:"):
                stamps.append(time.monotonic_ns())
                if not rid:
                    k = line.find(b'"id":"')
                    if k >= 0:
                        rid = line[k + 6:line.index(b'"', k + 6)].decode()
                if line.startswith(b"data: [DONE]"):
                    break
    except Exception as e:  # recorded, never fatal
        err = repr(e)
    finally:
        if sock is not None:
            sock.close()
    out[i] = {"id": rid, "stamps": stamps, "err": err}


def main():
    host, port, n, max_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    body = json.dumps({"model": "qualsim-tiny", "messages": [{"role": "user", "content": "hello there"}],
                       "max_tokens": max_tokens, "stream": True, "stream_options": {"include_usage": True},
                       "ignore_eos": True}).encode()
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
               b"Accept: text/event-stream\r\nContent-Length: %d\r\n\r\n" % (host.encode(), port, len(body))) + body
    barrier = threading.Barrier(n)
    out = [None] * n
    threads = [threading.Thread(target=stream, args=(host, port, request, barrier, out, i)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for o in out:
        print(json.dumps(o))


if __name__ == "__main__":
    main()

"""Open-loop baseline for qualkit's arrival benchmark: Python standard library asyncio, the shape
of vLLM's `bench serve` client (an asyncio dispatcher that sleeps until each arrival with
asyncio.sleep and starts a task per request). Keep-alive connections are pooled (at most
INFLIGHT requests at once; an arrival that finds every slot busy waits). Each task records its
send time (time.monotonic_ns() just before the request is written) and reads the streamed
response to "data: [DONE]" and the chunked terminator.

usage: openloop_reader.py HOST PORT MAX_TOKENS INFLIGHT < offsets (ns from the start, one a line)
prints one JSON object: {"sched": [...], "send": [...], "failed": n} (ns from the start)
"""
import asyncio
import json
import sys
import time


async def main():
    host, port, max_tokens, inflight = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    offsets = [int(x) for x in sys.stdin.read().split()]
    body = json.dumps({"model": "qualsim-tiny", "messages": [{"role": "user", "content": "hello there"}],
                       "max_tokens": max_tokens, "stream": True, "stream_options": {"include_usage": True},
                       "ignore_eos": True}).encode()
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
               b"Accept: text/event-stream\r\nContent-Length: %d\r\n\r\n" % (host.encode(), port, len(body))) + body
    sem = asyncio.Semaphore(inflight)
    pool = []
    send = [0] * len(offsets)
    failed = 0

    async def one(i, t0):
        nonlocal failed
        try:
            conn = pool.pop() if pool else await asyncio.open_connection(host, port)
            reader, writer = conn
            send[i] = time.monotonic_ns() - t0
            writer.write(request)
            status = await reader.readline()
            if b" 200 " not in status:
                raise RuntimeError(status)
            done = False
            while True:
                line = await reader.readline()
                if not line:
                    raise RuntimeError("closed")
                if line.startswith(b"data: [DONE]"):
                    done = True
                if done and line == b"0\r\n":
                    await reader.readline()
                    break
            pool.append(conn)
        except Exception:
            failed += 1
        finally:
            sem.release()

    tasks = []
    t0 = time.monotonic_ns()
    for i, off in enumerate(offsets):
        delay = (t0 + off - time.monotonic_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        await sem.acquire()
        tasks.append(asyncio.create_task(one(i, t0)))
    await asyncio.gather(*tasks)
    print(json.dumps({"sched": offsets, "send": send, "failed": failed}))


if __name__ == "__main__":
    asyncio.run(main())

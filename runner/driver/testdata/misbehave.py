"""A worker for the driver's own tests: it checks the start gate like a real worker, then does
one thing a test needs to observe. Standard library only.

  env           print the environment (NAME=VALUE, sorted) to stderr
  identity      print argv, uid, capabilities, the executable file and sys.executable to stderr
  sleep S       sleep S seconds, then write an output
  ignore-term   ignore SIGTERM and sleep a minute
  setsid-child  start a child in a new session that sleeps a minute, then exit 0 at once
  connect PORT  try 127.0.0.1:PORT; exit 4 if it connects
  exit N        exit with code N
"""
import os
import signal
import socket
import sys
import time

gate = os.environ.get("QUALKIT_START_GATE", "")
try:
    with open(gate, "rb") as f:
        ok = f.read() == b"go\n"
except OSError:
    ok = False
if not ok:
    sys.stderr.write("misbehave: no start gate at %r\n" % gate)
    sys.exit(3)


def output():
    with open(os.environ["QUALKIT_DRIVER_OUTPUT"], "w") as f:
        f.write("{}\n")


mode = sys.argv[1]
if mode == "env":
    for k in sorted(os.environ):
        sys.stderr.write("%s=%s\n" % (k, os.environ[k]))
elif mode == "identity":
    with open("/proc/self/status") as f:
        caps = [l.strip() for l in f if l.startswith(("CapEff", "CapPrm", "CapBnd", "NoNewPrivs"))]
    sys.stderr.write("argv=%r\nuid=%d\nexe=%s\nexecutable=%s\n%s\n" % (sys.argv, os.getuid(), os.readlink("/proc/self/exe"), sys.executable, "\n".join(caps)))
    with open(sys.argv[0], "rb") as f:
        sys.stderr.write("script_bytes=%d\n" % len(f.read()))
elif mode == "sleep":
    time.sleep(float(sys.argv[2]))
elif mode == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.stderr.write("ignoring SIGTERM\n")
    sys.stderr.flush()
    time.sleep(60)
elif mode == "setsid-child":
    pid = os.fork()
    if pid == 0:
        os.setsid()
        os.closerange(0, 1024)
        time.sleep(60)
        os._exit(0)
    sys.stderr.write("child %d\n" % pid)
elif mode == "connect":
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=2).close()
    except OSError as e:
        sys.stderr.write("connect failed: %s\n" % e)
    else:
        sys.stderr.write("connected\n")
        sys.exit(4)
elif mode == "exit":
    sys.exit(int(sys.argv[2]))
output()

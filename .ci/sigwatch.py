#!/usr/bin/env python3
"""Run a CI step and, if a terminating signal reaches this process, say who sent it.

Stop 32's CI ended with exit 143 (SIGTERM) 119 s into `make test`, with nothing printed that named
the sender. This wrapper stays in the step's process group, so a signal sent to the group (kill(0,
...)) or to every process (kill(-1, ...)) reaches it as well as the step; it then prints the
sender's PID, UID and command line and the process tree of that moment to stderr, passes SIGTERM
to the step and exits 128 + the signal's number. Without a signal it exits with the step's status.

usage: sigwatch.py COMMAND [ARG...]
"""
import os
import signal
import subprocess
import sys
import threading

WATCHED = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
DONE = signal.SIGUSR1


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            line = f.read(4096).replace(b"\0", b" ").decode("utf-8", "replace").strip()
        return line if len(line) <= 300 else line[:300] + " …"
    except OSError as e:
        return f"(unreadable: {e.strerror})"


def ancestry(pid):
    out = []
    while pid > 1 and len(out) < 32:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            break
        fields = stat[stat.rindex(")") + 2:].split()
        out.append(f"{pid} (pgid {fields[2]}): {cmdline(pid)}")
        pid = int(fields[1])
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: sigwatch.py COMMAND [ARG...]")
    signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED | {DONE})
    child = subprocess.Popen(sys.argv[1:], preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_SETMASK, set()))
    status = {}

    def wait():
        status["rc"] = child.wait()
        os.kill(os.getpid(), DONE)

    threading.Thread(target=wait, daemon=True).start()
    info = signal.sigwaitinfo(WATCHED | {DONE})
    if info.si_signo == DONE:
        rc = status["rc"]
        sys.exit(rc if rc >= 0 else 128 - rc)
    name = signal.Signals(info.si_signo).name
    sys.stderr.write(f"\n== sigwatch: {name} reached the CI step {sys.argv[1:]!r} "
                     f"from pid {info.si_pid} (uid {info.si_uid}, si_code {info.si_code}; pid 0: outside this PID namespace or the kernel)\n")
    for line in ancestry(info.si_pid) if info.si_pid > 0 else []:
        sys.stderr.write(f"   sender chain: {line}\n")
    sys.stderr.write(f"   this process: pid {os.getpid()}, pgid {os.getpgid(0)}\n")
    sys.stderr.flush()
    subprocess.run(["ps", "-eo", "pid,ppid,pgid,sid,etimes,args", "--forest"], stdout=sys.stderr, check=False)
    try:
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        child.kill()
    sys.exit(128 + info.si_signo)


if __name__ == "__main__":
    main()

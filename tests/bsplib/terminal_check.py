#!/usr/bin/env python3
"""tests/bsplib/terminal_check.py -- run a job as a user at a terminal would.

    terminal_check.py [--pty] [--timeout S] [--answer REGEX=TEXT ...]
                      [--before REGEX1=REGEX2=SECONDS ...] -- COMMAND ...

--pty runs COMMAND on a new pseudo-terminal (stdin, stdout and stderr), as
an interactive shell would, otherwise with stdout and stderr on a pipe and
no stdin. --answer: once the output matches REGEX, TEXT and a newline are
typed (in order, each once). --before: a line matching REGEX1 must have
arrived at least SECONDS before the first line matching REGEX2 (output
reaches the terminal line by line, not at exit). Prints the output, each
line with its arrival time, and exits with COMMAND's status, or 124 after
--timeout seconds (COMMAND and its process group are killed), or 3 when a
--before rule fails.
"""
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time


def main(argv):
    use_pty, timeout, answers, befores = False, 60.0, [], []
    i = 0
    while i < len(argv) and argv[i] != "--":
        a = argv[i]
        if a == "--pty":
            use_pty = True
        elif a == "--timeout":
            i += 1
            timeout = float(argv[i])
        elif a == "--answer":
            i += 1
            rx, text = argv[i].split("=", 1)
            answers.append((re.compile(rx), text))
        elif a == "--before":
            i += 1
            r1, r2, secs = argv[i].rsplit("=", 2)
            befores.append((re.compile(r1), re.compile(r2), float(secs)))
        else:
            sys.exit("terminal_check.py: unknown option " + a)
        i += 1
    cmd = argv[i + 1:]
    if not cmd:
        sys.exit("terminal_check.py: no command")
    t0 = time.time()
    if use_pty:
        pid, fd = pty.fork()
        if pid == 0:
            os.execvp(cmd[0], cmd)
    else:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        pid, fd = proc.pid, proc.stdout.fileno()
    out, lines, partial = "", [], ""
    status = None
    while True:
        if time.time() - t0 > timeout:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(pid, 0)
            status = 124
            print("terminal_check.py: no end after %g s: killed" % timeout)
            break
        r, _, _ = select.select([fd], [], [], 0.1)
        data = b""
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the pty's other side closed
                data = b""
            if not data:
                break
        text = data.decode(errors="replace").replace("\r", "")
        out += text
        partial += text
        while "\n" in partial:
            line, partial = partial.split("\n", 1)
            lines.append((time.time() - t0, line))
        while answers and answers[0][0].search(out):
            os.write(fd, (answers[0][1] + "\n").encode())
            answers.pop(0)
    if status is None:
        _, st = os.waitpid(pid, 0)
        status = os.waitstatus_to_exitcode(st)
    if partial:
        lines.append((time.time() - t0, partial))
    for t, line in lines:
        print("%7.3f %s" % (t, line))
    for r1, r2, secs in befores:
        t1 = next((t for t, l in lines if r1.search(l)), None)
        t2 = next((t for t, l in lines if r2.search(l)), None)
        if t1 is None or t2 is None or t2 - t1 < secs:
            print("terminal_check.py: /%s/ at %s, /%s/ at %s: not %g s before" %
                  (r1.pattern, t1, r2.pattern, t2, secs))
            status = 3
    if answers:
        print("terminal_check.py: never asked for: " + ", ".join(a[0].pattern for a in answers))
        status = status or 3
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

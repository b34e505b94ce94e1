#!/usr/bin/env python3
"""A stranger on the network who knows a job's tag (public: squeue shows job and
step ids) and its hub's TCP port, but not the job key (issue 13). Used by
slurm_single.sh while a job runs; the job must neither notice nor end.

Usage: stranger.py PORT TAG [CONNECTIONS]
Sends, each on its own connection: a Hello of the protocol before the
handshake claiming pid 1 (which used to end the job with "connected twice"),
a Hello with a forged proof after reading the hub's challenge, a message
other than Hello first, a 1 GiB frame header with 256 KiB of it, and
CONNECTIONS connections that say nothing. Prints what the hub did with each."""
import os
import socket
import struct
import sys

port, tag = int(sys.argv[1]), sys.argv[2].encode()
idle = int(sys.argv[3]) if len(sys.argv) > 3 else 100


def frame(msg_type, payload):
    return struct.pack("<IB", len(payload) + 1, msg_type) + payload


def hello(rank):
    # i32 rank, i32 os pid, u32 protocol, u32 wire, u32 byte-order mark; tag, NUL, host
    return struct.pack("<iiIII", rank, 4242, 2, 4, 0x01020304) + tag + b"\0" + b"stranger"


def connect():
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def outcome(s):
    """What the hub did: 'closed' (EOF), or the bytes it sent, after our message."""
    s.settimeout(8)
    got = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return "closed after %d bytes" % len(got)
            got += chunk
    except socket.timeout:
        return "still open after %d bytes" % len(got)
    except OSError as e:
        return "error %s after %d bytes" % (e.strerror, len(got))


results = {}
s = connect()
s.sendall(frame(1, hello(1)))
results["unproven hello claiming pid 1"] = outcome(s)
s.close()

s = connect()
s.settimeout(5)
challenge = s.recv(4096)
body = hello(1)
s.sendall(frame(1, body + os.urandom(32) + os.urandom(32)))
results["hello with a forged proof"] = outcome(s)
s.close()

s = connect()
s.sendall(frame(4, struct.pack("<i", 1) + b"stranger says stop"))
results["abort before any hello"] = outcome(s)
s.close()

s = connect()
try:
    s.sendall(struct.pack("<I", 1 << 30) + b"A" * (256 * 1024))
except OSError:
    pass
results["1 GiB frame header"] = outcome(s)
s.close()

held = []
for _ in range(idle):
    try:
        held.append(connect())
    except OSError:
        pass
results["%d silent connections" % idle] = "opened %d" % len(held)
for h in held:
    h.close()

for k, v in results.items():
    print("stranger: %s: %s" % (k, v))

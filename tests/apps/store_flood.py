#!/usr/bin/env python3
"""A hostile neighbour of a ringgrad job: floods the rendezvous store at 127.0.0.1:PORT.

    store_flood.py PORT SILENT SLOW STATUS_FILE

Keeps SILENT connections open that never say a word (reopening those the server closes, at
most RATE a second) and SLOW ones that trickle a well-formed hello one byte every 0.2 s, so
that they never finish it in time. Runs until killed. Once the first SILENT connections have
all been tried it prints "flood: full strength"; STATUS_FILE always holds the counts so far:
    opened=N closed_by_server=N slow_cut=N refused=N
Deterministic in what it sends; only the timing of the server's closes varies. stdlib only.
"""
import errno
import os
import resource
import selectors
import socket
import struct
import sys
import time

RATE = 1000  # reopened silent connections per second, at most
TICK = 0.1


def main():
    port, silent_n, slow_n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    status_file = sys.argv[4]
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    silent_n = min(silent_n, hard - slow_n - 64)  # our own descriptors are limited too
    hello = struct.pack("=II", 0x52475332, 64) + b"s" * 64  # magic "RGS2", a 64-byte token
    sel = selectors.DefaultSelector()
    counts = dict(opened=0, closed_by_server=0, slow_cut=0, refused=0)
    slow = {}  # socket -> bytes of the hello sent

    def open_one(kind):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        rc = s.connect_ex(("127.0.0.1", port))
        if rc not in (0, errno.EINPROGRESS):
            counts["refused"] += 1
            s.close()
            return False
        counts["opened"] += 1
        sel.register(s, selectors.EVENT_READ, kind)
        if kind == "slow":
            slow[s] = 0
        return True

    def write_status():
        with open(status_file + ".new", "w") as f:
            f.write(" ".join(f"{k}={v}" for k, v in counts.items()) + "\n")
        os.replace(status_file + ".new", status_file)

    for _ in range(slow_n):
        open_one("slow")
    silent_open = 0
    for _ in range(silent_n):
        silent_open += open_one("silent")
    print(f"flood: full strength ({silent_open} silent, {slow_n} slow)", flush=True)
    write_status()
    next_trickle = next_refill = time.monotonic()
    while True:
        for key, _ in sel.select(TICK):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as e:
                data = b""
                refused = e.errno == errno.ECONNREFUSED  # nobody listens (yet, or any more)
            else:
                refused = False
            if data:
                continue  # (a refusal verdict; the close follows)
            sel.unregister(s)
            s.close()
            if refused:
                counts["refused"] += 1
                counts["opened"] -= 1
            if key.data == "slow":
                counts["slow_cut"] += not refused
                del slow[s]
                open_one("slow")
            else:
                counts["closed_by_server"] += not refused
                silent_open -= 1
        now = time.monotonic()
        if now >= next_refill:  # at most RATE * TICK reopened per TICK
            next_refill = now + TICK
            for _ in range(min(silent_n - silent_open, int(RATE * TICK))):
                silent_open += open_one("silent")
        if now >= next_trickle:
            next_trickle += 0.2
            for s, sent in list(slow.items()):
                if sent < len(hello):
                    try:
                        s.send(hello[sent:sent + 1])
                        slow[s] = sent + 1
                    except OSError:
                        pass
        write_status()


if __name__ == "__main__":
    main()

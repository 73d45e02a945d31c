#!/usr/bin/python3
"""Seeds for fuzz_frame from real captures.

  gen_frame_corpus.py OUTDIR CAPTURE...

Each pcap or pcapng CAPTURE (what tcpdump, dumpcap and the kernel made in
tests/cli/defrag_links.sh, and the captures built from them there) is cut
into runs of consecutive records of at most 6,000 bytes, written as
fuzz_frame inputs (see tests/fuzz/fuzz_frame.c): a configuration byte, then
[link type][flags][be16 length][frame] per record, the link type as an
index into the target's list, the time step the nearest of its steps at or
below the capture's. At most 8 runs per capture; the configuration byte
turns late duplicates on in every other run and takes the policy in turn.
Then merge: fuzz_frame -merge=1 CORPUS OUTDIR.
"""
import hashlib, os, struct, sys

from scapy.utils import RawPcapNgReader, RawPcapReader

# in the order of tests/fuzz/fz_linktypes.h
LINKTYPES = [1, 113, 276, 0, 108, 9, 50, 51, 104, 101, 228, 229, 239, 105, 127]
STEPS = [0, 10**6, 10**8, 9 * 10**8, 11 * 10**8, 10**10, 31 * 10**9, 61 * 10**9]


def records(path):
    with open(path, "rb") as f:
        ng = f.read(4) == b"\x0a\x0d\x0d\x0a"
    r = (RawPcapNgReader if ng else RawPcapReader)(path)
    for data, meta in r:
        if ng:
            lt = meta.linktype
            ts = ((meta.tshigh << 32) | meta.tslow) * 10**9 // meta.tsresol
            # scapy does not say which interface; the link type tells them apart
            iface = [i[0] for i in r.interfaces].index(lt)
        else:
            lt = r.linktype
            ts = meta.sec * 10**9 + (meta.usec * (1 if r.nano else 1000))
            iface = 0
        yield lt, ts, iface, bytes(data)


def step_of(d):
    return max(i for i, s in enumerate(STEPS) if s <= max(d, 0))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    n = 0
    for path in sys.argv[2:]:
        recs = list(records(path))
        runs, cur, size = [], [], 0
        for r in recs:
            if len(r[3]) > 6000:
                continue
            if cur and size + len(r[3]) + 4 > 6000:
                runs.append(cur)
                cur, size = [], 0
            cur.append(r)
            size += len(r[3]) + 4
        if cur:
            runs.append(cur)
        for k, run in enumerate(runs[:8]):
            cfg = (k & 1) | ((k // 2 % 8) << 2)
            b = bytes([cfg])
            last = run[0][1]
            for lt, ts, iface, data in run:
                sel = LINKTYPES.index(lt) if lt in LINKTYPES else (lt if lt < 256 else 255)
                fl = step_of(ts - last) | ((iface & 1) << 4)
                last = ts
                b += bytes([sel, fl]) + struct.pack(">H", len(data)) + data
            name = hashlib.sha1(b).hexdigest()
            with open(os.path.join(out, name), "wb") as f:
                f.write(b)
            n += 1
    print(n, "seeds")


if __name__ == "__main__":
    main()

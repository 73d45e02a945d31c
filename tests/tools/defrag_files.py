#!/usr/bin/python3
"""Captures for the file-handling tests of `rxpath defrag` (tests/cli/), and
the tshark side of the comparison.

  defrag_files.py gen DIR        writes into DIR:
      flight.pcap   SENDERS x N UDP datagrams of 4 shuffled fragments, IN_FLIGHT
                    datagrams interleaved at once (nanosecond pcap)
      flight6.pcap  the same over IPv6 (microsecond pcap)
      raw6.pcap     the same packets as flight6.pcap without their Ethernet
                    header (raw IP link type)
      skew_fwd.pcap flight.pcap with one unrelated packet stamped 1000 s ahead
                    in the middle
      skew_back.pcap the same 1000 s behind, and one incomplete datagram whose
                    queue a later 31 s gap must still expire
      twosrc.pcap   datagrams from two sources (for --filter)
      events.pcap   one of each --report event (see events())
      anydup.pcap   tcpdump -i any on a router: every frame twice, IDs wrapping
                    (see anydup), with anydup.pcap.truth
      overlap.pcap  for --policy all: datagram 1 without overlap, 2 with a
                    fragment overlapping the first with other bytes (IPv4),
                    3 the same over IPv6, 4 an overlap with the same bytes,
                    5 other bytes inside a run, which strict delivers
  defrag_files.py report PCAP JSONL
      checks the --report of events.pcap (see report_check)
  defrag_files.py payloads FILE [defrag]
      prints the sorted SHA-256 of every complete UDP payload tshark sees in
      FILE, one per line: with "defrag", with tshark's own reassembly (what
      rxpath must match); without, fragments are not reassembled (what rxpath
      wrote)
"""
import hashlib, json, random, subprocess, sys

from scapy.all import IP, IPv6, UDP, Ether, Raw, fragment, fragment6, wrpcap
from scapy.utils import PcapWriter


def payload(n, seed):
    r = random.Random(seed)
    return bytes(r.randrange(256) for _ in range(n))


def flight(n, in_flight, v6=False, src="10.8.0.1", seed=1, t0=1000.0, gap=0.0001):
    """n datagrams, 4 fragments each, in_flight interleaved at once."""
    rnd = random.Random(seed)
    out, t = [], t0
    for base in range(0, n, in_flight):
        frs = []
        for i in range(base, min(n, base + in_flight)):
            data = payload(4 * 1000 - 8, seed * 100000 + i)
            if v6:
                ip = IPv6(src="2001:db8::" + src.split(".")[-1], dst="2001:db8::99") / UDP(
                    sport=4000, dport=5000) / Raw(data)
                from scapy.all import IPv6ExtHdrFragment
                ip = IPv6(src=ip.src, dst=ip.dst) / IPv6ExtHdrFragment(id=i + 1) / ip.payload
                frs += fragment6(ip, 1062)
            else:
                ip = IP(src=src, dst="10.8.0.99", id=i + 1) / UDP(sport=4000, dport=5000) / Raw(data)
                frs += fragment(ip, fragsize=1000)
        rnd.shuffle(frs)
        for p in frs:
            e = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / p
            e.time = t
            t += gap
            out.append(e)
    return out


def write(path, pkts, nano=True):
    w = PcapWriter(path, nano=nano, linktype=1)
    for p in pkts:
        w.write(p)
    w.close()


def anydup(path, n=800, idmod=256, seed=9, batched=False):
    """What tcpdump -i any on a router captures of a forwarded flow: every
    frame twice, the copy going out with other MACs and a TTL (hop limit)
    one lower. n UDP datagrams of 2 fragments, IPv4 and IPv6 in turn, IDs
    wrapping at idmod (as a busy sender's wrap at 65,536) so that a late
    copy of a completing fragment meets the next datagram with its ID.
    batched: every third datagram's copies go out only after both
    fragments came in (as a router that forwards a datagram's fragments
    once it has them all), so that the first fragment's copy is late too.
    Writes path and path.truth (the sorted SHA-256 of every payload)."""
    import struct
    r = random.Random(seed)

    def csum(b):
        v = sum(struct.unpack("!%dH" % (len(b) // 2), b))
        while v >> 16:
            v = (v & 0xffff) + (v >> 16)
        return (~v) & 0xffff

    truth, frames, t = [], [], 1000.0
    for i in range(n):
        data = bytes(r.randrange(256) for _ in range(1992))
        truth.append(hashlib.sha256(data).hexdigest())
        udp = struct.pack("!HHHH", 4000, 5000, 8 + len(data), 0) + data
        ident = i % idmod
        frags = ((0, udp[:1480], 1), (1480, udp[1480:], 0))
        copies = ((64, "0200000000020200000000a1"), (63, "0200000000b10200000000a2"))
        if batched and i % 3 == 0:
            order = [(c, f) for c in copies for f in frags]
        else:
            order = [(c, f) for f in frags for c in copies]
        for (hop, macs), (off, chunk, mf) in order:
            if i % 2 == 0:
                h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(chunk), ident,
                                (mf << 13) | (off // 8), hop, 17, 0,
                                bytes([10, 1, 0, 1]), bytes([10, 2, 0, 1]))
                h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
                et = "0800"
            else:
                h = struct.pack("!IHBB16s16s", 0x60000000, 8 + len(chunk), 44, hop,
                                bytes.fromhex("fd010000000000000000000000000001"),
                                bytes.fromhex("fd020000000000000000000000000001"))
                h += struct.pack("!BBHI", 17, 0, off | mf, ident)
                et = "86dd"
            frames.append((t, bytes.fromhex(macs + et) + h + chunk))
            t += 0.000001
            if hop == 63 or (batched and i % 3 == 0):
                t += 0.00005
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b23c4d, 2, 4, 0, 0, 65535, 1))
        for ts, b in frames:
            sec = int(ts)
            f.write(struct.pack("<IIII", sec, int(round((ts - sec) * 1e9)), len(b), len(b)) + b)
    with open(path + ".truth", "w") as f:
        f.write("\n".join(sorted(truth)) + "\n")


def gen(d):
    anydup(f"{d}/anydup.pcap")
    anydup(f"{d}/anydup_batch.pcap", batched=True)
    write(f"{d}/flight.pcap", flight(200, 50))
    f6 = flight(60, 20, v6=True)
    write(f"{d}/flight6.pcap", f6, nano=False)
    raw = []
    for e in f6:
        p = e.payload.copy()
        p.time = e.time
        raw.append(p)
    w = PcapWriter(f"{d}/raw6.pcap", nano=False, linktype=101)
    for p in raw:
        w.write(p)
    w.close()
    base = flight(100, 100)
    lone = Ether(src="02:00:00:00:00:03", dst="02:00:00:00:00:02") / IP(
        src="10.8.0.7", dst="10.8.0.99") / UDP(sport=1, dport=2) / Raw(b"skewed")
    fwd = list(base)
    lone.time = base[len(base) // 2].time + 1000.0
    fwd.insert(len(base) // 2, lone)
    write(f"{d}/skew_fwd.pcap", fwd)
    back = list(base)
    lone2 = lone.copy()
    lone2.time = base[len(base) // 2].time - 1000.0
    back.insert(len(base) // 2, lone2)
    # an incomplete datagram before the jump back, then a real 31 s gap and
    # one more packet: its queue must still time out (timer order intact)
    stale = fragment(IP(src="10.8.0.8", dst="10.8.0.99", id=7) / UDP() / Raw(payload(2000, 3)),
                     fragsize=1000)[0]
    e = Ether(src="02:00:00:00:00:04", dst="02:00:00:00:00:02") / stale
    e.time = base[0].time
    back.insert(1, e)
    t = back[-1].time
    for k in range(8):  # the clock follows the bulk: several packets after the gap
        late = Ether() / IP(src="10.8.0.9", dst="10.8.0.99") / UDP(sport=3, dport=4) / Raw(b"late%d" % k)
        late.time = t + 31.0 + k * 0.001
        back.append(late)
    write(f"{d}/skew_back.pcap", back)
    two = flight(30, 10, src="10.8.0.1", seed=2) + flight(30, 10, src="10.8.0.2", seed=3,
                                                           t0=2000.0)
    write(f"{d}/twosrc.pcap", two)
    write(f"{d}/overlap.pcap", overlaps())
    write(f"{d}/events.pcap", events())


def events():
    """Datagrams for each report event, from 10.8.0.6 (id: what it shows):
    1 reassembled from 3 fragments; 2 an overlap with other bytes (strict
    gives it up: overlap, and its last fragment times out alone); 3 a
    duplicate fragment (overlap, dup; its frame listed, as tshark does); 4 a tiny
    non-final fragment (24 bytes) and DF on every fragment, reassembled;
    6 its first fragment, then 40 s later four other packets and its last
    fragment (with --timeout 30: given up, timeout, then a new queue given
    up at the end); 5 incomplete (given up at the end of input)."""
    out, t = [], 4000.0
    body = bytes(UDP(sport=9, dport=9, len=8 + 96, chksum=0)) + bytes(range(96))

    def v4(ident, frags, df=False):
        return [IP(src="10.8.0.6", dst="10.8.0.99", id=ident, proto=17,
                   flags=(1 if mf else 0) | (2 if df else 0), frag=off // 8) / Raw(data)
                for off, data, mf in frags]
    pk = [(p, 0.001) for p in v4(1, [(0, body[:40], True), (40, body[40:80], True),
                                     (80, body[80:], False)])]
    pk += [(p, 0.001) for p in v4(2, [(0, body[:40], True), (24, b"Z" * 32, True),
                                      (56, body[56:], False)])]
    pk += [(p, 0.001) for p in v4(3, [(0, body[:40], True), (8, body[8:24], True),
                                      (40, body[40:], False)])]
    pk += [(p, 0.001) for p in v4(4, [(0, body[:24], True), (24, body[24:], False)], df=True)]
    six = v4(6, [(0, body[:40], True), (40, body[40:], False)])
    pk += [(six[0], 40.0)]
    # the clock follows the bulk of the packets: several past the gap
    pk += [(IP(src="10.8.0.7", dst="10.8.0.99") / UDP(sport=1, dport=2) / Raw(b"x%d" % k), 0.001)
           for k in range(4)]
    pk += [(six[1], 0.001)]
    pk += [(p, 0.001) for p in v4(5, [(0, body[:40], True)])]
    for p, gap in pk:
        e = Ether(src="02:00:00:00:00:06", dst="02:00:00:00:00:02") / p
        e.time = t
        t += gap
        out.append(e)
    return out


def report_check(pcap, jsonl):
    """The --report of events.pcap: every event where it belongs, and each
    reassembled datagram's frames as tshark lists its fragments."""
    ev = [json.loads(line) for line in open(jsonl)]
    by = {}
    for e in ev:
        by.setdefault((e["event"], e.get("id")), []).append(e)
    res = subprocess.run(["tshark", "-r", pcap, "-o", "ip.defragment:TRUE", "-Y",
                          "ip.reassembled.length", "-T", "fields", "-e", "ip.id",
                          "-e", "ip.fragment"], capture_output=True, text=True)
    tsh = {}
    for line in res.stdout.splitlines():
        ident, frs = line.split("\t")
        tsh[int(ident, 16)] = [int(x) for x in frs.split(",")]
    errs = []

    def want(cond, what):
        if not cond:
            errs.append(what)
    for ident in (1, 3, 4):
        r = by.get(("reassembled", ident), [])
        want(len(r) == 1, f"reassembled {ident}: {r}")
        if r:
            want(r[0]["frames"] == sorted(tsh.get(ident, [-1])),
                 f"frames of {ident}: {r[0]['frames']} tshark {tsh.get(ident)}")
            want(r[0]["src"] == "10.8.0.6" and r[0]["dst"] == "10.8.0.99" and
                 r[0]["protocol"] == 17 and r[0]["family"] == 4, f"identity {r[0]}")
            want(r[0]["first_time_ns"] <= r[0]["last_time_ns"], "times")
    want(by.get(("reassembled", 1), [{}])[0].get("length") == 104, "length of 1")
    # strict: the overlap kills the queue (its frames, the overlapping one
    # included); the last fragment then starts a queue that times out
    g = by.get(("given_up", 2), [])
    want([(x["reason"], x["frames"]) for x in g] == [("overlap", [4, 5]), ("timeout", [6])],
         f"given_up 2: {g}")
    o = by.get(("overlap", 2), [])
    want(len(o) == 1 and o[0]["kind"] == "fragment_inconsistency" and o[0]["off"] == 24,
         f"overlap 2: {o}")
    o = by.get(("overlap", 3), [])
    want(len(o) == 1 and o[0]["dup"] and o[0]["kind"] == "fragment_overlap", f"dup 3: {o}")
    want(len(by.get(("tiny_fragment", 4), [])) == 1, "tiny 4")
    want(len(by.get(("df_fragment", 4), [])) == 2, "df 4")
    g = by.get(("given_up", 5), [])
    want(len(g) == 1 and g[0]["reason"] == "end_of_input" and g[0]["frames"] == [18],
         f"given_up 5: {g}")
    g = by.get(("given_up", 6), [])
    want([(x["reason"], x["frames"]) for x in g] == [("timeout", [12]), ("end_of_input", [17])],
         f"given_up 6: {g}")
    for e in errs:
        print("MISMATCH", e)
    print(f"report: {len(ev)} events, {len(errs)} mismatches")
    return 1 if errs else 0


def overlaps():
    from scapy.all import IPv6ExtHdrFragment
    out, t = [], 3000.0
    udp = UDP(sport=7, dport=7, len=8 + 64, chksum=0)
    body = bytes(udp) + b"A" * 64
    alt = b"B" * 64

    def v4(ident, frags):
        return [IP(src="10.8.0.5", dst="10.8.0.99", id=ident, proto=17, flags="MF" if mf else 0,
                   frag=off // 8) / Raw(data) for off, data, mf in frags]

    def v6(ident, frags):
        return [IPv6(src="2001:db8::5", dst="2001:db8::99") /
                IPv6ExtHdrFragment(id=ident, nh=17, m=1 if mf else 0, offset=off // 8) / Raw(data)
                for off, data, mf in frags]
    # 1: 0-40, 40-72 (no overlap)
    pk = v4(1, [(0, body[:40], True), (40, body[40:], False)])
    # 2: 0-40, then 24-56 with other bytes, then 56-72
    pk += v4(2, [(0, body[:40], True), (24, alt[:32], True), (56, body[56:], False)])
    pk += v6(3, [(0, body[:40], True), (24, alt[:32], True), (56, body[56:], False)])
    # 4: 0-40, then 24-56 with the same bytes, then 56-72
    pk += v4(4, [(0, body[:40], True), (24, body[24:56], True), (56, body[56:], False)])
    # 5: a run 0-24, 24-48, then 0-48 with other bytes (the run itself:
    # strict keeps the first bytes and delivers; solaris, processed last
    # by --policy all, takes the new ones over the second fragment, which
    # it starts before), then 48-72
    pk += v4(5, [(0, body[:24], True), (24, body[24:48], True), (0, alt[:48], True),
                 (48, body[48:], False)])
    for p in pk:
        e = Ether(src="02:00:00:00:00:05", dst="02:00:00:00:00:02") / p
        e.time = t
        t += 0.001
        out.append(e)
    return out


def payloads(path, defrag):
    on = "TRUE" if defrag else "FALSE"
    flt = "udp" if defrag else "udp and not (ip.flags.mf == 1 or ip.frag_offset > 0 or ipv6.fraghdr)"
    args = ["tshark", "-r", path, "-o", "ip.defragment:" + on, "-o", "ipv6.defragment:" + on,
            "-Y", flt, "-T", "fields", "-e", "udp.payload"]
    res = subprocess.run(args, capture_output=True, text=True)
    if res.returncode:
        sys.stderr.write(res.stderr)
        sys.exit(1)
    out = []
    for line in res.stdout.splitlines():
        data = bytes.fromhex(line.strip().replace(":", ""))
        out.append(hashlib.sha256(data).hexdigest())
    return sorted(out)


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2])
    elif sys.argv[1] == "report":
        sys.exit(report_check(sys.argv[2], sys.argv[3]))
    else:
        print("\n".join(payloads(sys.argv[2], len(sys.argv) > 3 and sys.argv[3] == "defrag")))

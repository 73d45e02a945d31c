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
      overlap.pcap  for --policy all: datagram 1 without overlap, 2 with a
                    fragment overlapping the first with other bytes (IPv4),
                    3 the same over IPv6, 4 an overlap with the same bytes
  defrag_files.py payloads FILE [defrag]
      prints the sorted SHA-256 of every complete UDP payload tshark sees in
      FILE, one per line: with "defrag", with tshark's own reassembly (what
      rxpath must match); without, fragments are not reassembled (what rxpath
      wrote)
"""
import hashlib, random, subprocess, sys

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


def gen(d):
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
    else:
        print("\n".join(payloads(sys.argv[2], len(sys.argv) > 3 and sys.argv[3] == "defrag")))

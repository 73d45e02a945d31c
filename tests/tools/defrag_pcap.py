#!/usr/bin/python3
"""Make a capture of fragment streams for `rxpath defrag` and check its output.

  defrag_pcap.py gen DIR    writes DIR/in_eth.pcap, DIR/in_raw.pcap (the same
                            packets, Ethernet and raw IP link types),
                            DIR/in_eth.pcapng and DIR/expect.json
  defrag_pcap.py check DIR OUT [KEPT [EXTRA [PROFILE]]]  (KEPT -1: as expected)
                            reads OUT (pcap or pcapng) with tshark and compares
                            datagram lengths and payload digests with
                            expect.json; PROFILE "kernel" (the default) expects
                            stream 8 lost to the 30 s timeout, "file" (no
                            timeout) expects it reassembled
"""
import hashlib, json, random, struct, subprocess, sys

from scapy.all import (IP, IPv6, UDP, ARP, Ether, Raw, fragment, fragment6, wrpcap,
                       IPv6ExtHdrFragment, IPv6ExtHdrHopByHop)
from scapy.utils import PcapNgWriter

SRC4, DST4 = "10.7.0.1", "10.7.0.2"
SRC6, DST6 = "2001:db8::1", "2001:db8::2"


def payload(n, seed):
    r = random.Random(seed)
    return bytes(r.randrange(256) for _ in range(n))


def gen(d):
    rnd = random.Random(4)
    pkts, expect, t = [], [], 1000.0

    def emit(ps, gap=0.001):
        nonlocal t
        for p in ps:
            p.time = t
            t += gap
            pkts.append(p)

    def want(ip):
        data = bytes(ip[UDP].payload)
        expect.append({"udp_len": 8 + len(data), "sha256": hashlib.sha256(data).hexdigest()})

    # 1-3: IPv4, in order, reversed, shuffled with a duplicate
    for i, order in enumerate(["in", "rev", "shuf"]):
        ip = IP(src=SRC4, dst=DST4, id=100 + i) / UDP(sport=1000, dport=2000) / Raw(payload(3000 + i * 7, i))
        fr = fragment(ip, fragsize=1000)
        if order == "rev":
            fr = fr[::-1]
        elif order == "shuf":
            rnd.shuffle(fr)
            fr.insert(1, fr[0].copy())  # before the datagram completes: a duplicate
        emit(fr)
        want(ip)
    # 4: IPv6 with a Hop-by-Hop header, shuffled
    ip6 = (IPv6(src=SRC6, dst=DST6) / IPv6ExtHdrHopByHop() / IPv6ExtHdrFragment(id=0x1234) /
           UDP(sport=1001, dport=2001) / Raw(payload(2500, 9)))
    fr6 = fragment6(ip6, 1000)
    rnd.shuffle(fr6)
    emit(fr6)
    want(IPv6(src=SRC6, dst=DST6) / IPv6ExtHdrHopByHop() / UDP(sport=1001, dport=2001) / Raw(payload(2500, 9)))
    # 5: not fragmented
    ip = IP(src=SRC4, dst=DST4, id=200) / UDP(sport=1002, dport=2002) / Raw(payload(300, 5))
    emit([ip])
    want(ip)
    # 6: incomplete (middle fragment lost)
    fr = fragment(IP(src=SRC4, dst=DST4, id=300) / UDP() / Raw(payload(3000, 6)), fragsize=1000)
    incomplete = [fr[0], fr[2], fr[3]]
    emit(incomplete)
    # 7: overlap (strict drops the datagram)
    a = IP(src=SRC4, dst=DST4, id=301, flags="MF", frag=0, proto=17) / Raw(payload(64, 7))
    b = IP(src=SRC4, dst=DST4, id=301, frag=4, proto=17) / Raw(payload(64, 8))
    emit([a, b])
    # 8: last fragment after the 30 s timeout (reassembled without one)
    late_ip = IP(src=SRC4, dst=DST4, id=302) / UDP() / Raw(payload(1600, 9))
    fr = fragment(late_ip, fragsize=1000)
    emit([fr[0]], gap=31.0)
    emit([fr[1]])
    late = {"udp_len": 8 + 1600, "sha256": hashlib.sha256(payload(1600, 9)).hexdigest()}
    kept = len(incomplete) + 2 + 2
    # a non-IP frame passes through too (Ethernet only)
    eth = []
    for p in pkts:
        e = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / p
        e.time = p.time
        eth.append(e)
    arp = Ether(src="02:00:00:00:00:01", dst="ff:ff:ff:ff:ff:ff") / ARP(psrc=SRC4, pdst=DST4)
    arp.time = t
    eth.append(arp)
    wrpcap(f"{d}/in_eth.pcap", eth)
    wrpcap(f"{d}/in_raw.pcap", pkts, linktype=101)
    w = PcapNgWriter(f"{d}/in_eth.pcapng")
    for p in eth:
        w.write(p)
    w.close()
    json.dump({"datagrams": expect, "kept": kept, "late": late, "late_frags": 2, "arp": 1},
              open(f"{d}/expect.json", "w"))


def linktype(path):
    """The first interface's link type of a pcap or pcapng file."""
    with open(path, "rb") as fh:
        head = fh.read(64 * 1024)
    if head[:4] == b"\x0a\x0d\x0d\x0a":  # pcapng: the IDB follows the SHB
        order = "<" if head[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
        shb_len = struct.unpack(order + "I", head[4:8])[0]
        return struct.unpack(order + "H", head[shb_len + 8:shb_len + 10])[0]
    order = "<" if head[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    return struct.unpack(order + "I", head[20:24])[0]


def check(d, out, kept, extra=0, profile="kernel"):
    exp = json.load(open(f"{d}/expect.json"))
    if profile == "file":
        exp["datagrams"].append(exp["late"])
    res = subprocess.run(["tshark", "-r", out, "-T", "fields", "-E", "separator=|",
                          "-o", "ip.defragment:FALSE", "-o", "ipv6.defragment:FALSE",
                          "-e", "udp.length", "-e", "udp.payload", "-e", "ip.flags.mf",
                          "-e", "ip.frag_offset", "-e", "ipv6.fraghdr.ident", "-e", "arp.opcode"],
                         capture_output=True, text=True)
    if res.returncode:
        print(res.stderr)
        return 1
    got, frags, arps = [], 0, 0
    for line in res.stdout.splitlines():
        f = line.split("|")
        if f[5]:
            arps += 1
            continue
        if f[2] == "1" or (f[3] and f[3] != "0") or f[4]:
            frags += 1
            continue
        data = bytes.fromhex(f[1].replace(":", ""))
        got.append({"udp_len": int(f[0]), "sha256": hashlib.sha256(data).hexdigest()})
    key = lambda x: (x["udp_len"], x["sha256"])
    # A target policy also completes the overlapping datagram (stream 7):
    # allow that many datagrams beyond the expected ones.
    left = list(got)
    for e in exp["datagrams"]:
        if e in left:
            left.remove(e)
    # The non-IP frame passes through: Ethernet inputs carry one ARP frame
    # (raw IP ones cannot), and the output keeps the input's link type.
    want_arp = exp["arp"] if linktype(out) == 1 else 0
    ok = (len(left) == extra and len(got) - extra == len(exp["datagrams"]) and frags == kept
          and arps == want_arp)
    plus = f" + {extra} the policy completes" if extra else ""
    print(f"datagrams: got {len(got)} expected {len(exp['datagrams'])}{plus}; "
          f"fragments kept: got {frags} expected {kept}; arp: got {arps} expected {want_arp}")
    if not ok:
        print("MISMATCH", got, exp["datagrams"])
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2])
    else:
        k = int(sys.argv[4]) if len(sys.argv) > 4 else 0
        prof = sys.argv[6] if len(sys.argv) > 6 else "kernel"
        if k < 0:
            e = json.load(open(f"{sys.argv[2]}/expect.json"))
            k = e["kept"] - (e["late_frags"] if prof == "file" else 0)
        x = int(sys.argv[5]) if len(sys.argv) > 5 else 0
        sys.exit(check(sys.argv[2], sys.argv[3], k, x, prof))

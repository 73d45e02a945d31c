#!/usr/bin/python3
"""Captures of every link type and tunnel `rxpath defrag` reads, made from
packets the kernel sent, and the check of its output against tshark.

  defrag_links.py wrap BASE DIR [KIND...]
      BASE: an Ethernet capture of what the kernel sent over a veth (UDP
      datagrams to port 9999, fragmented and not, both families, with the
      ARP and ICMP around them). Writes DIR/<kind>.pcap for each kind (all
      when none is named): the same IP packets behind another link layer or
      inside a tunnel, in the same order and at the same times. Prints the
      kinds written.
  defrag_links.py mixed BASE OUT.pcapng
      Writes a pcapng with six interfaces of different link types
      (Ethernet, RAW, LINUX_SLL2, NULL, NFLOG, radiotap): each datagram's
      packets on one of them, in turn, in capture order.
  defrag_links.py check IN OUT [SENT [FIELD]]
      tshark reassembles IN; OUT is what rxpath wrote. The UDP datagrams to
      port 9999 that tshark finds in IN (with its reassembly on) must be
      exactly those in OUT (their lengths and payload bytes), OUT must hold
      none of their fragments, and no IP, UDP or GRE checksum in OUT may be
      bad; with SENT, tshark must find that many; with FIELD (vxlan.vni,
      ...), each datagram in OUT must still carry it. Prints "N datagrams:
      tshark N, rxpath N" and exits 1 on any difference.
  defrag_links.py check-list FILE
      check for each line "NAME IN OUT [SENT [FIELD]]" of FILE, two at a
      time, a line "ok: NAME: ..." or "FAIL: NAME: ..." each.
  defrag_links.py collide BASE DIR
      Writes DIR/collide_<tunnel>.pcap: each fragmented datagram sent twice,
      through two tunnels that differ only in their key (GRE key, VXLAN and
      GENEVE VNI, GTP-U TEID, ERSPAN session), endpoints or VLAN, with the same inner addresses and ID; the
      second copy's payload differs (two 16-bit words swapped: the UDP
      checksum still holds). The two tunnels' fragments alternate.
  defrag_links.py check-collide DIR OUT KIND
      OUT must hold every datagram twice, once as sent through each tunnel
      and inside that tunnel (its key or endpoint, length and payload bytes
      as tshark reads them from that tunnel's packets alone).
"""
import hashlib
import struct
import subprocess
import sys
import zlib

from scapy.all import (IP, IPv6, IPv6ExtHdrFragment, UDP, Ether, Dot1Q, Raw, GRE, VXLAN, LLC, SNAP,
                       PcapReader, fragment, fragment6, wrpcap)
from scapy.layers.dot11 import Dot11, Dot11QoS, RadioTap
from scapy.layers.l2 import Dot1AD, GRE_PPTP
from scapy.layers.ppp import PPP, PPPoE, HDLC
from scapy.contrib.mpls import MPLS
from scapy.contrib.geneve import GENEVE
from scapy.contrib.gtp import GTP_U_Header, GTPPDUSessionContainer
from scapy.contrib.erspan import ERSPAN_II, ERSPAN_III

PORT = 9999
MAC_A, MAC_B = "02:21:00:00:00:01", "02:21:00:00:00:02"
OUT4 = ("192.0.2.1", "192.0.2.2")
OUT6 = ("2001:db8:21::1", "2001:db8:21::2")


def load(base):
    """(time, kind, bytes): kind 'ip' for IP packets, 'l2' for whole
    Ethernet frames that carry something else."""
    out = []
    for p in PcapReader(base):
        raw = bytes(p)
        et = struct.unpack("!H", raw[12:14])[0]
        if et in (0x0800, 0x86dd):
            out.append((p.time, "ip", raw[14:]))
        else:
            out.append((p.time, "l2", raw))
    return out


def fam(ip):
    return ip[0] >> 4


def ether(payload, et):
    return bytes(Ether(src=MAC_A, dst=MAC_B, type=et)) + payload


def et_of(ip):
    return 0x0800 if fam(ip) == 4 else 0x86dd


OUTER_ID = [0x2100]


def outer(ip, proto_payload, proto, v6=False):
    """An outer IP packet around proto_payload (scapy fills lengths and
    checksums), each with its own IPv4 ID."""
    if v6:
        return IPv6(src=OUT6[0], dst=OUT6[1], nh=proto) / Raw(proto_payload)
    OUTER_ID[0] += 1
    return IP(src=OUT4[0], dst=OUT4[1], proto=proto, id=OUTER_ID[0] & 0xffff) / Raw(proto_payload)


def nflog(ip):
    le = lambda n, t, v: struct.pack("<HH", n, t) + v + b"\0" * ((-len(v)) % 4)
    hdr = struct.pack("!BBH", 2 if fam(ip) == 4 else 10, 0, 21)
    tlvs = le(8, 1, struct.pack("!HBB", et_of(ip), 3, 0))  # packet header
    tlvs += le(8, 10, b"rxp\0")  # prefix
    tlvs += le(4 + len(ip), 9, ip)  # payload
    tlvs += le(8, 11, struct.pack("!I", 1000))  # uid, after the payload
    return hdr + tlvs


def radiotap(ip):
    body = bytes(Dot11(type=2, subtype=8, FCfield="to-DS", addr1=MAC_B, addr2=MAC_A,
                       addr3=MAC_B) / Dot11QoS() / LLC() / SNAP(code=et_of(ip))) + ip
    rt = bytes(RadioTap(present="Flags+Rate", Flags="FCS", Rate=2))
    return rt + body + struct.pack("<I", zlib.crc32(body) & 0xffffffff)


# kind: (linktype, frame builder for an IP packet, builder for a non-IP
# Ethernet frame or None to leave those out, outer fragment size or None)
def kinds():
    eth_l2 = lambda f: f
    k = {
        "vlan": (1, lambda ip: bytes(Ether(src=MAC_A, dst=MAC_B) / Dot1Q(vlan=100, type=et_of(ip))) + ip,
                 eth_l2),
        "qinq": (1, lambda ip: bytes(Ether(src=MAC_A, dst=MAC_B) / Dot1AD(vlan=10) /
                                     Dot1Q(vlan=20, type=et_of(ip))) + ip, eth_l2),
        "mpls": (1, lambda ip: bytes(Ether(src=MAC_A, dst=MAC_B, type=0x8847) /
                                     MPLS(label=100, s=0, ttl=64) / MPLS(label=200, s=1, ttl=64)) + ip,
                 eth_l2),
        "pppoe": (1, lambda ip: bytes(Ether(src=MAC_A, dst=MAC_B, type=0x8864) /
                                      PPPoE(sessionid=7) /
                                      Raw(struct.pack("!H", 0x21 if fam(ip) == 4 else 0x57) + ip)),
                  eth_l2),
        "ppp": (9, lambda ip: bytes(PPP(proto=0x21 if fam(ip) == 4 else 0x57)) + ip, None),
        "ppp_hdlc": (50, lambda ip: bytes(HDLC() / PPP(proto=0x21 if fam(ip) == 4 else 0x57)) + ip,
                     None),
        "chdlc": (104, lambda ip: struct.pack("!BBH", 0x0f, 0, et_of(ip)) + ip, None),
        "null": (0, lambda ip: struct.pack("<I", 2 if fam(ip) == 4 else 30) + ip, None),
        "loop": (108, lambda ip: struct.pack("!I", 2 if fam(ip) == 4 else 24) + ip, None),
        "raw": (101, lambda ip: ip, None),
        "ipv4": (228, lambda ip: ip if fam(ip) == 4 else None, None),
        "ipv6": (229, lambda ip: ip if fam(ip) == 6 else None, None),
        "nflog": (239, nflog, None),
        "wlan": (105, lambda ip: bytes(Dot11(type=2, subtype=8, FCfield="from-DS", addr1=MAC_B,
                                              addr2=MAC_A, addr3=MAC_A) / Dot11QoS() / LLC() /
                                        SNAP(code=et_of(ip))) + ip, None),
        "radiotap": (127, radiotap, None),
        "gre": (1, lambda ip: ether(bytes(outer(ip, bytes(GRE(proto=et_of(ip))) + ip, 47)), 0x0800),
                eth_l2),
        "gre_csum_key6": (1, lambda ip: ether(bytes(outer(
            ip, bytes(GRE(chksum_present=1, key_present=1, key=5, seqnum_present=1, seqence_number=1,
                          proto=et_of(ip)) / Raw(ip)), 47, v6=True)), 0x86dd), eth_l2),
        "gre_teb": (1, lambda ip: ether(bytes(outer(
            ip, bytes(GRE(proto=0x6558) / Ether(src=MAC_A, dst=MAC_B, type=et_of(ip))) + ip, 47)), 0x0800),
            eth_l2),
        "erspan1": (1, lambda ip: ether(bytes(outer(
            ip, bytes(GRE(proto=0x88be) / Ether(src=MAC_A, dst=MAC_B, type=et_of(ip))) + ip, 47)),
            0x0800), eth_l2),
        "erspan2": (1, lambda ip: ether(bytes(outer(
            ip, bytes(GRE(seqnum_present=1, proto=0x88be) / ERSPAN_II(ver=1, session_id=5) /
                      Ether(src=MAC_A, dst=MAC_B, type=et_of(ip))) + ip, 47)), 0x0800), eth_l2),
        "erspan3": (1, lambda ip: ether(bytes(outer(
            ip, bytes(GRE(seqnum_present=1, proto=0x22eb) / ERSPAN_III(session_id=6) /
                      Ether(src=MAC_A, dst=MAC_B, type=et_of(ip))) + ip, 47)), 0x0800), eth_l2),
        "gre_ppp": (1, lambda ip: ether(bytes(outer(
            ip, bytes(GRE_PPTP(seqnum_present=1, seqence_number=3, call_id=9) / HDLC() /
                      PPP(proto=0x21 if fam(ip) == 4 else 0x57) / Raw(ip)), 47)), 0x0800), eth_l2),
        "ipip4": (1, lambda ip: ether(bytes(outer(ip, ip, 4 if fam(ip) == 4 else 41)), 0x0800),
                  eth_l2),
        "ipip6": (1, lambda ip: ether(bytes(outer(ip, ip, 4 if fam(ip) == 4 else 41, v6=True)), 0x86dd),
                  eth_l2),
        "vxlan": (1, lambda ip: ether(bytes(IP(src=OUT4[0], dst=OUT4[1], id=0x2101) /
                                            UDP(sport=40000 + len(ip) % 1000, dport=4789) /
                                            VXLAN(vni=42) / Ether(src=MAC_A, dst=MAC_B, type=et_of(ip)) /
                                            Raw(ip)), 0x0800), eth_l2),
        "geneve6": (1, lambda ip: ether(bytes(IPv6(src=OUT6[0], dst=OUT6[1]) /
                                              UDP(sport=40001, dport=6081) /
                                              GENEVE(vni=77, proto=0x6558, optionlen=2,
                                                     options=b"\x01\x02\x03\x01\xaa\xbb\xcc\xdd") /
                                              Ether(src=MAC_A, dst=MAC_B, type=et_of(ip)) / Raw(ip)),
                                        0x86dd), eth_l2),
        "gtpu": (1, lambda ip: ether(bytes(IP(src=OUT4[0], dst=OUT4[1], id=0x2102) /
                                           UDP(sport=2152, dport=2152) /
                                           GTP_U_Header(gtp_type=255, teid=0x1234, E=1, S=1, seq=7,
                                                        next_ex=0x85) /
                                           GTPPDUSessionContainer(type=1, QFI=5) / Raw(ip)), 0x0800),
                 eth_l2),
    }
    # Outer fragments around inner ones: reassembled outside first.
    k["gre_outerfrag"] = (1, k["gre"][1], eth_l2, 700)
    k["vxlan6_outerfrag"] = (1, lambda ip: ether(bytes(IPv6(src=OUT6[0], dst=OUT6[1]) /
                                                       UDP(sport=40002, dport=4789) / VXLAN(vni=43) /
                                                       Ether(src=MAC_A, dst=MAC_B, type=et_of(ip)) /
                                                       Raw(ip)), 0x86dd), eth_l2, 700)
    return k


def outer_fragments(frame, size):
    """The Ethernet frame's IP packet cut into fragments of about size bytes."""
    e = Ether(frame)
    if e.type == 0x0800:
        fr = fragment(e[IP], fragsize=size)
    else:
        p = e[IPv6]
        fr = fragment6(IPv6(src=p.src, dst=p.dst, hlim=p.hlim) /
                       IPv6ExtHdrFragment(id=0x21210000 + len(frame)) / p.payload, size + 48)
    return [ether(bytes(f), e.type) for f in fr]


def wrap(base, d, names):
    pkts = load(base)
    ks = kinds()
    for name in names or ks:
        spec = ks[name]
        lt, mk, l2 = spec[0], spec[1], spec[2]
        osize = spec[3] if len(spec) > 3 else None
        out = []
        for t, kind, b in pkts:
            if kind == "l2":
                if l2:
                    out.append((t, l2(b)))
                continue
            f = mk(b)
            if f is None:
                continue
            if osize and len(f) > osize + 14:
                out.extend((t, x) for x in outer_fragments(f, osize))
            else:
                out.append((t, f))
        frames = []
        for t, f in out:
            p = Raw(f)
            p.time = t
            frames.append(p)
        wrpcap(f"{d}/{name}.pcap", frames, linktype=lt)
        print(name)


def sll2(ip):
    return struct.pack("!HHIHBB8s", et_of(ip), 0, 2, 1, 0, 6, bytes.fromhex("022100000001")) + ip


def mixed(base, out):
    """pcapng by hand (scapy's writer has one interface): SHB, one IDB per
    link type, an EPB per packet with its interface's id."""
    ks = kinds()
    ifs = [(1, None), (101, ks["raw"][1]), (276, sll2), (0, ks["null"][1]),
           (239, nflog), (127, radiotap)]
    blk = lambda t, body: struct.pack("<II", t, 12 + len(body) + (-len(body)) % 4) + body + \
        b"\0" * ((-len(body)) % 4) + struct.pack("<I", 12 + len(body) + (-len(body)) % 4)
    f = open(out, "wb")
    f.write(blk(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1)))
    for lt, _ in ifs:
        # if_tsresol 9: nanoseconds
        f.write(blk(1, struct.pack("<HHI", lt, 0, 262144) + struct.pack("<HHB3x", 9, 1, 9) +
                    b"\0" * 4))
    owner, n = {}, 0
    for t, kind, b in load(base):
        if kind == "l2":
            i, frame = 0, b
        else:
            key = frag_key_end(b)[0] if is_frag(b) else None
            if key not in owner:
                owner[key] = n % len(ifs)
                n += 1
            i = owner.pop(key) if key is None else owner[key]
            frame = ether(b, et_of(b)) if i == 0 else ifs[i][1](b)
        ts = int(t * 1000000000)
        f.write(blk(6, struct.pack("<IIIII", i, ts >> 32, ts & 0xffffffff, len(frame),
                                   len(frame)) + frame + b"\0" * ((-len(frame)) % 4)))
    f.close()


TSHARK = ["tshark", "-n", "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
          "-d", "udp.port==2152,gtp", "-d", f"udp.port=={PORT},data"]


def scan(pcap, tunnel_field=None):
    """One tshark pass over pcap, reassembling. Returns the UDP datagrams to
    PORT it finds, the innermost UDP of each frame, as (udp length, sha256
    of payload) or, with tunnel_field, (its outermost value, length,
    sha256); and counts: fragments of datagrams to PORT, frames with a bad
    IP, UDP or GRE checksum that are not fragments and that are, and
    malformed frames."""
    flds = ["udp.dstport", "udp.length", "udp.payload", "ip.flags.mf", "ip.frag_offset",
            "ipv6.fraghdr.ident", "ip.checksum.status", "udp.checksum.status",
            "gre.checksum.status", "_ws.malformed"] + ([tunnel_field] if tunnel_field else [])
    cmd = TSHARK + ["-r", pcap, "-o", "ip.defragment:TRUE", "-o", "ipv6.defragment:TRUE",
                    "-Y", "!icmp && !icmpv6", "-T", "fields", "-E", "occurrence=a",
                    "-E", "separator=|"]
    for f in flds:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"tshark failed on {pcap}: {r.stderr.strip()}")
    res = {"datagrams": [], "frags": 0, "bad": 0, "badfrag": 0, "malformed": 0}
    for line in r.stdout.splitlines():
        row = line.split("|")
        dport, ulen, pay, mf, off, id6, ics, ucs, gcs, mal = row[:10]
        dports = dport.split(",")
        isfrag = "1" in mf.split(",") or any(x not in ("", "0") for x in off.split(",")) or id6
        if dports[-1] == str(PORT) and pay:
            pay = pay.split(",")[-1]
            d = (int(ulen.split(",")[-1]),
                 hashlib.sha256(bytes.fromhex(pay.replace(":", ""))).hexdigest())
            res["datagrams"].append((row[10].split(",")[0],) + d if tunnel_field else d)
        if isfrag and (str(PORT) in dports or not dport):
            res["frags"] += 1
        if "0" in (ics + "," + ucs + "," + gcs).split(","):
            res["badfrag" if isfrag else "bad"] += 1
        if mal:
            res["malformed"] += 1
    return res


def datagrams(pcap, tunnel_field=None):
    return scan(pcap, tunnel_field)["datagrams"]


def check(inp, out, expect=None, tunnel_field=None, live=False):
    """One line saying what was compared; 0 when it all agrees. live: inp
    is a live tool's capture, which may have lost or cut a frame without
    its tool counting it (dumpcap's NFLOG socket under CI's load): when
    tshark finds fewer datagrams in it than were sent and rxpath's output
    is exactly tshark's, that is said, not failed (2)."""
    si, so = scan(inp), scan(out, tunnel_field)
    want = sorted(si["datagrams"])
    got = sorted(x[1:] if tunnel_field else x for x in so["datagrams"])
    # With tunnel_field, each datagram must still be inside its tunnel.
    outside = sum(1 for x in so["datagrams"] if not x[0]) if tunnel_field else 0
    # Frames that pass unchanged keep their checksums (the kernel leaves
    # them unfilled on the loopback: checksum offload).
    ok = (want == got and so["frags"] == 0 and so["bad"] == si["bad"] and so["badfrag"] == 0
          and so["malformed"] == 0 and want and (expect is None or len(want) == expect)
          and outside == 0)
    short = (live and expect is not None and len(want) < expect and want == got
             and so["frags"] == 0 and so["bad"] == si["bad"] and so["badfrag"] == 0
             and so["malformed"] == 0 and outside == 0)
    sent = "" if expect is None else f" of {expect} sent"
    msg = (f"{len(want)} datagrams{sent}: tshark {len(want)}, rxpath {len(got)}"
           f"{'' if want == got else ' (payloads differ)'}"
           f"{f', {outside} outside their tunnel' if outside else ''}; fragments left "
           f"{so['frags']}; bad checksums {so['bad'] + so['badfrag']} (in the input, passed "
           f"as they were: {si['bad']}); malformed {so['malformed']}"
           f"{'; the capture lacks the rest (tshark finds them neither): judged against tshark alone' if short else ''}")
    return (0 if ok else 2 if short else 1), msg


def check_list(listfile):
    """Runs check() for each line "NAME IN OUT [SENT [FIELD]]" of listfile,
    two at a time; prints "ok: NAME: ..." or "FAIL: NAME: ..." in order, and
    "short: NAME: ..." for a live capture (SENT ending in "~") that lacks
    datagrams tshark cannot find either."""
    from concurrent.futures import ThreadPoolExecutor
    jobs = [line.split() for line in open(listfile) if line.strip()]

    def one(j):
        sent = j[3] if len(j) > 3 else None
        return check(j[1], j[2], int(sent.rstrip("~")) if sent else None,
                     j[4] if len(j) > 4 else None, bool(sent and sent.endswith("~")))
    fail = 0
    with ThreadPoolExecutor(2) as ex:
        for j, (rc, msg) in zip(jobs, ex.map(one, jobs)):
            print(f"{'FAIL' if rc == 1 else 'short' if rc else 'ok'}: {j[0]}: {msg}")
            fail |= rc == 1
    return fail


# Two tunnels that differ only in their key (or endpoints): tunnel builders
# taking (ip, which) with which 0 or 1.
COLLIDE_FIELD = {"gre_key": "gre.key", "vxlan_vni": "vxlan.vni", "gtpu_teid": "gtp.teid",
                 "ipip_endpoint": "ip.dst", "geneve6_vni": "geneve.vni",
                 "erspan_session": "erspan.spanid", "vlan_id": "vlan.id"}


def collide_kinds():
    return {
        "gre_key": lambda ip, w: ether(bytes(outer(ip, bytes(GRE(key_present=1, key=1 + w,
                                                                  proto=et_of(ip))) + ip, 47)),
                                         0x0800),
        "vxlan_vni": lambda ip, w: ether(bytes(IP(src=OUT4[0], dst=OUT4[1]) /
                                               UDP(sport=40000, dport=4789) / VXLAN(vni=100 + w) /
                                               Ether(src=MAC_A, dst=MAC_B, type=et_of(ip)) / Raw(ip)),
                                         0x0800),
        "gtpu_teid": lambda ip, w: ether(bytes(IP(src=OUT4[0], dst=OUT4[1]) /
                                               UDP(sport=2152, dport=2152) /
                                               GTP_U_Header(gtp_type=255, teid=0x100 + w) / Raw(ip)), 0x0800),
        "ipip_endpoint": lambda ip, w: ether(bytes(IP(src=OUT4[0], dst=f"192.0.2.{10 + w}",
                                                      proto=4 if fam(ip) == 4 else 41) / Raw(ip)),
                                             0x0800),
        "geneve6_vni": lambda ip, w: ether(bytes(IPv6(src=OUT6[0], dst=OUT6[1]) /
                                                 UDP(sport=40001, dport=6081) /
                                                 GENEVE(vni=200 + w, proto=et_of(ip)) / Raw(ip)),
                                           0x86dd),
        "erspan_session": lambda ip, w: ether(bytes(outer(
            ip, bytes(GRE(seqnum_present=1, proto=0x88be) / ERSPAN_II(ver=1, session_id=30 + w) /
                      Ether(src=MAC_A, dst=MAC_B, type=et_of(ip))) + ip, 47)), 0x0800),
        "vlan_id": lambda ip, w: bytes(Ether(src=MAC_A, dst=MAC_B) /
                                       Dot1Q(vlan=300 + w, type=et_of(ip))) + ip,
    }


def swap_words(ip, first):
    """ip with two 16-bit words of its payload swapped (at even offsets of
    the datagram, so its UDP checksum holds); in the first fragment the
    words are past the UDP header."""
    b = bytearray(ip)
    hl = (b[0] & 15) * 4 if fam(ip) == 4 else 48
    o = hl + (16 if first else 8)
    if len(b) < o + 4 or b[o:o + 2] == b[o + 2:o + 4]:
        o += 2
    b[o:o + 2], b[o + 2:o + 4] = b[o + 2:o + 4], b[o:o + 2]
    return bytes(b)


def is_first_frag(ip):
    if fam(ip) == 4:
        return (struct.unpack("!H", ip[6:8])[0] & 0x1fff) == 0
    return (struct.unpack("!H", ip[42:44])[0] & 0xfff8) == 0


def is_frag(ip):
    if fam(ip) == 4:
        return (struct.unpack("!H", ip[6:8])[0] & 0x3fff) != 0
    return ip[6] == 44


def frag_key_end(ip):
    """A fragment's datagram (addresses and ID) and the end of its data."""
    if fam(ip) == 4:
        off = (struct.unpack("!H", ip[6:8])[0] & 0x1fff) * 8
        return (ip[12:20], ip[4:6]), off + len(ip) - (ip[0] & 15) * 4
    off = struct.unpack("!H", ip[42:44])[0] & 0xfff8
    return (ip[8:40], ip[44:48]), off + len(ip) - 48


def collide(base, d):
    pkts = [(t, b) for t, k, b in load(base) if k == "ip" and is_frag(b)]
    # Datagrams that would not fit back into a tunnel are left out here
    # (they come out without it: see the too-big check).
    size = {}
    for _, b in pkts:
        key, end = frag_key_end(b)
        size[key] = max(size.get(key, 0), end)
    pkts = [(t, b) for t, b in pkts if size[frag_key_end(b)[0]] < 60000]
    for name, mk in collide_kinds().items():
        frames = []
        for t, ip in pkts:
            for w in (0, 1):
                x = ip if w == 0 else swap_words(ip, is_first_frag(ip))
                p = Raw(mk(x, w))
                p.time = t
                frames.append(p)
        wrpcap(f"{d}/collide_{name}.pcap", frames, linktype=1)
        print(f"collide_{name}")


def check_collide(d, out, kind):
    # What each tunnel should deliver: the datagrams tshark reassembles from
    # a capture of that tunnel alone.
    per = []
    for w in (0, 1):
        pkts = [p for i, p in enumerate(PcapReader(f"{d}/collide_{kind}.pcap")) if i % 2 == w]
        wrpcap(f"{d}/collide_{kind}.{w}.pcap", pkts, linktype=1)
        per.append(datagrams(f"{d}/collide_{kind}.{w}.pcap", COLLIDE_FIELD[kind]))
    want = per[0] + per[1]
    so = scan(out, COLLIDE_FIELD[kind])
    got, frags, bad = so["datagrams"], so["frags"], so["bad"] + so["badfrag"]
    n = len(want) // 2
    # Each tunnel's copy of a datagram is its own (payloads differ).
    distinct = not {x[1:] for x in per[0]} & {x[1:] for x in per[1]}
    # tshark names each tunnel, and the two apart.
    distinct = distinct and all(x[0] for x in want) and \
        not {x[0] for x in per[0]} & {x[0] for x in per[1]}
    ok = sorted(want) == sorted(got) and frags == 0 and bad == 0 and distinct and n > 0
    print(f"{len(want)} datagrams ({n} per tunnel): expected {len(want)}, rxpath {len(got)}"
          f"{'' if sorted(want) == sorted(got) else ' (payloads differ)'}; fragments left "
          f"{frags}, bad checksums {bad}")
    return 0 if ok else 1


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "wrap":
        wrap(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif cmd == "check":
        rc, msg = check(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else None,
                        sys.argv[5] if len(sys.argv) > 5 else None)
        print(msg)
        sys.exit(rc)
    elif cmd == "check-list":
        sys.exit(check_list(sys.argv[2]))
    elif cmd == "mixed":
        mixed(sys.argv[2], sys.argv[3])
    elif cmd == "collide":
        collide(sys.argv[2], sys.argv[3])
    elif cmd == "check-collide":
        sys.exit(check_collide(sys.argv[2], sys.argv[3], sys.argv[4]))
    else:
        sys.exit(__doc__)

#!/usr/bin/python3
"""A large capture fast, without scapy: OUT (nanosecond pcap, Ethernet) of
N UDP datagrams of 4 fragments of 1360 payload bytes, from 10.1.x.1 to
10.2.0.2, IDs 0..N-1, sent INFLIGHT at a time (each group's second
fragments, then fourth, first, third, round robin). LONE: 0, or 1 for a
first fragment whose datagram never completes at the start of the
capture, or K > 1 for one such before every K datagrams.
Usage: gen_flight_big.py OUT N INFLIGHT LONE"""
import struct
import sys

NF, FP = 4, 1360
ETH = bytes.fromhex("020000000002020000000001") + b"\x08\x00"


def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def main():
    out, nd, inflight, lone = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    ts = [1700000000 * 10**9]
    f = open(out, "wb")
    f.write(struct.pack("<IHHiIII", 0xa1b23c4d, 2, 4, 0, 0, 65535, 1))

    def rec(b):
        ts[0] += 1000
        f.write(struct.pack("<IIII", ts[0] // 10**9, ts[0] % 10**9, len(b), len(b)) + b)

    def frag(i, k, payload):
        off = k * FP
        body = payload[off:off + FP]
        h = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), i & 0xffff,
                                  (0x2000 if k < NF - 1 else 0) | off // 8, 64, 17, 0,
                                  bytes([10, 1, (i >> 16) & 255, 1]), bytes([10, 2, 0, 2])))
        h[10:12] = struct.pack("!H", csum(bytes(h)))
        return ETH + bytes(h) + body

    if lone == 1:
        rec(frag(0xfffff, 0, bytes(NF * FP)))
    pay = [bytes((i * 7 + j) & 255 for j in range(256)) * (NF * FP // 256 + 1) for i in range(251)]
    nlone = 1
    for g in range(0, nd, inflight):
        ids = range(g, min(nd, g + inflight))
        ps = {i: struct.pack("!HHHH", 4000, 9999, NF * FP, 0) + pay[i % 251][:NF * FP - 8]
              for i in ids}
        for k in (1, 3, 0, 2):
            for i in ids:
                if lone > 1 and k == 1 and i % lone == 0:
                    rec(frag(0x100000 + nlone, 0, bytes(NF * FP)))  # (sources 10.1.16+.1)
                    nlone += 1
                rec(frag(i, k, ps[i]))
    f.close()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# relink_pcap.py IN OUT KIND: an Ethernet pcap's frames under another link
# header: sll2 (tcpdump -i any), null (BSD loopback, the family
# little-endian as a Linux or x86 writer leaves it), loop (network order).
import struct
import sys

src, dst, kind = sys.argv[1:4]
b = open(src, 'rb').read()
magic = b[:4]
e = '<' if magic in (b'\xd4\xc3\xb2\xa1', b'\x4d\x3c\xb2\xa1') else '>'
hdr = bytearray(b[:24])
dlt = {'sll2': 276, 'null': 0, 'loop': 108}[kind]
struct.pack_into(e + 'I', hdr, 20, dlt)
out = [bytes(hdr)]
i = 24
while i + 16 <= len(b):
    ts1, ts2, cap, ln = struct.unpack_from(e + 'IIII', b, i)
    f = b[i + 16:i + 16 + cap]
    i += 16 + cap
    et = struct.unpack('>H', f[12:14])[0]
    pl = f[14:]
    if kind == 'sll2':
        l2 = struct.pack('>HHIHBB8s', et, 0, 1, 1, 0, 6, b'\x02\0\0\0\0\x05\0\0')
    else:
        af = 2 if et == 0x0800 else 10 if et == 0x86dd else 99
        l2 = struct.pack('<I' if kind == 'null' else '>I', af)
    f = l2 + pl
    out.append(struct.pack(e + 'IIII', ts1, ts2, len(f), len(f) - cap + ln) + f)
open(dst, 'wb').write(b''.join(out))

#!/usr/bin/python3
"""Writes the seed corpus of fuzz_tipc_link (record format: ctl, be16 len, bytes)."""
import os, struct, sys

def hdr(user, mtype, hsize, size, w4=0, w5=0, w9=0):
    w = [0] * (hsize // 4)
    w[0] = (2 << 29) | (user << 25) | ((hsize // 4) << 21) | size
    w[1] = mtype << 29
    w[3] = 0x1001001
    w[4] = w4
    w[5] = w5
    if hsize > 24:
        w[6] = 0x1001001
        w[7] = 0x1001002
    if hsize > 36:
        w[9] = w9
    return b''.join(struct.pack('>I', x) for x in w)

def msg(user, hsize, size, port=5):
    return hdr(user, 0, hsize, size, w5=port) + bytes((i * 7) & 0xff for i in range(size - hsize))

def bundle(msgs):
    body = b''
    for m in msgs:
        body += b'\0' * ((-len(body)) % 4) + m
    return hdr(6, 0, 40, 40 + len(body), w9=len(msgs) << 16) + body

def rec(b, ctl=0):
    return bytes([ctl]) + struct.pack('>H', len(b)) + b

def frags(m, chunk):
    out, no = [], 1
    for off in range(0, len(m), chunk):
        piece = m[off:off + chunk]
        t = 0 if off == 0 else (2 if off + chunk >= len(m) else 1)
        out.append(hdr(12, t, 40, 40 + len(piece), w4=no << 16, w9=0) + piece)
        no += 1
    return out

d = sys.argv[1]
os.makedirs(d, exist_ok=True)
seeds = {
    'bundle': rec(bundle([msg(0, 40, 60), msg(1, 24, 30), msg(3, 40, 400)])),
    'fragments': b''.join(rec(f) for f in frags(msg(2, 40, 1000), 300)),
    'fragments_nonlinear': b''.join(rec(f, 1 | (3 << 2)) for f in frags(msg(2, 40, 1000), 300)),
    'nested_bundle': rec(bundle([msg(0, 40, 60), bundle([msg(0, 40, 50)]), msg(1, 40, 50)])),
    'reasm_bundler': b''.join(rec(f) for f in frags(bundle([msg(0, 40, 100)] * 4), 200)),
    'mixed': rec(msg(0, 40, 100)) + rec(frags(msg(0, 40, 500), 200)[0]) +
             rec(bundle([msg(8, 40, 44)]), 2) + rec(msg(7, 40, 40)),
}
for name, data in seeds.items():
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)

#!/usr/bin/env python3
"""Asks one DNS server for one name's A records over UDP and prints them, one per line.

Usage: dns_query.py SERVER NAME      (exit 1 with the response code on an error or no answer)
Used by the cluster tests to check CoreDNS directly, without the host's resolver configuration.
"""

import random
import socket
import struct
import sys


def query(server, name, timeout=3.0):
    qid = random.randrange(1 << 16)
    header = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)  # recursion desired, one question
    qname = b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".")) + b"\0"
    packet = header + qname + struct.pack(">HH", 1, 1)  # A, IN
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    s.sendto(packet, (server, 53))
    data, _ = s.recvfrom(4096)
    rid, flags, qd, an, _, _ = struct.unpack(">HHHHHH", data[:12])
    if rid != qid:
        raise ValueError("response id does not match the query")
    rcode = flags & 0xF
    pos = 12
    for _ in range(qd):  # skip the question section
        while data[pos] != 0:
            pos += data[pos] + 1
        pos += 5
    out = []
    for _ in range(an):
        if data[pos] & 0xC0 == 0xC0:  # compressed name pointer
            pos += 2
        else:
            while data[pos] != 0:
                pos += data[pos] + 1
            pos += 1
        rtype, _, _, rdlen = struct.unpack(">HHIH", data[pos : pos + 10])
        pos += 10
        if rtype == 1 and rdlen == 4:
            out.append(socket.inet_ntoa(data[pos : pos + 4]))
        pos += rdlen
    return rcode, out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rcode, addrs = query(sys.argv[1], sys.argv[2])
    if rcode != 0 or not addrs:
        print(f"dns_query: {sys.argv[2]}: rcode {rcode}, {len(addrs)} A records", file=sys.stderr)
        sys.exit(1)
    print("\n".join(addrs))


if __name__ == "__main__":
    main()

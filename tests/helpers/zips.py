"""Test helpers: zip archives written byte by byte (zip bombs cheaply, encrypted members).

:func:`write_raw_zip` writes local headers, data and the central directory itself, so one
compressed member can be repeated hundreds of times without compressing it again (300 x 10
MiB of zeros is a 3 MB file made in milliseconds), and members can be encrypted with the
traditional PKWARE cipher (ZipCrypto, APPNOTE.TXT 6.1), which Python's :mod:`zipfile` can
read with the password but cannot write.
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

STORED, DEFLATED = 0, 8


@dataclass(frozen=True)
class RawMember:
    """One member as it goes into the archive: ``data`` already compressed (``method``)."""

    name: str
    data: bytes
    crc: int
    size: int
    method: int = DEFLATED
    encrypted: bool = False


def deflated(name: str, content: bytes, password: bytes | None = None) -> RawMember:
    """``content`` deflated (raw deflate, as zip stores it), optionally ZipCrypto-encrypted."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = packer.compress(content) + packer.flush()
    crc = zlib.crc32(content)
    if password is not None:
        data = zipcrypto(data, crc, password)
    return RawMember(name, data, crc, len(content), DEFLATED, password is not None)


def zeros(name: str, size: int) -> RawMember:
    """A member of ``size`` zero bytes, deflated (about 1/1000 of its size)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = bytes(1 << 20)
    chunks = [packer.compress(block) for _ in range(size >> 20)]
    chunks.append(packer.compress(bytes(size & ((1 << 20) - 1))))
    chunks.append(packer.flush())
    crc = 0
    for _ in range(size >> 20):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(bytes(size & ((1 << 20) - 1)), crc)
    return RawMember(name, b"".join(chunks), crc, size)


def _crc_byte(crc: int, byte: int) -> int:
    return zlib.crc32(bytes([byte]), crc ^ 0xFFFFFFFF) ^ 0xFFFFFFFF


def zipcrypto(data: bytes, crc: int, password: bytes) -> bytes:
    """``data`` encrypted with the traditional PKWARE cipher, its 12-byte header first."""
    keys = [0x12345678, 0x23456789, 0x34567890]

    def update(byte: int) -> None:
        keys[0] = _crc_byte(keys[0], byte)
        keys[1] = ((keys[1] + (keys[0] & 0xFF)) * 134775813 + 1) & 0xFFFFFFFF
        keys[2] = _crc_byte(keys[2], keys[1] >> 24)

    for byte in password:
        update(byte)
    out = bytearray()
    for byte in os.urandom(11) + bytes([crc >> 24]) + data:
        temp = (keys[2] | 2) & 0xFFFF
        out.append(byte ^ (((temp * (temp ^ 1)) >> 8) & 0xFF))
        update(byte)
    return bytes(out)


def write_raw_zip(path: Path, members: list[RawMember], declared: int | None = None) -> Path:
    """Write ``members`` as a zip archive at ``path`` (no zip64: under 65,535 members).

    ``declared``: the member count the end record states (default: the true one), to make
    an archive whose end record lies."""
    directory = bytearray()
    offset = 0
    with path.open("wb") as fh:
        for m in members:
            name = m.name.encode("utf-8")
            flags = 0x800 | (0x1 if m.encrypted else 0)  # UTF-8 names
            local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, flags, m.method, 0, 0x21,
                                m.crc, len(m.data), m.size, len(name), 0)
            fh.write(local + name + m.data)
            directory += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 0x031E, 20, flags,
                                     m.method, 0, 0x21, m.crc, len(m.data), m.size,
                                     len(name), 0, 0, 0, 0, 0o100644 << 16, offset) + name
            offset += len(local) + len(name) + len(m.data)
        fh.write(directory)
        count = len(members) if declared is None else declared
        fh.write(struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count,
                             len(directory), offset, 0))
    return path


def bundle_members(root: Path, password: bytes | None = None) -> list[RawMember]:
    """Every file of the bundle folder ``root`` as a deflated member (``bundle.json`` ...)."""
    return [deflated(p.relative_to(root).as_posix(), p.read_bytes(), password)
            for p in sorted(root.rglob("*")) if p.is_file()]

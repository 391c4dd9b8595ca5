"""Reading JSON Lines fast, without changing what is accepted or how errors read.

:func:`scan_lines` reads a ``.jsonl`` file in blocks of about a MiB, decodes each block
once and parses the lines that are exactly one JSON object with the C scanner of the
standard ``json`` module, without a ``json.loads`` call (and its two regular-expression
matches and three Python frames) per line. Every other line (blank, not UTF-8, invalid
JSON, a non-finite number, an escape of a UTF-16 surrogate, a line longer than
:data:`CAREFUL_LENGTH` characters, a value that is not an object, spaces around the
object) is handed back as its raw bytes, for the caller's careful reading with the same
checks and messages as before (:func:`annotation.formats.bundle._jsonl`). So a line is
either parsed exactly as ``json.loads`` would parse it (same text, nothing before or
after the object) or read the slow way; the fast path never decides an error.

JSON Lines: https://jsonlines.org/ ("each line is a valid JSON value"; UTF-8; the line
separator is ``\\n``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from json.scanner import make_scanner  # the C scanner json.loads uses
from typing import BinaryIO

#: bytes read at a time (a block is cut after its last newline)
BLOCK_BYTES = 1 << 20
#: lines longer than this many characters always take the careful path (which measures
#: them in bytes against the text-size limit)
CAREFUL_LENGTH = 100_000
#: a JSON escape of a UTF-16 surrogate (\ud800-\udfff): only such a line can hold a lone one
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class _Constant(Exception):
    """NaN, Infinity or -Infinity met by the fast parser: the line is read carefully."""


def _refuse_constant(token: str) -> float:
    raise _Constant(token)


_scan: Callable[[str, int], tuple[object, int]] = make_scanner(
    json.JSONDecoder(parse_constant=_refuse_constant))  # type: ignore[arg-type]  # typeshed


def blocks(fh: BinaryIO, size: int | None = None) -> Iterator[bytes]:
    """The file's bytes in blocks that end just after a newline (the last one: at the end
    of the file); a line longer than ``size`` (default :data:`BLOCK_BYTES`) makes a longer
    block."""
    size = size or BLOCK_BYTES
    parts: list[bytes] = []
    while True:
        chunk = fh.read(size)
        if not chunk:
            if parts:
                yield b"".join(parts)
            return
        cut = chunk.rfind(b"\n") + 1
        if cut == 0:
            parts.append(chunk)
            continue
        parts.append(chunk[:cut])
        yield b"".join(parts)
        parts = [chunk[cut:]] if cut < len(chunk) else []


def _byte_lines(block: bytes) -> Iterator[bytes]:
    """The lines of ``block``, each with its ``\\n`` (as iterating a binary file gives)."""
    start = 0
    while start < len(block):
        end = block.find(b"\n", start)
        end = len(block) if end < 0 else end + 1
        yield block[start:end]
        start = end


def scan_lines(fh: BinaryIO) -> Iterator[tuple[int, dict | None, bytes | None]]:
    """``(line number, object, None)`` for each line that is exactly one JSON object, and
    ``(line number, None, raw bytes)`` for every other line (to be read carefully).

    Lines are numbered from 1 and split at ``\\n`` only, as iterating the binary file
    does. A block that is not valid UTF-8 hands back all its lines raw."""
    number = 0
    scan, careful, surrogate = _scan, CAREFUL_LENGTH, SURROGATE_ESCAPE.search
    for block in blocks(fh):
        try:
            text = block.decode("utf-8")
        except UnicodeDecodeError:
            for raw in _byte_lines(block):
                number += 1
                yield number, None, raw
            continue
        escapes = "\\u" in text
        find = text.find
        pos, size = 0, len(text)
        while pos < size:
            number += 1
            nl = find("\n", pos)
            if nl < 0:
                nl = size
            obj: object = None
            if (text[pos] == "{" and nl - pos <= careful
                    and not (escapes and surrogate(text, pos, nl))):
                try:
                    obj, end = scan(text, pos)
                except (ValueError, RecursionError, StopIteration, _Constant):
                    obj = None
                else:
                    if end != nl:
                        obj = None
            if type(obj) is dict:
                yield number, obj, None
            else:
                yield number, None, text[pos:nl + 1].encode("utf-8")
            pos = nl + 1


def count_lines(fh: BinaryIO) -> int:
    """How many lines :func:`scan_lines` will number in ``fh`` (read to its end)."""
    lines, last = 0, b"\n"
    for chunk in iter(lambda: fh.read(BLOCK_BYTES), b""):
        lines += chunk.count(b"\n")
        last = chunk[-1:]
    return lines + (last != b"\n")

"""Reading JSON Lines fast, without changing what is accepted or how errors read.

:func:`scan_blocks` reads a ``.jsonl`` file in blocks of about a MiB and parses each block
in one of two ways:

* **a block at once** (:func:`parse_block`): the block is split at its newlines and every
  line parsed with orjson (a JSON parser in Rust, one call per line, no Python code per
  line). It is taken only when every line is one JSON object and nothing in the block can
  make orjson read a line otherwise than ``json.loads`` does: no run of 19 or more digits
  (an integer outside 64 bits, which orjson reads as a float), no line long enough to be
  nested deeper than the standard library parses, no line over :data:`CAREFUL_LENGTH`.
  Anything orjson refuses (a non-finite number, an overflow to infinity, an escape of a
  lone UTF-16 surrogate, bytes that are not UTF-8, a blank line) sends the whole block the
  other way;
* **line by line** (:func:`_scan_lines_of`): each line that is exactly one JSON object is
  parsed with the C scanner of the standard ``json`` module, without a ``json.loads`` call
  per line. Every other line (blank, not UTF-8, invalid JSON, a non-finite number, an
  escape of a UTF-16 surrogate, a line longer than :data:`CAREFUL_LENGTH` characters, a
  value that is not an object, spaces around the object) is handed back as its raw bytes,
  for the caller's careful reading with the same checks and messages as before
  (:func:`annotation.formats.bundle._jsonl`).

So a line is either parsed exactly as ``json.loads`` parses it or read the slow way; the
fast paths never decide an error. (A line with spaces around its object, or ending in
``\r\n``, is read by ``json.loads`` as the object alone, and so is it in a block read at
once.) The differential tests in ``tests/test_import_progress.py`` check both paths
against ``json.loads`` on generated lines.

JSON Lines: https://jsonlines.org/ ("each line is a valid JSON value"; UTF-8; the line
separator is ``\n``). JSON: RFC 8259 (what both parsers accept, sections 2-7).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from json.scanner import make_scanner  # the C scanner json.loads uses
from typing import BinaryIO

import orjson

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


#: a run of this many digits can be an integer outside 64 bits (|n| >= 2**63 has 19 digits),
#: which orjson reads as a float and ``json.loads`` as an int
LONG_DIGITS = 19
_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
#: lines of at least this many bytes have their brackets counted: a line nested
#: :data:`DEEP` levels has at least that many (``json.loads`` gives up about 1,000 levels
#: deep, orjson at 1,024); a shorter line cannot be nested that deep
DEEP = 500
DEEP_LINE = 2 * DEEP


def parse_block(block: bytes) -> list[dict] | None:
    """The objects of the lines of ``block`` (each line one JSON object, parsed by orjson),
    or None when the block must be read line by line (see the module's docstring: a line
    that is not one object, or a block where orjson could read a line otherwise than
    ``json.loads``)."""
    parts = block.split(b"\n")
    if not parts[-1]:
        parts.pop()  # the newline that ends the block
    if not parts or b"0" * LONG_DIGITS in block.translate(_DIGITS_ONLY):
        return None
    if max(map(len, parts)) >= DEEP_LINE:
        for part in parts:
            if len(part) >= DEEP_LINE and (len(part) > CAREFUL_LENGTH
                                           or part.count(b"{") + part.count(b"[") >= DEEP):
                return None
    try:
        objects = list(map(orjson.loads, parts))
    except ValueError:  # orjson.JSONDecodeError: a line orjson refuses (json may not)
        return None
    if set(map(type, objects)) != {dict}:
        return None
    return objects


def _scan_lines_of(block: bytes, number: int) -> Iterator[tuple[int, dict | None, bytes | None]]:
    """The lines of ``block`` (the first one is line ``number + 1``), one at a time:
    ``(line number, object, None)`` for a line that is exactly one JSON object, else
    ``(line number, None, raw bytes)``."""
    scan, careful, surrogate = _scan, CAREFUL_LENGTH, SURROGATE_ESCAPE.search
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:
        for raw in _byte_lines(block):
            number += 1
            yield number, None, raw
        return
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


def scan_blocks(fh: BinaryIO) -> Iterator[tuple[int, list[dict] | None, bytes | None]]:
    """The lines of ``fh``, a block at a time where possible: ``(n, objects, None)`` for
    the consecutive lines ``n, n + 1, ...``, each exactly one JSON object, and ``(n, None,
    raw bytes)`` for a line ``n`` to be read carefully.

    Lines are numbered from 1 and split at ``\\n`` only, as iterating the binary file
    does. A block that is not valid UTF-8 hands back all its lines raw."""
    number = 0
    for block in blocks(fh):
        objects = parse_block(block)
        if objects is not None:
            yield number + 1, objects, None
            number += len(objects)
            continue
        line = number
        for line, obj, raw in _scan_lines_of(block, number):
            yield line, (None if obj is None else [obj]), raw
        number = line


def count_lines(fh: BinaryIO) -> int:
    """How many lines :func:`scan_blocks` will number in ``fh`` (read to its end)."""
    lines, last = 0, b"\n"
    for chunk in iter(lambda: fh.read(BLOCK_BYTES), b""):
        lines += chunk.count(b"\n")
        last = chunk[-1:]
    return lines + (last != b"\n")

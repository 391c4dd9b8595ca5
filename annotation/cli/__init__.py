"""The ``judge-audit`` command: :func:`main` parses, the library does the work."""

from annotation.cli.main import MAX_UPLOAD_MB, build_parser, main

__all__ = ["MAX_UPLOAD_MB", "build_parser", "main"]

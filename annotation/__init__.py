"""judge-audit: audit the VLM judges of image-generation benchmarks against human annotators.

The importable library behind the Streamlit app and the ``judge-audit`` command. All logic
lives here; the pages only lay out widgets and call it. Start with :mod:`annotation.store`
(the SQLite project store) and :mod:`annotation.formats.importers` (bundle, TIIF-Bench, VIF-Bench).
"""

__version__ = "0.1.0"

"""Orator's desktop speech studio (PySide6): editor, voice library, read-aloud and export.

The engine is reached only through ``qtapp.worker`` (a QObject on its own thread); everything
the studio writes lives under the data directory of ``qtapp.settings``.
"""

"""Orator's OpenAI-compatible HTTP server: ``/v1/audio/speech``, a voice library API and a live web page.

``server.app.create_app`` wires the pieces; ``server.cli`` is ``python main.py serve``.
"""

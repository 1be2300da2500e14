"""The command line (``python main.py say|export|voiceover|info|serve``): parsers and commands over the engine and
the product services.

One module a command (``say``, ``export``, ``voiceover``, ``info``; ``serve`` is ``server.cli``), and what they
share: ``options`` (the common options and their types), ``loading`` (the model and its sampling), ``voices``
(voices by name), ``exits`` (exit statuses, one-line errors, output checks), ``progress`` (export's progress line
and Ctrl-C), ``casting_args`` (``--cast``, ``--dialogue-voice``).
"""

"""The command line (``python main.py say|export|voiceover|info|serve``): parsers and commands over the engine and
the product services."""

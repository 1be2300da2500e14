"""The inference core: text → segments → prompt → frames → audio chunks, with ``engine.core.engine.Engine`` as its face.

It imports nothing from the product services beside it (documents, export, voice library, voiceover) nor from the
command line; the import layers of pyproject.toml say so and CI checks them (``lint-imports``).
"""

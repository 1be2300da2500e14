"""Pronunciation rules as the engine applies them to the text it speaks: one rule, a lexicon of rules, the defaults.
The rules' store on disk is a product service (``engine.pronunciation``)."""

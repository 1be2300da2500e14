"""Dialogs of the studio: models & settings, new voices (preset, design, clone), export audio."""

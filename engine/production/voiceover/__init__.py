"""Subtitle-timed voiceovers: subtitle files read (``cues``), lines laid in time (``timeline``), a track rendered
(``render``), takes kept between runs (``project``) and the ``voiceover`` command (``cli``). Qt-free."""

# the rates a track may be written at (resampled with soxr from the engine's 24 kHz); here, free of numpy, so
# the command's --help and the studio share it
SAMPLE_RATES = (16000, 22050, 24000, 32000, 44100, 48000)

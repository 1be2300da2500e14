"""Subtitle-timed voiceovers: subtitle files read (``cues``), lines laid in time (``timeline``), a track rendered
(``render``), takes kept between runs (``project``) and the ``voiceover`` command (``cli``). Qt-free."""

"""Product services over the inference core, without Qt: the audiobook (``book_structure``: a document's chapters,
passages and pauses; ``book_sources``: a document file as a book, with an EPUB's cover; ``chapter_ranges``: chapters
chosen by number; ``export_plan``: what an export will write; ``book_export``: a book to files;
``export_leftovers``: what a killed export leaves and its removal; ``export_jobs``: the export queue's jobs;
``export_queue``: the queue and its file; ``segment_cache``: what makes an export resumable), audio files
(``encode``: the file and stream encoders; ``audio_formats``: WAV, FLAC, MP3, Opus, AAC/M4B; ``audio_metadata``:
tags, chapters and a cover; ``mux_pipeline``: the PyAV container each is written through; ``av_library``: PyAV
itself; ``loudness``, ``levels``, ``tempo``, ``subtitles``, ``time_left``, ``segment_list``), casting
(``casting``: who speaks each quotation) and voiceover (``voiceover``: speech on a subtitle file's cues)."""

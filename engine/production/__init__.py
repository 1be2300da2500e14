"""Product services over the inference core, without Qt: the audiobook (``book_structure``: a document's chapters,
passages and pauses; ``book_sources``: a document file as a book; ``book_export``: a book to files;
``export_jobs``: the export queue's jobs; ``segment_cache``: what makes an export resumable), audio files
(``encode``: WAV, FLAC, MP3, Opus, AAC/M4B with tags, chapters and a cover; ``loudness``, ``levels``, ``tempo``,
``subtitles``, ``time_left``, ``segment_list``), casting (``casting``: who speaks each quotation) and voiceover
(``voiceover``: speech on a subtitle file's cues)."""

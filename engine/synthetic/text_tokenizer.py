"""A small synthetic Qwen2-style byte-level BPE text tokenizer for synthetic checkpoints.

`write_text_tokenizer(out_dir)` writes the text-tokenizer files of an official Qwen3-TTS model
directory (`vocab.json`, `merges.txt`, `tokenizer_config.json`, `preprocessor_config.json`).
The merges are learned from a small built-in multilingual corpus, so real text tokenizes into
a plausible number of ids; the ids the model relies on are exactly the official ones:
bytes in GPT-2 order (so "\\n" is 198), "assistant" is 77091 and the special tokens sit at
151643..151675, all below the 151936 text-embedding rows. The output is the same bytes on
every run.
"""

import json
import pathlib

from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

# The official Qwen2 pre-tokenizer split.
PRETOKENIZE_REGEX = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

ASSISTANT_TOKEN = "assistant"
ASSISTANT_ID = 77091
TARGET_VOCAB_SIZE = 4096  # bytes + learned merges

FIRST_SPECIAL_ID = 151643
# (content, special) in id order from 151643; the Qwen3 / Qwen3-Omni family layout.
SPECIAL_TOKENS = (
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False),
    ("<|repo_name|>", False),
    ("<|file_sep|>", False),
    ("<tool_response>", False),
    ("</tool_response>", False),
    ("<think>", False),
    ("</think>", False),
    ("<|audio_start|>", True),
    ("<|audio_end|>", True),
    ("<tts_pad>", True),
    ("<tts_text_bos>", True),
    ("<tts_text_eod>", True),
    ("<tts_text_bos_single>", True),
    ("<|audio_pad|>", True),
)

# Hand-written sentences in the ten supported languages, each block opened by the role word.
CORPUS = """\
assistant
The quick brown fox jumps over the lazy dog. Hello world, this is a short test of speech.
Good morning! How are you today? I am reading a book about the history of music and sound.
She said that the weather would be sunny tomorrow, so we planned a walk along the river.
Please speak slowly and clearly. The voice should sound calm, warm, friendly and natural.
Numbers like 1, 2, 3, 42 and 2024 appear in text; so do dates such as 12 May and prices of $9.99.
Once upon a time there was a little village near the mountains where everyone loved to sing.
The engine streams audio in small chunks, and the player starts before the whole sentence is done.
Chapter one begins on a cold winter evening, when the lights of the city slowly came on.
Researchers measured the latency of every frame and reported the median over several runs.
Would you like some tea or coffee? We also have fresh orange juice, bread, cheese and apples.
My favourite colours are blue, green and yellow; my brother prefers red, purple and black.
Turn left at the second traffic light, then continue straight until you reach the station.
The children laughed, the dogs barked, and somewhere in the distance a train whistled twice.
assistant
Guten Morgen! Wie geht es dir heute? Ich lese ein Buch über die Geschichte der Musik.
Die Stimme soll ruhig, warm und freundlich klingen. Bitte sprich langsam und deutlich.
Morgen wird das Wetter schön, deshalb gehen wir am Fluss spazieren und trinken Kaffee.
Es war einmal ein kleines Dorf in den Bergen, in dem alle Menschen gerne sangen.
Der Zug fährt um halb acht vom Hauptbahnhof ab und kommt am Nachmittag in Hamburg an.
Kannst du mir bitte helfen? Ich suche die Bibliothek, das Rathaus und einen guten Bäcker.
assistant
Bonjour tout le monde ! Comment allez-vous aujourd'hui ? Je lis un livre sur l'histoire de la musique.
La voix doit être calme, chaleureuse et naturelle. Parlez lentement et clairement, s'il vous plaît.
Demain il fera beau, alors nous irons nous promener le long de la rivière avec des amis.
Il était une fois un petit village près des montagnes où tout le monde aimait chanter.
Le train part à huit heures de la gare centrale et arrive à Lyon dans l'après-midi.
Pouvez-vous m'aider, s'il vous plaît ? Je cherche la bibliothèque, la mairie et une boulangerie.
assistant
¡Buenos días! ¿Cómo estás hoy? Estoy leyendo un libro sobre la historia de la música.
La voz debe sonar tranquila, cálida y natural. Por favor, habla despacio y con claridad.
Buongiorno a tutti! Come stai oggi? Sto leggendo un libro sulla storia della musica.
La voce deve essere calma, calda e naturale. Per favore, parla lentamente e chiaramente.
Bom dia! Como você está hoje? Estou lendo um livro sobre a história da música.
A voz deve soar calma, quente e natural. Por favor, fale devagar e com clareza.
assistant
Доброе утро! Как дела сегодня? Я читаю книгу об истории музыки и звука.
Голос должен звучать спокойно, тепло и естественно. Пожалуйста, говорите медленно и ясно.
Поезд отправляется в восемь часов с главного вокзала и прибывает в Москву после обеда.
assistant
早上好！你今天怎么样？我正在读一本关于音乐和声音历史的书。
声音应该平静、温暖、自然。请说得慢一点，清楚一点。
明天天气会很好，所以我们打算沿着河边散步，然后一起喝茶。
从前，在山脚下有一个小村庄，村里的每个人都喜欢唱歌。
这个引擎把音频分成小块流式输出，播放器在整句话完成之前就开始播放。
你好，世界。今天我们来测试一下语音合成的效果。
火车早上八点从中央车站出发，下午到达上海。请问图书馆、市政厅和面包店在哪里？
我最喜欢的颜色是蓝色、绿色和黄色，我弟弟更喜欢红色、紫色和黑色。
研究人员测量了每一帧的延迟，并报告了多次运行的中位数。
assistant
おはようございます！今日の調子はどうですか？私は音楽と音の歴史についての本を読んでいます。
声は落ち着いていて、温かく、自然に聞こえるべきです。ゆっくり、はっきり話してください。
明日は晴れるので、川沿いを散歩して、それからお茶を飲みましょう。
むかしむかし、山のふもとに小さな村があり、村の人々はみんな歌うのが大好きでした。
こんにちは、世界。今日は音声合成のテストをします。
電車は朝八時に中央駅を出発し、午後に大阪に到着します。図書館と市役所はどこですか？
私の好きな色は青と緑と黄色で、弟は赤と紫と黒が好きです。コーヒーと紅茶、どちらがいいですか？
assistant
좋은 아침입니다! 오늘 기분이 어떠세요? 저는 음악과 소리의 역사에 관한 책을 읽고 있어요.
목소리는 차분하고 따뜻하며 자연스럽게 들려야 합니다. 천천히 또렷하게 말씀해 주세요.
내일은 날씨가 맑아서 강가를 따라 산책하고 함께 차를 마실 거예요.
안녕하세요, 세계. 오늘은 음성 합성을 시험해 봅니다.
기차는 아침 여덟 시에 중앙역을 출발해서 오후에 부산에 도착합니다. 도서관은 어디에 있어요?
제가 좋아하는 색은 파란색, 초록색, 노란색이고 동생은 빨간색과 보라색을 좋아해요.
"""


def write_text_tokenizer(out_dir: pathlib.Path) -> None:
    """Write vocab.json, merges.txt, tokenizer_config.json and preprocessor_config.json."""
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    merges = learn_merges()
    vocab = build_vocab(merges)
    _write_text(out_dir / "vocab.json", json.dumps(vocab, ensure_ascii=False, separators=(",", ":")))
    _write_text(out_dir / "merges.txt", "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    _write_text(out_dir / "tokenizer_config.json", _json(tokenizer_config()))
    _write_text(out_dir / "preprocessor_config.json", _json(preprocessor_config()))


def learn_merges() -> list[tuple[str, str]]:
    """Learn byte-level BPE merges from the built-in corpus (deterministic)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = _pre_tokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=TARGET_VOCAB_SIZE,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator([CORPUS], trainer=trainer)
    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    return [(a, b) for a, b in merges]


def build_vocab(merges: list[tuple[str, str]]) -> dict[str, int]:
    """The 151643 regular tokens: bytes in GPT-2 order at 0..255, merge results from 256 on,
    "assistant" at its official id, and unreachable placeholders in every other slot (as in the
    official files, the special tokens follow the regular vocabulary; they are not in it)."""
    learned = {char: index for index, char in enumerate(byte_level_alphabet())}
    for a, b in merges:
        learned.setdefault(a + b, len(learned))
    if ASSISTANT_TOKEN not in learned:
        raise RuntimeError(f"the corpus did not teach the merges for {ASSISTANT_TOKEN!r}")
    if len(learned) > ASSISTANT_ID:
        raise RuntimeError(f"{len(learned)} learned tokens overlap id {ASSISTANT_ID}")
    token_of_id = {index: token for token, index in learned.items() if token != ASSISTANT_TOKEN}
    token_of_id[ASSISTANT_ID] = ASSISTANT_TOKEN
    return {token_of_id.get(index, f"<|unused_{index}|>"): index for index in range(FIRST_SPECIAL_ID)}


def byte_level_alphabet() -> list[str]:
    """The 256 printable characters standing for bytes 0..255, in GPT-2 vocabulary order."""
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    shifted = [byte for byte in range(256) if byte not in printable]
    char_of_byte = {byte: chr(byte) for byte in printable}
    char_of_byte.update({byte: chr(256 + offset) for offset, byte in enumerate(shifted)})
    return [char_of_byte[byte] for byte in printable + shifted]


def tokenizer_config() -> dict:
    """The tokenizer_config.json of a Qwen3-TTS model directory."""
    added_tokens = {
        str(FIRST_SPECIAL_ID + offset): {
            "content": content,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": special,
        }
        for offset, (content, special) in enumerate(SPECIAL_TOKENS)
    }
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": added_tokens,
        "additional_special_tokens": [content for content, special in SPECIAL_TOKENS if special],
        "bos_token": None,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 131072,
        "pad_token": "<|endoftext|>",
        "processor_class": "Qwen3TTSProcessor",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }


def preprocessor_config() -> dict:
    """The top-level preprocessor_config.json: names the processor for AutoProcessor."""
    return {"processor_class": "Qwen3TTSProcessor"}


def _pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )


def _json(data: dict) -> str:
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def _write_text(path: pathlib.Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", newline="\n")

"""What the engine speaks, before any model runs: segments of text, live text, the reading policy, spoken symbols,
voice marks and the kinds of a document's blocks. Imports no PyTorch."""

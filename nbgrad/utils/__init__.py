"""nbgrad.utils: helpers around the engine, as torch.utils (``data``: data sets and loaders;
``checkpoint``: activation checkpointing; ``benchmark``: timing statements)."""

from nbgrad.utils import benchmark, checkpoint, data

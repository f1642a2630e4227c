"""nbgrad.utils: helpers around the engine, as torch.utils (``data``: data sets and loaders;
``checkpoint``: activation checkpointing)."""

from nbgrad.utils import checkpoint, data

"""nbgrad.utils: helpers around the engine, as torch.utils (``data``: data sets and loaders)."""

from nbgrad.utils import data

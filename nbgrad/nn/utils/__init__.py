"""nbgrad.nn.utils: helpers around the layers (``rnn.pad_sequence``)."""

from nbgrad.nn.utils import rnn

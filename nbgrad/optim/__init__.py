"""nbgrad.optim: optimizers that update Parameters from their ``.grad``, as torch.optim does."""

from nbgrad.optim import lr_scheduler
from nbgrad.optim.adam import Adam, AdamW
from nbgrad.optim.adaptive import (
    ASGD,
    Adadelta,
    Adagrad,
    Adamax,
    NAdam,
    RAdam,
    RMSprop,
    Rprop,
)
from nbgrad.optim.lbfgs import LBFGS
from nbgrad.optim.optimizer import Optimizer
from nbgrad.optim.sgd import SGD

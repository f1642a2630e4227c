"""DataParallel, as PyTorch runs it without GPUs: a wrapper that calls its module."""

from nbgrad.nn.modules.module import Module


class DataParallel(Module):
    """Holds ``module`` (so its parameters are ``module.<name>``) and runs it. PyTorch splits
    the batch over its GPUs; with none, as here, it keeps no device and runs the module on the
    whole batch, whatever ``device_ids`` says."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

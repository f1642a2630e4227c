"""``torch.special``: the special functions of ops/functions/special.py under PyTorch's
``torch.special`` names, and the aliases PyTorch keeps there for functions of ``torch``."""

import nbgrad as _nb
from nbgrad.ops.functions import special as _special
from nbgrad.ops.out import with_out as _with_out

entr = _special.special_entr
ndtri = _special.special_ndtri
log_ndtr = _special.special_log_ndtr
erfcx = _special.special_erfcx
i0e = _special.special_i0e
i1 = _special.special_i1
i1e = _special.special_i1e
xlog1py = _special.special_xlog1py
zeta = _special.special_zeta
multigammaln = _with_out(_special.special_multigammaln)
gammainc = _with_out(_special.special_gammainc)
gammaincc = _with_out(_special.special_gammaincc)
# the same nodes as the torch.* functions of those names
gammaln = _nb.lgamma
digamma = psi = _nb.digamma
polygamma = _nb.polygamma
i0 = _nb.i0
expit = _nb.sigmoid
erf = _nb.erf
erfc = _nb.erfc
erfinv = _nb.erfinv
exp2 = _nb.exp2
expm1 = _nb.expm1
log1p = _nb.log1p
sinc = _nb.sinc
xlogy = _nb.xlogy
logsumexp = _nb.logsumexp

__all__ = [
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammainc",
    "gammaincc",
    "gammaln",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "log1p",
    "log_ndtr",
    "logsumexp",
    "multigammaln",
    "ndtri",
    "polygamma",
    "psi",
    "sinc",
    "xlog1py",
    "xlogy",
    "zeta",
]

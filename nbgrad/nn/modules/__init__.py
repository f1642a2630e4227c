from nbgrad.nn.modules.activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from nbgrad.nn.modules.activation_more import (
    CELU,
    ELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LogSigmoid,
    Mish,
    PReLU,
    ReLU6,
    SiLU,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanhshrink,
    Threshold,
)
from nbgrad.nn.modules.container import ModuleDict, ModuleList, Sequential
from nbgrad.nn.modules.conv import Conv1d, Conv2d, Conv3d
from nbgrad.nn.modules.conv_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from nbgrad.nn.modules.dropout import (
    AlphaDropout,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
)
from nbgrad.nn.modules.flatten import Flatten, Unflatten
from nbgrad.nn.modules.fold import Fold, PixelShuffle, PixelUnshuffle, Unfold
from nbgrad.nn.modules.linear import Identity, Linear
from nbgrad.nn.modules.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
)
from nbgrad.nn.modules.loss_more import (
    CosineEmbeddingLoss,
    CosineSimilarity,
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    MarginRankingLoss,
    MultiLabelSoftMarginLoss,
    PairwiseDistance,
    PoissonNLLLoss,
    SmoothL1Loss,
    SoftMarginLoss,
    TripletMarginLoss,
)
from nbgrad.nn.modules.module import Module
from nbgrad.nn.modules.nn_extra import (
    CTCLoss,
    EmbeddingBag,
    FractionalMaxPool2d,
    FractionalMaxPool3d,
    MultiLabelMarginLoss,
    MultiMarginLoss,
    RReLU,
)
from nbgrad.nn.modules.normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from nbgrad.nn.modules.normalization_more import (
    GroupNorm,
    InstanceNorm1d,
    InstanceNorm2d,
    InstanceNorm3d,
    LocalResponseNorm,
    RMSNorm,
)
from nbgrad.nn.modules.parallel import DataParallel
from nbgrad.nn.modules.pooling import AvgPool2d, MaxPool2d
from nbgrad.nn.modules.pooling_extra import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool2d,
    AdaptiveMaxPool3d,
    AvgPool1d,
    AvgPool3d,
    MaxPool1d,
    MaxPool3d,
    Upsample,
)
from nbgrad.nn.modules.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase
from nbgrad.nn.modules.sparse import Embedding
from nbgrad.nn.modules.unpooling import ChannelShuffle, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d

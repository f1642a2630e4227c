"""Every layer against PyTorch with the same weights: outputs, grad_fn graph, input and parameter
gradients, and module state (running statistics) all agree, in float64 and in float32."""

import numpy as np
import pytest
from graph_compare import saved_names, structure, to_numpy
from nn_compare import assert_same_run, run_both

import nbgrad


def linear_cases():
    return {
        "linear 2d": lambda T, m: m.module(T.nn.Linear(5, 3))(m.input(4, 5)),
        "linear 3d": lambda T, m: m.module(T.nn.Linear(5, 3))(m.input(2, 4, 5)),
        "linear 4d": lambda T, m: m.module(T.nn.Linear(5, 3))(m.input(2, 3, 4, 5)),
        "linear 1d": lambda T, m: m.module(T.nn.Linear(5, 3))(m.input(5)),
        "linear non-contiguous": lambda T, m: m.module(T.nn.Linear(4, 3))(
            m.input(2, 4, 5).transpose(1, 2)
        ),
        "linear no bias 2d": lambda T, m: m.module(T.nn.Linear(5, 3, bias=False))(m.input(4, 5)),
        "linear no bias 3d": lambda T, m: m.module(T.nn.Linear(5, 3, bias=False))(m.input(2, 4, 5)),
        "linear no bias 1d": lambda T, m: m.module(T.nn.Linear(5, 3, bias=False))(m.input(5)),
        "identity": lambda T, m: m.module(T.nn.Identity(3, key=1))(m.input(2, 3)) * 2,
    }


def conv_cases():
    def conv2d(*args, shape=(2, 3, 8, 9), **kwargs):
        return lambda T, m: m.module(T.nn.Conv2d(*args, **kwargs))(m.input(*shape))

    def conv1d(*args, shape=(2, 4, 11), **kwargs):
        return lambda T, m: m.module(T.nn.Conv1d(*args, **kwargs))(m.input(*shape))

    return {
        "conv2d": conv2d(3, 4, 3),
        "conv2d stride padding": conv2d(3, 4, 3, stride=2, padding=1),
        "conv2d rectangular": conv2d(3, 4, (3, 2), stride=(2, 1), padding=(0, 1)),
        "conv2d dilation": conv2d(3, 4, 3, dilation=2, padding=2),
        "conv2d groups": conv2d(4, 6, 3, groups=2, shape=(2, 4, 7, 7)),
        "conv2d depthwise": conv2d(4, 4, 3, groups=4, bias=False, shape=(2, 4, 6, 6)),
        "conv2d no bias": conv2d(3, 4, 3, bias=False),
        "conv2d 1x1": conv2d(3, 5, 1),
        "conv2d unbatched": conv2d(3, 4, 3, shape=(3, 8, 9)),
        "conv2d same": conv2d(3, 4, 3, padding="same"),
        "conv2d same even kernel": conv2d(3, 4, 4, padding="same"),
        "conv2d valid": conv2d(3, 4, 3, padding="valid"),
        "conv2d reflect": conv2d(3, 4, 3, padding=1, padding_mode="reflect"),
        "conv2d replicate": conv2d(3, 4, 3, padding=2, padding_mode="replicate"),
        "conv2d circular": conv2d(3, 4, 3, padding=(2, 1), padding_mode="circular"),
        "conv1d circular": conv1d(4, 6, 3, padding=3, padding_mode="circular"),
        "conv1d": conv1d(4, 6, 3),
        "conv1d stride padding dilation": conv1d(4, 6, 3, stride=2, padding=2, dilation=2),
        "conv1d groups": conv1d(4, 6, 3, groups=2),
        "conv1d unbatched": conv1d(4, 6, 3, shape=(4, 11)),
        "conv1d same": conv1d(4, 2, 5, padding="same", bias=False),
    }


def pooling_cases():
    def pool(layer, *args, shape=(2, 3, 7, 8), **kwargs):
        return lambda T, m: getattr(T.nn, layer)(*args, **kwargs)(m.input(*shape))

    return {
        "max pool": pool("MaxPool2d", 2),
        "max pool stride padding": pool("MaxPool2d", 3, stride=2, padding=1),
        "max pool ceil": pool("MaxPool2d", 3, stride=2, ceil_mode=True),
        "max pool dilation": pool("MaxPool2d", 2, stride=1, padding=1, dilation=2),
        "max pool rectangular": pool("MaxPool2d", (3, 2), stride=(1, 2)),
        "max pool unbatched": pool("MaxPool2d", 2, shape=(3, 6, 6)),
        "max pool indices": pool("MaxPool2d", 2, return_indices=True),
        "avg pool": pool("AvgPool2d", 2),
        "avg pool stride padding": pool("AvgPool2d", 3, stride=2, padding=1),
        "avg pool ceil": pool("AvgPool2d", 3, stride=2, padding=1, ceil_mode=True),
        "avg pool exclude pad": pool("AvgPool2d", 3, stride=2, padding=1, count_include_pad=False),
        "avg pool divisor": pool("AvgPool2d", 2, divisor_override=3),
        "avg pool unbatched": pool("AvgPool2d", 2, shape=(3, 6, 6)),
        "flatten": lambda T, m: T.nn.Flatten()(m.input(2, 3, 4, 5)),
        "flatten dims": lambda T, m: T.nn.Flatten(0, 2)(m.input(2, 3, 4, 5)),
        "unflatten": lambda T, m: T.nn.Unflatten(1, (2, 3))(m.input(4, 6)),
    }


def embedding_and_norm_cases():
    def embedding(*args, **kwargs):
        def case(T, m):
            layer = m.module(T.nn.Embedding(*args, **kwargs))
            return layer(m.constant([[1, 2, 4], [4, 3, 1]], T.int64))

        return case

    def norm(layer, *args, shape, eval_mode=False, **kwargs):
        def case(T, m):
            module = m.module(getattr(T.nn, layer)(*args, **kwargs))
            if eval_mode:
                module.train()(m.input(*shape, requires_grad=False))  # move the running stats
                module.eval()
            return module(m.input(*shape))

        return case

    return {
        "embedding": embedding(10, 3),
        "embedding padding_idx": embedding(10, 3, padding_idx=4),
        "embedding scale by freq": embedding(10, 3, scale_grad_by_freq=True),
        "embedding max norm": embedding(10, 3, max_norm=1.0),
        "layer norm": norm("LayerNorm", 5, shape=(4, 5)),
        "layer norm 2 dims": norm("LayerNorm", (4, 5), shape=(2, 4, 5)),
        "layer norm no affine": norm("LayerNorm", 5, elementwise_affine=False, shape=(3, 5)),
        "layer norm no bias": norm("LayerNorm", 5, bias=False, shape=(3, 5)),
        "batch norm 1d": norm("BatchNorm1d", 5, shape=(4, 5)),
        "batch norm 1d 3d input": norm("BatchNorm1d", 4, shape=(3, 4, 5)),
        "batch norm 1d eval": norm("BatchNorm1d", 5, shape=(4, 5), eval_mode=True),
        "batch norm no affine": norm("BatchNorm1d", 5, affine=False, shape=(4, 5)),
        "batch norm no running stats": norm(
            "BatchNorm1d", 5, track_running_stats=False, shape=(4, 5)
        ),
        "batch norm cumulative": norm("BatchNorm1d", 5, momentum=None, shape=(4, 5)),
        "batch norm 2d": norm("BatchNorm2d", 3, shape=(2, 3, 4, 5)),
        "batch norm 2d eval": norm("BatchNorm2d", 3, shape=(2, 3, 4, 5), eval_mode=True),
    }


def activation_cases():
    def act(layer, *args, shape=(4, 5), **kwargs):
        return lambda T, m: getattr(T.nn, layer)(*args, **kwargs)(m.input(*shape))

    return {
        "relu": act("ReLU"),
        "relu inplace": lambda T, m: T.nn.ReLU(inplace=True)(m.input(4, 5) * 1),
        "sigmoid": act("Sigmoid"),
        "tanh": act("Tanh"),
        "gelu": act("GELU"),
        "gelu tanh": act("GELU", approximate="tanh"),
        "leaky relu": act("LeakyReLU", 0.2),
        "leaky relu inplace": lambda T, m: T.nn.LeakyReLU(0.1, inplace=True)(m.input(4, 5) * 1),
        "dropout inplace eval": lambda T, m: T.nn.Dropout(0.3, inplace=True).eval()(m.input(2, 3)),
        "softmax": act("Softmax", dim=1),
        "softmax 3d last": act("Softmax", dim=-1, shape=(2, 3, 4)),
        "log softmax": act("LogSoftmax", dim=1),
        "dropout eval": lambda T, m: T.nn.Dropout(0.5).eval()(m.input(4, 5)),
    }


def loss_cases():
    def regression(loss, shape=(4, 5), target_grad=False, **kwargs):
        def case(T, m):
            x = m.input(*shape)
            target = m.input(*shape, requires_grad=target_grad)
            return getattr(T.nn, loss)(**kwargs)(x, target)

        return case

    def classification(loss, shape=(4, 5), target_shape=(4,), classes=5, weight=False, **kwargs):
        def case(T, m):
            x = m.input(*shape)
            target = m.labels(*target_shape, classes=classes)
            if loss == "NLLLoss":
                x = x.log_softmax(1 if len(shape) > 1 else 0)
            options = dict(kwargs)
            if weight:
                options["weight"] = m.input(classes, requires_grad=False, low=0.1, high=1.0)
            return getattr(T.nn, loss)(**options)(x, target)

        return case

    def probabilities(shape=(4, 5), **kwargs):
        def case(T, m):
            x = m.input(*shape)
            target = m.input(*shape, requires_grad=False, low=0.0, high=1.0).softmax(1)
            options = dict(kwargs)
            if options.pop("weighted", False):
                options["weight"] = m.input(shape[1], requires_grad=False, low=0.1, high=1.0)
            return T.nn.CrossEntropyLoss(**options)(x, target)

        return case

    def binary(loss, target_grad=False, **kwargs):
        def case(T, m):
            if loss == "BCELoss":
                x = m.input(4, 5, low=0.05, high=0.95)
            else:
                x = m.input(4, 5)
            target = m.input(4, 5, requires_grad=target_grad, low=0.0, high=1.0)
            options = dict(kwargs)
            for name in ("weight", "pos_weight"):
                if options.get(name) is True:
                    options[name] = m.input(5, requires_grad=False, low=0.5, high=2.0)
            return getattr(T.nn, loss)(**options)(x, target)

        return case

    cases = {
        "mse": regression("MSELoss"),
        "mse sum": regression("MSELoss", reduction="sum"),
        "mse none": regression("MSELoss", reduction="none"),
        "mse target grad": regression("MSELoss", target_grad=True),
        "l1": regression("L1Loss"),
        "l1 sum target grad": regression("L1Loss", reduction="sum", target_grad=True),
        "l1 none": regression("L1Loss", reduction="none"),
        "cross entropy": classification("CrossEntropyLoss"),
        "cross entropy sum": classification("CrossEntropyLoss", reduction="sum"),
        "cross entropy none": classification("CrossEntropyLoss", reduction="none"),
        "cross entropy weight": classification("CrossEntropyLoss", weight=True),
        "cross entropy ignore": classification("CrossEntropyLoss", ignore_index=2, classes=3),
        "cross entropy weight ignore none": classification(
            "CrossEntropyLoss", weight=True, ignore_index=1, reduction="none"
        ),
        "cross entropy 1d": classification("CrossEntropyLoss", shape=(5,), target_shape=()),
        "cross entropy 3d": classification(
            "CrossEntropyLoss", shape=(2, 5, 3), target_shape=(2, 3)
        ),
        "cross entropy 3d none": classification(
            "CrossEntropyLoss", shape=(2, 5, 3), target_shape=(2, 3), reduction="none"
        ),
        "cross entropy 4d": classification(
            "CrossEntropyLoss", shape=(2, 5, 3, 2), target_shape=(2, 3, 2)
        ),
        "cross entropy label smoothing": classification("CrossEntropyLoss", label_smoothing=0.1),
        "cross entropy label smoothing sum": classification(
            "CrossEntropyLoss", label_smoothing=0.2, reduction="sum"
        ),
        "cross entropy label smoothing none": classification(
            "CrossEntropyLoss", label_smoothing=0.2, reduction="none", ignore_index=3
        ),
        "cross entropy label smoothing weight": classification(
            "CrossEntropyLoss", label_smoothing=0.1, weight=True, ignore_index=0
        ),
        "cross entropy probabilities": probabilities(),
        "cross entropy probabilities sum": probabilities(reduction="sum"),
        "cross entropy probabilities none": probabilities(reduction="none"),
        "cross entropy probabilities weight": probabilities(weighted=True),
        "cross entropy probabilities smoothing": probabilities(label_smoothing=0.3),
        "nll": classification("NLLLoss"),
        "nll sum weight": classification("NLLLoss", reduction="sum", weight=True),
        "nll none ignore": classification("NLLLoss", reduction="none", ignore_index=0, classes=2),
        "nll 4d": classification("NLLLoss", shape=(2, 5, 3, 2), target_shape=(2, 3, 2)),
        "nll 5d": classification("NLLLoss", shape=(2, 5, 3, 2, 2), target_shape=(2, 3, 2, 2)),
        "bce": binary("BCELoss"),
        "bce weight sum": binary("BCELoss", weight=True, reduction="sum"),
        "bce target grad none": binary("BCELoss", target_grad=True, reduction="none"),
        "bce logits": binary("BCEWithLogitsLoss"),
        "bce logits weights": binary("BCEWithLogitsLoss", weight=True, pos_weight=True),
        "bce logits target grad": binary("BCEWithLogitsLoss", target_grad=True, pos_weight=True),
        "bce logits none": binary("BCEWithLogitsLoss", reduction="none", weight=True),
    }
    return cases


def functional_cases():
    return {
        "cosine similarity": lambda T, m: T.nn.functional.cosine_similarity(
            m.input(4, 5), m.input(4, 5)
        ),
        "cosine similarity broadcast": lambda T, m: T.nn.functional.cosine_similarity(
            m.input(4, 5), m.input(5), dim=-1
        ),
        "cosine similarity dim 0": lambda T, m: T.nn.functional.cosine_similarity(
            m.input(4, 5), m.input(4, 5), dim=0
        ),
        "pad constant": lambda T, m: T.nn.functional.pad(m.input(2, 3, 4), (1, 2, 0, 1), value=3.0),
        "pad crop": lambda T, m: T.nn.functional.pad(m.input(2, 3, 4), (-1, 2)),
        "pad reflect 1d": lambda T, m: T.nn.functional.pad(m.input(2, 3, 5), (2, 3), "reflect"),
        "pad reflect 2d": lambda T, m: T.nn.functional.pad(
            m.input(1, 2, 4, 5), (1, 2, 3, 1), mode="reflect"
        ),
        "pad replicate 2d": lambda T, m: T.nn.functional.pad(
            m.input(2, 4, 5), (3, 2, 1, 4), mode="replicate"
        ),
        "pad replicate 3d": lambda T, m: T.nn.functional.pad(
            m.input(1, 2, 3, 3, 2), (1, 1, 2, 0, 1, 1), mode="replicate"
        ),
        "pad circular 1d": lambda T, m: T.nn.functional.pad(m.input(2, 5), (3, 1), "circular"),
        "pad circular 2d": lambda T, m: T.nn.functional.pad(
            m.input(1, 2, 4, 4), (1, 2, 0, 1), mode="circular"
        ),
        "pad circular crop": lambda T, m: T.nn.functional.pad(
            m.input(2, 4, 4), (1, -2, -1, 1), mode="circular"
        ),
        "pad circular whole width": lambda T, m: T.nn.functional.pad(
            m.input(1, 1, 3, 4), (4, 0, 3, 3), mode="circular"
        ),
        "pad circular 3d": lambda T, m: T.nn.functional.pad(
            m.input(1, 1, 2, 3, 4), (1, 1, 1, 1, 1, 1), mode="circular"
        ),
        "unfold": lambda T, m: T.nn.functional.unfold(m.input(2, 3, 6, 7), (2, 3), 1, 1, 2),
        "unfold unbatched": lambda T, m: T.nn.functional.unfold(m.input(3, 5, 5), 2, dilation=2),
        "fold": lambda T, m: T.nn.functional.fold(m.input(2, 12, 10), (5, 6), 2, stride=(2, 1)),
        "gelu functional": lambda T, m: T.nn.functional.gelu(m.input(3, 4)),
        "leaky relu functional": lambda T, m: T.nn.functional.leaky_relu(m.input(3, 4)),
        "softmax functional": lambda T, m: T.nn.functional.softmax(m.input(3, 4), dim=0),
        "log softmax functional": lambda T, m: T.nn.functional.log_softmax(m.input(3, 4), dim=1),
        "linear functional": lambda T, m: T.nn.functional.linear(
            m.input(3, 4), m.input(2, 4), m.input(2)
        ),
        "conv2d functional": lambda T, m: T.nn.functional.conv2d(
            m.input(2, 2, 5, 5), m.input(4, 1, 3, 3), m.input(4), padding=1, groups=2
        ),
        "embedding functional": lambda T, m: T.nn.functional.embedding(
            m.constant([0, 3, 3], T.int64), m.input(4, 2)
        ),
        "layer norm functional": lambda T, m: T.nn.functional.layer_norm(
            m.input(3, 4), (4,), m.input(4), m.input(4)
        ),
    }


def model_cases():
    def mlp(T, m):
        model = m.module(T.nn.Sequential(T.nn.Linear(8, 6), T.nn.ReLU(), T.nn.Linear(6, 3)))
        return T.nn.functional.cross_entropy(
            model(m.input(5, 8, requires_grad=False)), m.labels(5, classes=3)
        )

    def cnn(T, m):
        nn = T.nn
        model = m.module(
            nn.Sequential(
                nn.Conv2d(1, 4, 3, padding=1),
                nn.BatchNorm2d(4),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(4, 6, 3),
                nn.GELU(),
                nn.AvgPool2d(2),
                nn.Flatten(),
                nn.LayerNorm(6),
                nn.Linear(6, 3),
            )
        )
        return nn.CrossEntropyLoss()(model(m.input(3, 1, 8, 8)), m.labels(3, classes=3))

    return {"mlp": mlp, "cnn": cnn}


def more_activation_cases():
    def act(layer, *args, shape=(4, 5), scale=1.0, inplace=False, **kwargs):
        def case(T, m):
            x = m.input(*shape) * scale
            return (
                getattr(T.nn, layer)(*args, inplace=True, **kwargs)(x * 1)
                if inplace
                else (getattr(T.nn, layer)(*args, **kwargs)(x))
            )

        return case

    cases = {
        "softplus": act("Softplus"),
        "softplus beta threshold": act("Softplus", 2, 1.0),
        "hardtanh": act("Hardtanh", scale=2.0),
        "hardtanh bounds inplace": act("Hardtanh", -0.5, 0.5, inplace=True),
        "relu6": act("ReLU6", scale=5.0),
        "relu6 inplace": act("ReLU6", scale=5.0, inplace=True),
        "logsigmoid": act("LogSigmoid", scale=3.0),
        "silu": act("SiLU"),
        "silu inplace": act("SiLU", inplace=True),
        "elu": act("ELU", 0.7),
        "elu inplace": act("ELU", 1.2, inplace=True),
        "selu": act("SELU"),
        "selu inplace": act("SELU", inplace=True),
        "celu": act("CELU", 1.5),
        "celu inplace": act("CELU", 0.5, inplace=True),
        "mish": act("Mish"),
        "mish inplace": act("Mish", inplace=True),
        "hardswish": act("Hardswish", scale=3.0),
        "hardswish inplace": act("Hardswish", scale=3.0, inplace=True),
        "hardsigmoid": act("Hardsigmoid", scale=3.0),
        "hardsigmoid inplace": act("Hardsigmoid", scale=3.0, inplace=True),
        "softsign": act("Softsign"),
        "tanhshrink": act("Tanhshrink"),
        "softshrink": act("Softshrink", 0.3),
        "hardshrink": act("Hardshrink"),
        "threshold": act("Threshold", 0.1, 20.0),
        "threshold inplace": act("Threshold", 0.1, -2.0, inplace=True),
        "softmin": act("Softmin", 1),
        "glu": act("GLU", shape=(4, 6)),
        "glu dim 0": act("GLU", 0),
        "prelu": lambda T, m: m.module(T.nn.PReLU())(m.input(4, 5)),
        "prelu channels": lambda T, m: m.module(T.nn.PReLU(3, init=0.1))(m.input(2, 3, 4)),
        "multilabel soft margin": lambda T, m: T.nn.MultiLabelSoftMarginLoss()(
            m.input(4, 5), m.input(4, 5, requires_grad=False).sign().relu()
        ),
        "multilabel soft margin weight sum": lambda T, m: T.nn.MultiLabelSoftMarginLoss(
            m.input(5, requires_grad=False, low=0.5, high=2.0), reduction="sum"
        )(m.input(4, 5), m.input(4, 5, requires_grad=False, low=0.0, high=1.0)),
    }
    return cases


def more_loss_cases():
    def loss(name, shape=(4, 5), target_grad=False, target=None, **kwargs):
        def case(T, m):
            x = m.input(*shape)
            if target == "sign":
                t = m.input(*shape, requires_grad=False).sign()
            elif target == "positive":
                t = m.input(*shape, requires_grad=target_grad, low=0.1, high=2.0)
            else:
                t = m.input(*shape, requires_grad=target_grad)
            return getattr(T.nn, name)(**kwargs)(x, t)

        return case

    def gaussian(var_shape=(4, 5), **kwargs):
        def case(T, m):
            x, t = m.input(4, 5), m.input(4, 5)
            var = m.input(*var_shape, low=0.1, high=2.0)
            return T.nn.GaussianNLLLoss(**kwargs)(x, t, var)

        return case

    return {
        "smooth l1": loss("SmoothL1Loss"),
        "smooth l1 beta sum target grad": loss(
            "SmoothL1Loss", beta=0.5, reduction="sum", target_grad=True
        ),
        "smooth l1 beta 0": loss("SmoothL1Loss", beta=0.0),
        "smooth l1 none": loss("SmoothL1Loss", reduction="none"),
        "huber": loss("HuberLoss"),
        "huber delta none target grad": loss(
            "HuberLoss", delta=0.3, reduction="none", target_grad=True
        ),
        "soft margin": loss("SoftMarginLoss", target="sign"),
        "soft margin sum": loss("SoftMarginLoss", target="sign", reduction="sum"),
        "kl div batchmean": loss("KLDivLoss", target="positive", reduction="batchmean"),
        "kl div mean": loss("KLDivLoss", target="positive"),
        "kl div log target grad": loss(
            "KLDivLoss", log_target=True, reduction="sum", target_grad=True
        ),
        "poisson nll": loss("PoissonNLLLoss", target="positive"),
        "poisson nll full target grad": loss(
            "PoissonNLLLoss", target="positive", full=True, target_grad=True
        ),
        "gaussian nll": gaussian(),
        "gaussian nll full sum": gaussian(full=True, reduction="sum"),
        "gaussian nll homoscedastic": gaussian(var_shape=(4,)),
        "gaussian nll one column": gaussian(var_shape=(4, 1), reduction="none"),
    }


def margin_loss_cases():
    def signs(T, m, n):
        return m.constant([1.0, -1.0, 1.0, -1.0, 1.0][:n])

    return {
        "margin ranking": lambda T, m: T.nn.MarginRankingLoss(0.2)(
            m.input(5), m.input(5), signs(T, m, 5)
        ),
        "hinge embedding": lambda T, m: T.nn.HingeEmbeddingLoss(0.5, reduction="sum")(
            m.input(4, 5), m.input(4, 5, requires_grad=False).sign()
        ),
        "cosine embedding": lambda T, m: T.nn.CosineEmbeddingLoss(0.1)(
            m.input(4, 5), m.input(4, 5), signs(T, m, 4)
        ),
        "cosine embedding 1d none": lambda T, m: T.nn.CosineEmbeddingLoss(reduction="none")(
            m.input(5), m.input(5), m.constant(-1.0)
        ),
        "triplet margin": lambda T, m: T.nn.TripletMarginLoss()(
            m.input(4, 5), m.input(4, 5), m.input(4, 5)
        ),
        "triplet margin swap 1-norm": lambda T, m: T.nn.TripletMarginLoss(3.0, p=1, swap=True)(
            m.input(4, 5), m.input(4, 5), m.input(4, 5, requires_grad=False)
        ),
        "normalize": lambda T, m: T.nn.functional.normalize(m.input(4, 5)),
        "normalize 1-norm dim 0": lambda T, m: T.nn.functional.normalize(m.input(4, 5), 1, 0),
        "pairwise distance": lambda T, m: T.nn.functional.pairwise_distance(
            m.input(4, 5), m.input(5), keepdim=True
        ),
        "pairwise distance module": lambda T, m: T.nn.PairwiseDistance(1)(
            m.input(4, 5), m.input(4, 5)
        ),
        "cosine similarity module": lambda T, m: T.nn.CosineSimilarity(0)(
            m.input(4, 5), m.input(4, 5)
        ),
    }


MORE_MODULES = [
    "Softplus()", "Softplus(2, 10)", "Hardtanh()", "Hardtanh(-2, 2, True)", "ReLU6()",
    "ReLU6(True)", "LogSigmoid()", "SiLU()", "SiLU(True)", "ELU()", "ELU(0.5, True)", "SELU()",
    "SELU(True)", "CELU()", "CELU(2.0, True)", "Mish()", "Mish(True)", "Hardswish()",
    "Hardswish(True)", "Hardsigmoid(True)", "Softsign()", "Tanhshrink()", "Softshrink()",
    "Softshrink(0.3)", "Hardshrink()", "Threshold(0.1, 20)", "Threshold(0.1, 20.0, True)",
    "SmoothL1Loss(beta=0.5)", "HuberLoss(delta=2.0)", "SoftMarginLoss()",
    "KLDivLoss(log_target=True)", "PoissonNLLLoss(full=True)", "GaussianNLLLoss(eps=1e-3)",
    "MarginRankingLoss(0.5)", "HingeEmbeddingLoss(2.0)", "CosineEmbeddingLoss(0.1)",
    "TripletMarginLoss(swap=True)", "PairwiseDistance(1.0, keepdim=True)",
    "CosineSimilarity(0, 1e-6)", "Softmin(1)", "GLU()", "GLU(0)", "PReLU()", "PReLU(3, 0.1)",
    "MultiLabelSoftMarginLoss()",
]  # fmt: skip


@pytest.mark.parametrize("text", MORE_MODULES)
def test_more_activation_modules_repr_like_pytorch(torch, text):
    ours, theirs = eval("nbgrad.nn." + text), eval("torch.nn." + text)  # noqa: S307
    assert repr(ours) == repr(theirs)
    assert {k: v for k, v in vars(ours).items() if not k.startswith("_") and k != "training"} == {
        k: v for k, v in vars(theirs).items() if not k.startswith("_") and k != "training"
    }


CASES = {
    **linear_cases(),
    **conv_cases(),
    **pooling_cases(),
    **embedding_and_norm_cases(),
    **activation_cases(),
    **more_activation_cases(),
    **more_loss_cases(),
    **margin_loss_cases(),
    **loss_cases(),
    **functional_cases(),
    **model_cases(),
}


@pytest.mark.parametrize("name", CASES)
def test_same_as_pytorch_float64(torch, name):
    assert_same_run(torch, CASES[name], "float64")


@pytest.mark.parametrize("name", CASES)
def test_same_as_pytorch_float32(torch, name):
    assert_same_run(torch, CASES[name], "float32", rtol=2e-5, atol=2e-6)


# What each backward node saved is shown by the graph widget: it must read as PyTorch's. These
# are the exceptions, each a documented difference (README): saved values that nbgrad does not
# keep because no formula of ours reads them, or shows in another form.
SAVED_DIFFERENCES = {
    "NativeLayerNormBackward0": {"_saved_bias"},  # our formulas never read the bias
    # nbgrad.softmax saves its dim wrapped to be non-negative (engine code; reported).
    "SoftmaxBackward0": {"_saved_dim"},
}


@pytest.mark.parametrize("name", CASES)
def test_saved_tensors_match_pytorch(torch, name):
    ours, theirs, _, _ = run_both(torch, CASES[name])
    ours_fn, theirs_fn = _first(ours).grad_fn, _first(theirs).grad_fn
    if theirs_fn is None:
        assert ours_fn is None
        return
    skip = SAVED_DIFFERENCES.get(type(theirs_fn).__name__, set())
    wanted = {n for n in saved_names(theirs_fn) if not n.endswith("_sym_strides")} - skip
    assert wanted <= saved_names(ours_fn)
    for attr in sorted(wanted):
        _assert_same_saved(getattr(ours_fn, attr), getattr(theirs_fn, attr), torch, attr)


def _first(output):
    return output[0] if isinstance(output, tuple) else output


def _assert_same_saved(mine, real, torch, name):
    if isinstance(real, torch.Tensor):
        assert mine is not None, name
        assert tuple(mine.shape) == tuple(real.shape), name
        np.testing.assert_allclose(to_numpy(mine), to_numpy(real), rtol=1e-12, err_msg=name)
    elif real is None:
        assert mine is None, name
    elif isinstance(real, (tuple, list)):
        assert len(mine) == len(real), name
        for m, r in zip(mine, real):
            _assert_same_saved(m, r, torch, name)
    else:
        if isinstance(real, int) and not isinstance(real, bool) and real >= 2**63:
            real -= 2**64  # PyTorch shows a saved negative int as its unsigned wrap-around
        assert mine == real, name


def test_dropout_in_training_is_input_times_scaled_mask(torch):
    """Random, so not the same numbers as PyTorch: the same graph, and the right statistics."""
    ours, theirs, ours_maker, _ = run_both(torch, lambda T, m: T.nn.Dropout(0.25)(m.input(200, 50)))
    assert structure(ours.grad_fn) == structure(theirs.grad_fn)
    assert saved_names(theirs.grad_fn) <= saved_names(ours.grad_fn)
    x = ours_maker.inputs[0]
    kept = ours._data != 0
    assert 0.72 < kept.mean() < 0.78
    np.testing.assert_allclose(ours._data[kept], x._data[kept] / 0.75, rtol=1e-12)
    ours.sum().backward()
    np.testing.assert_allclose(x.grad._data, kept / 0.75, rtol=1e-12)


def test_dropout_in_place_graph(torch):
    case = lambda T, m: T.nn.functional.dropout(m.input(3, 4) * 2, 0.5, inplace=True)  # noqa: E731
    ours, theirs, _, _ = run_both(torch, case)
    assert structure(ours.grad_fn) == structure(theirs.grad_fn)


def test_dropout_edge_probabilities():
    x = nbgrad.randn(3, 4, requires_grad=True)
    assert nbgrad.nn.Dropout(0.0)(x) is x
    zeroed = nbgrad.nn.Dropout(1.0)(x)
    assert zeroed.grad_fn.name() == "MulBackward0"
    assert not zeroed._data.any()
    layer = nbgrad.nn.Dropout(0.5).eval()
    assert layer(x) is x


@pytest.mark.parametrize("function", ["softmax", "log_softmax", "cross_entropy"])
def test_large_logits_are_stable(torch, function):
    """Inputs around 1e4 would overflow exp() if computed naively: finite and as PyTorch."""
    values = np.array([[1e4, 1e4 - 3, -1e4], [2e4, 0.0, 2e4 + 1], [-1e4, -1e4 - 50, -1e4 + 2]])
    target = [0, 2, 1]

    def run(T):
        x = T.tensor(values, dtype=T.float32, requires_grad=True)
        F = T.nn.functional
        if function == "cross_entropy":
            out = F.cross_entropy(x, T.tensor(target))
        else:
            out = getattr(F, function)(x, dim=1)
        out.backward(T.ones_like(out))
        return out, x.grad

    (ours, ours_grad), (theirs, theirs_grad) = run(nbgrad), run(torch)
    assert np.isfinite(ours._data).all() and np.isfinite(ours_grad._data).all()
    np.testing.assert_allclose(to_numpy(ours), to_numpy(theirs), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(to_numpy(ours_grad), to_numpy(theirs_grad), rtol=1e-5, atol=1e-6)


def test_cross_entropy_graph_is_nll_after_log_softmax():
    logits = nbgrad.randn(4, 3, requires_grad=True)
    loss = nbgrad.nn.functional.cross_entropy(logits, nbgrad.tensor([0, 2, 1, 2]))
    assert loss.grad_fn.name() == "NllLossBackward0"
    ((log_softmax, _),) = loss.grad_fn.next_functions
    assert log_softmax.name() == "LogSoftmaxBackward0"
    assert log_softmax.next_functions[0][0].variable is logits


def test_one_hot_matches_pytorch(torch):
    labels = [[0, 3], [2, 1]]
    ours = nbgrad.nn.functional.one_hot(nbgrad.tensor(labels))
    theirs = torch.nn.functional.one_hot(torch.tensor(labels))
    assert ours.dtype is nbgrad.int64
    np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))
    assert nbgrad.nn.functional.one_hot(nbgrad.tensor([1]), 4).tolist() == [[0, 1, 0, 0]]


def test_max_pool_returns_pytorch_indices(torch):
    ours, theirs, _, _ = run_both(torch, CASES["max pool stride padding"])
    layer = lambda T: T.nn.MaxPool2d(3, 2, 1, return_indices=True)  # noqa: E731
    x = np.random.default_rng(0).standard_normal((2, 2, 7, 6))
    _, ours_indices = layer(nbgrad)(nbgrad.tensor(x))
    _, theirs_indices = layer(torch)(torch.tensor(x))
    assert ours_indices.dtype is nbgrad.int64
    np.testing.assert_array_equal(to_numpy(ours_indices), to_numpy(theirs_indices))


def test_batch_norm_running_stats_versions_and_saves_match_pytorch(torch):
    """The kernel updates running stats without bumping their version; the node saves them
    (so a later write into them is caught at backward) and saves the weight even when only
    the input needs a gradient, as PyTorch's one joint formula does."""
    seen = []
    for T in (nbgrad, torch):
        F = T.nn.functional
        x = T.tensor(np.arange(12.0).reshape(4, 3) / 5, requires_grad=True)
        w, b = T.ones(3, dtype=T.float64), T.zeros(3, dtype=T.float64)
        rm, rv = T.zeros(3, dtype=T.float64), T.ones(3, dtype=T.float64)
        y = F.batch_norm(x, rm, rv, w, b, training=True)
        bn = T.nn.BatchNorm1d(3).double()
        bn(x)
        z = F.layer_norm(x.detach(), (3,), w.requires_grad_(), b)
        seen.append(
            (
                rm._version,
                rv._version,
                bn.running_mean._version,
                bn.num_batches_tracked._version,
                np.round(to_numpy(y.grad_fn._saved_weight), 12).tolist(),
                np.round(to_numpy(y.grad_fn._saved_running_var), 12).tolist(),
                np.round(to_numpy(z.grad_fn._saved_weight), 12).tolist(),
                np.round(to_numpy(z.grad_fn._saved_bias), 12).tolist(),
                sorted(saved_names(z.grad_fn)),
            )
        )
    assert seen[0] == seen[1]


@pytest.mark.parametrize("training", [False, True])
def test_batch_norm_catches_a_write_into_running_stats(torch, training):
    errors = []
    for T in (nbgrad, torch):
        x = T.tensor(np.arange(12.0).reshape(4, 3) / 5, requires_grad=True)
        rm, rv = T.zeros(3, dtype=T.float64), T.ones(3, dtype=T.float64)
        y = T.nn.functional.batch_norm(x, rm, rv, training=training)
        rv.add_(1)
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert "modified by an inplace operation" in errors[0]

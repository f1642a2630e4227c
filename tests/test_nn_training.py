"""Networks built from nbgrad.nn learn: the digits MLP of the tutorials reaches 95% on held-out
digits within a few seconds, and a small CNN's loss falls clearly."""

import nbgrad
from nbgrad import nn


def _split(images, labels):
    """A fixed shuffle; the first fifth is held out."""
    order = nbgrad.randperm(len(labels))
    images, labels = images[order], labels[order]
    held_out = len(labels) // 5
    return (images[held_out:], labels[held_out:]), (images[:held_out], labels[:held_out])


def _train(model, optimizer, images, labels, epochs, batch_size=64):
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(epochs):
        order = nbgrad.randperm(len(labels))
        for start in range(0, len(labels), batch_size):
            batch = order[start : start + batch_size]
            loss = loss_fn(model(images[batch]), labels[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def _accuracy(model, images, labels):
    model.eval()
    with nbgrad.no_grad():
        return (model(images).argmax(1) == labels).float().mean().item()


def test_mlp_on_digits_reaches_95_percent():
    nbgrad.manual_seed(0)
    (train_x, train_y), (test_x, test_y) = _split(*nbgrad.datasets.digits())
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    optimizer = nbgrad.optim.Adam(model.parameters(), lr=5e-3)
    _train(model, optimizer, train_x, train_y, epochs=25)
    assert _accuracy(model, test_x, test_y) >= 0.95


def test_small_cnn_on_digits_learns():
    nbgrad.manual_seed(1)
    (train_x, train_y), (test_x, test_y) = _split(*nbgrad.datasets.digits(as_images=True))
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Dropout(0.1),
        nn.Linear(16 * 2 * 2, 10),
    )
    optimizer = nbgrad.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = _train(model, optimizer, train_x, train_y, epochs=2)
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert last < 0.3 * first
    assert _accuracy(model, test_x, test_y) > 0.85

"""The paper's downstream ConvNet (Table 3) and the helpers that train a user's network on the
released images."""

import numpy as np
import pytest
import torch

from sdv_dpkme.images import ImageInputError, PaperConvNet, convnet_accuracy, train_convnet


def test_architecture_is_the_papers():
    net = PaperConvNet((1, 28, 28))
    kinds = [type(layer).__name__ for layer in net.features]
    assert kinds == ['Conv2d', 'GroupNorm', 'ReLU', 'AvgPool2d'] * 3
    convs = [layer for layer in net.features if isinstance(layer, torch.nn.Conv2d)]
    assert [c.out_channels for c in convs] == [128] * 3 and convs[0].kernel_size == (3, 3)
    norms = [layer for layer in net.features if isinstance(layer, torch.nn.GroupNorm)]
    assert all(n.num_groups == n.num_channels == 128 for n in norms)  # instance norm
    assert net(torch.zeros(2, 1, 28, 28)).shape == (2, 10)
    assert net.classifier.in_features == 128 * 3 * 3


def test_trains_on_few_images_and_leaves_the_global_rng_alone(digits):
    x, y = digits
    before = torch.random.get_rng_state()
    model = train_convnet(x[:100], y[:100], pixel_range=(0, 16), steps=200, random_state=0)
    assert torch.equal(torch.random.get_rng_state(), before)
    acc = convnet_accuracy(model, x[1000:], y[1000:], pixel_range=(0, 16))
    assert acc > 0.5  # 100 training images: far above chance (0.1)
    again = train_convnet(x[:100], y[:100], pixel_range=(0, 16), steps=200, random_state=0)
    assert convnet_accuracy(again, x[1000:], y[1000:], pixel_range=(0, 16)) == acc


def test_clear_errors():
    with pytest.raises(ValueError, match='too small'):
        PaperConvNet((1, 4, 4))
    with pytest.raises(ImageInputError, match='shape'):
        train_convnet(np.zeros((5, 784)), np.zeros(5), steps=1)


def test_device_auto_trains_where_torch_sees_a_gpu(digits):
    x, y = digits
    model = train_convnet(x[:50], y[:50], pixel_range=(0, 16), steps=5, random_state=1,
                          device='auto')
    expected = 'cuda' if torch.cuda.is_available() else 'cpu'
    assert next(model.parameters()).device.type == expected
    on_cpu = train_convnet(x[:50], y[:50], pixel_range=(0, 16), steps=5, random_state=1)
    if expected == 'cpu':  # the same computation: the same weights
        assert all(torch.equal(a, b) for a, b in zip(model.parameters(), on_cpu.parameters()))
    # scoring follows the model's device and takes CPU arrays
    assert 0.0 <= convnet_accuracy(model, x[1000:1100], y[1000:1100], pixel_range=(0, 16)) <= 1.0


def test_augmented_views_stay_images_and_are_reproducible(digits):
    from sdv_dpkme.images.convnet import augment

    x = torch.rand(16, 1, 8, 8, dtype=torch.float32)
    views = augment(x, torch.Generator().manual_seed(0))
    assert views.shape == x.shape and views.min() >= 0 and views.max() <= 1 + 1e-6
    assert not torch.allclose(views, x)  # moved
    assert torch.equal(views, augment(x, torch.Generator().manual_seed(0)))
    # a centred blob moves by at most 10 % of the side plus what rotation and scale do
    blob = torch.zeros(1, 1, 28, 28)
    blob[..., 12:16, 12:16] = 1
    shifted = augment(blob.repeat(50, 1, 1, 1), torch.Generator().manual_seed(1))
    rows = (shifted.sum(3)[:, 0] * torch.arange(28)).sum(1) / shifted.sum((1, 2, 3))
    assert (rows - 13.5).abs().max() <= 28 * 0.1 + 2
    # training on views: reproducible, and another model than on the images as they are
    xd, yd = digits
    a = train_convnet(xd[:30], yd[:30], pixel_range=(0, 16), steps=3, random_state=0,
                      augmented=True)
    b = train_convnet(xd[:30], yd[:30], pixel_range=(0, 16), steps=3, random_state=0,
                      augmented=True)
    c = train_convnet(xd[:30], yd[:30], pixel_range=(0, 16), steps=3, random_state=0)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not all(torch.equal(p, q) for p, q in zip(a.parameters(), c.parameters()))

"""The downstream ConvNet of the DP-KIP-ScatterNet paper's Table 3 (the dataset-distillation
benchmark's ConvNet): 3 blocks of [Conv 128 filters 3x3, InstanceNorm, ReLU, AvgPool 2], then one
linear layer. A user's own network trained on the released images: it sees only DP outputs
(``distilled_images_`` and ``distilled_labels_``, or generated images), so training it is
post-processing and costs no privacy.
"""

import numpy as np
import torch

from sdv_dpkme.engines.generator import resolve_device
from sdv_dpkme.images._inputs import as_images, check_pixel_range


class PaperConvNet(torch.nn.Module):
    """ConvNet of Table 3 for (channels, height, width) images with pixels in [0, 1].

    InstanceNorm is a GroupNorm with one group per channel (affine), as in the distillation
    benchmark's ConvNet."""

    def __init__(self, shape=(1, 28, 28), n_classes=10, width=128, depth=3):
        super().__init__()
        channels, height, width_px = shape
        layers = []
        for _ in range(depth):
            layers += [torch.nn.Conv2d(channels, width, 3, padding=1),
                       torch.nn.GroupNorm(width, width, affine=True), torch.nn.ReLU(),
                       torch.nn.AvgPool2d(2)]
            channels, height, width_px = width, height // 2, width_px // 2
        if height < 1 or width_px < 1:
            raise ValueError(f'images of shape {shape} are too small for {depth} pooling blocks')
        self.features = torch.nn.Sequential(*layers)
        self.classifier = torch.nn.Linear(width * height * width_px, n_classes)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def _tensor(images, pixel_range):
    """(n, [C,] H, W) images in the declared range -> float32 (n, C, H, W) in [0, 1]."""
    return as_images(np.asarray(images, dtype=np.float64), check_pixel_range(pixel_range))


def augment(x, generator):
    """One random affine view of each image (rotation up to 15 degrees, scale 0.9-1.1, shift up
    to 10 % of the side; no flips, which change digits), zero padded: a small public
    augmentation of the kind dataset-distillation evaluations train with."""
    n = len(x)
    u = torch.rand(n, 4, generator=generator).to(x.device) * 2 - 1  # in [-1, 1)
    angle, scale = u[:, 0] * (15 * np.pi / 180), 1 + 0.1 * u[:, 1]
    cos, sin = torch.cos(angle) / scale, torch.sin(angle) / scale
    theta = torch.stack([torch.stack([cos, -sin, 0.2 * u[:, 2]], 1),
                         torch.stack([sin, cos, 0.2 * u[:, 3]], 1)], 1)
    grid = torch.nn.functional.affine_grid(theta, list(x.shape), align_corners=False)
    return torch.nn.functional.grid_sample(x, grid, align_corners=False)


def train_convnet(images, labels, pixel_range=(0.0, 1.0), n_classes=10, steps=300,
                  batch_size=256, learning_rate=0.01, random_state=0, model=None, device='cpu',
                  augmented=False):
    """Train ``model`` (default: a new ``PaperConvNet``) on labelled images, full batch when they
    fit in ``batch_size``: SGD with momentum 0.9, weight decay 5e-4, the learning rate divided by
    10 half way (the distillation benchmark's schedule). ``augmented``: each step trains on a
    random affine view of its images (``augment``) instead of the images as they are.
    ``device``: 'cpu', 'auto' (CUDA when torch sees it) or a torch device; the model is trained
    there and stays there. Returns the trained model (eval mode)."""
    device = resolve_device(device)
    x = _tensor(images, pixel_range).to(device)
    y = torch.as_tensor(np.asarray(labels), dtype=torch.long).to(device)
    seed = int(np.random.SeedSequence(random_state).generate_state(1)[0])
    if model is None:
        with torch.random.fork_rng():  # the caller's global torch RNG is left as it was
            torch.manual_seed(seed)
            model = PaperConvNet(tuple(x.shape[1:]), n_classes)
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=learning_rate, momentum=0.9,
                                weight_decay=5e-4)
    schedule = torch.optim.lr_scheduler.MultiStepLR(optimizer, [max(1, steps // 2)], 0.1)
    rng = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(int(steps)):
        batch = (torch.randperm(len(x), generator=rng)[:batch_size].to(device)
                 if len(x) > batch_size else slice(None))
        inputs = augment(x[batch], rng) if augmented else x[batch]
        loss = torch.nn.functional.cross_entropy(model(inputs), y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
    return model.eval()


def convnet_accuracy(model, images, labels, pixel_range=(0.0, 1.0), chunk=500):
    """Test accuracy of a trained model on labelled images in the declared range (on the
    model's device)."""
    device = next(model.parameters()).device
    x = _tensor(images, pixel_range)
    y = np.asarray(labels)
    with torch.no_grad():
        pred = torch.cat([model(x[i:i + chunk].to(device)).argmax(1).cpu()
                          for i in range(0, len(x), chunk)])
    return float(np.mean(pred.numpy() == y))

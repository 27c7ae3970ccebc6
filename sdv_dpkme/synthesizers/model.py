"""The fitted model object that SDV calls ``_model``: a generator plus DP outputs only."""

import numpy as np
import pandas as pd
import torch


class KMEModel:
    """Trained generator, released label weights and the encoded layout (all public or DP)."""

    def __init__(self, generator, columns, target, class_weights, loss_values):
        self.generator = generator.cpu().eval()
        self.columns = list(columns)
        self.target = target
        self.class_weights = np.asarray(class_weights, dtype=float)
        self.loss_values = loss_values
        self._rng = None

    def set_random_state(self, random_state):
        self._rng = torch.Generator()
        if random_state is None:
            self._rng.seed()
        else:
            self._rng.manual_seed(int(random_state))

    def sample(self, num_rows):
        if self._rng is None:
            self.set_random_state(None)
        weights = torch.as_tensor(self.class_weights, dtype=torch.float64)
        labels = torch.multinomial(weights, num_rows, replacement=True, generator=self._rng)
        rows = self.generator.sample(labels, self._rng)
        if self.target is not None:
            onehot = np.eye(len(self.target.columns))[labels.numpy()]
            rows[:, list(self.target.columns)] = onehot
        return pd.DataFrame(rows, columns=self.columns)

    def __getstate__(self):
        state = dict(self.__dict__)
        state['_rng'] = None  # sampling restarts from SDV's fixed seed after loading
        return state

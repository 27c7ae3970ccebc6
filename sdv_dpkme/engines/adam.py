"""Adam (Kingma & Ba, 2015) as a plain parameter update, for the generator's training.

``torch.optim``'s optimizers import torch's compiler stack (``torch._dynamo``, and with it
``torch._inductor`` and ``sympy``) the first time they are built or stepped: seconds of imports
that a fit of a small table pays for one update rule. This is the same rule, in the order of
operations of torch's single-tensor implementation (the one it runs on CPU), so that a CPU fit
gives the same weights either way.
"""

import torch


class Adam:
    """Adam on ``params`` (no weight decay, no AMSGrad): per parameter p with gradient g, after
    t steps,

        m <- b1 m + (1 - b1) g,   v <- b2 v + (1 - b2) g^2,
        p <- p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).

    ``lr`` may be changed between steps. A parameter without a gradient is skipped (its step
    count does not advance), as in torch's.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        self.params = [p for p in params if p.requires_grad]
        self.lr = float(lr)
        self.beta1, self.beta2 = (float(b) for b in betas)
        self.eps = float(eps)
        self._state = {}  # id(param) -> [steps, m, v]

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self):
        b1, b2 = self.beta1, self.beta2
        for p in self.params:
            g = p.grad
            if g is None:
                continue
            state = self._state.get(id(p))
            if state is None:
                state = self._state[id(p)] = [0.0, torch.zeros_like(p), torch.zeros_like(p)]
            state[0] += 1.0
            t, m, v = state
            m.lerp_(g, 1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            step_size = self.lr / (1 - b1 ** t)
            denom = (v.sqrt() / (1 - b2 ** t) ** 0.5).add_(self.eps)
            p.addcdiv_(m, denom, value=-step_size)

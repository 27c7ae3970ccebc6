"""Generator network for mixed tables (its training: ``generator_training``).

The engine knows nothing of SDV or of the private rows: it receives the encoded layout, public
label weights and released embeddings, and only ever evaluates feature maps on generated rows.
"""

from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from sdv_dpkme.engines.generator_training import (  # noqa: F401 - the engine's names
    SCHEDULES,
    Objective,
    class_loss_weights,
    mmd_to_target,
    pooled_mmd_to_target,
    train_generator,
)
from sdv_dpkme.features import pair_blocks_within


def resolve_device(device):
    if device in (None, 'auto'):
        return torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    return torch.device(device)


class TabularGenerator(nn.Module):
    """MLP from (noise, one-hot label) to an encoded row.

    Heads: numeric value = sigmoid (stays inside the public box), null indicator = sigmoid
    probability, categorical = softmax over its buckets, mixed with ``category_smoothing`` of a
    uniform draw over the column's public categories (see ``_smooth``). ``forward`` returns the
    relaxed row used for training; ``sample`` draws nulls and categories from the same
    probabilities. With ``category_links`` (names of categorical blocks, or {name: parent names}),
    each linked head also sees the categories drawn in the (named) linked heads before it
    (``_linked_heads``).
    """

    def __init__(self, blocks, n_columns, n_classes, latent_dim=32, hidden=(256, 256),
                 numeric_noise=0.0, category_smoothing=0.0, category_links=()):
        super().__init__()
        self.numeric_noise = float(numeric_noise)
        self.category_smoothing = float(category_smoothing)
        self.blocks = tuple(blocks)
        self.n_columns = n_columns
        self.n_classes = n_classes
        self.latent_dim = latent_dim
        layers, width = [], latent_dim + n_classes
        for h in hidden:
            layers += [nn.Linear(width, h), nn.ReLU()]
            width = h
        layers.append(nn.Linear(width, n_columns))
        self.net = nn.Sequential(*layers)
        # Heads are computed on columns grouped by head type, then put back in layout order.
        self._sigmoid_cols = [c for b in self.blocks if b.kind == 'numeric' for c in b.columns]
        self._softmax_groups = [list(b.columns) for b in self.blocks if b.kind == 'categorical']
        order = self._sigmoid_cols + [c for g in self._softmax_groups for c in g]
        missing = sorted(set(range(n_columns)) - set(order))  # e.g. the target's columns
        order += missing
        self._n_missing = len(missing)
        self.register_buffer('_perm', torch.tensor(order, dtype=torch.long), persistent=False)
        self.register_buffer('_inverse', torch.argsort(self._perm), persistent=False)
        self._group_sizes = [len(self._sigmoid_cols)] + [len(g) for g in self._softmax_groups]
        self._parents = _head_parents([b for b in self.blocks if b.kind == 'categorical'],
                                      category_links)
        sizes = [len(g) for g in self._softmax_groups]
        self.links = nn.ParameterList([
            nn.Parameter(torch.zeros(sizes[j], sum(sizes[i] for i in parents)))
            for j, parents in enumerate(self._parents)
        ] if any(self._parents) else [])

    def _smooth(self, probs):
        """(1 - a) probs + a u, u uniform over the public categories (all buckets but the last,
        the out-of-domain one). Every category then keeps at least a / K of each class, so a
        category whose noisy target fell to 0 in one class is rare there, not impossible:
        impossible values are what naive-Bayes-like models trained on the output break on. As
        training sees the same mixture, the generator lowers its own share of common categories to
        compensate; only categories truly below a / K are lifted."""
        a = self.category_smoothing
        inside = probs.shape[-1] - 1
        if a <= 0 or inside < 1:
            return probs
        uniform = torch.full_like(probs[..., :1], a / inside)
        return torch.cat([(1 - a) * probs[..., :-1] + uniform, (1 - a) * probs[..., -1:]], dim=-1)

    def _numeric_noise(self, rows, generator, device):
        if self.numeric_noise <= 0:
            return None
        return torch.randn(rows, len(self._sigmoid_cols), generator=generator).to(device)

    @property
    def _linked(self):
        return 'links' in self._modules and len(self._modules['links']) > 0  # old pickles: none

    def _category_draws(self, rows, generator, device):
        if not self._linked:
            return None
        return torch.rand(rows, len(self._softmax_groups), generator=generator).to(device)

    def _linked_heads(self, pieces, draws):
        """Categorical heads in layout order, each one's logits shifted by a learned linear map
        of the categories drawn in the earlier heads. Independent heads given z cannot carry a
        one-to-one map (education x educational-num): the map needs the drawn value, not its
        probabilities. ``draws`` (uniform, one per row and head): one-hot draws with
        straight-through gradients; None: probabilities stand in for the draws.

        Returns (heads, probabilities): the second, each head's probabilities given the draws
        before it, is the lower-variance estimate for maps that are sums over single columns."""
        out, soft = [], []
        for j, piece in enumerate(pieces):
            if self._parents[j]:
                seen = torch.cat([out[i] for i in self._parents[j]], dim=1)
                piece = piece + LINK_SCALE * (seen @ self.links[j].T)
            probs = self._smooth(torch.softmax(piece, dim=1))
            soft.append(probs)
            if draws is not None:
                cdf = torch.cumsum(probs.detach(), dim=1)
                pick = (cdf < draws[:, j:j + 1] * cdf[:, -1:]).sum(1).clamp(max=probs.shape[1] - 1)
                hard = nn.functional.one_hot(pick, probs.shape[1]).to(probs.dtype)
                probs = hard + probs - probs.detach()
            out.append(probs)
        return out, soft

    def forward(self, z, y_onehot, noise=None, draws=None):
        """``noise`` (standard normal, one column per numeric head) is scaled by
        ``numeric_noise`` and added to the numeric values, reflected into [0, 1]. The kernels do
        not see structure finer than their length scale, so without it the generator is free to
        put class-specific spikes there, which classifiers trained on the output then exploit.
        ``draws``: see ``_linked_heads``."""
        return self.training_rows(z, y_onehot, noise, draws)[0]

    def training_rows(self, z, y_onehot, noise=None, draws=None):
        """(rows, additive_rows): ``forward``'s rows, and the same rows with each linked head's
        probabilities in place of its draw. Both have the same expected features under a map that
        is a sum over single columns (each column's features are linear in its one-hot), and
        the second has less variance; unlinked, both are the same tensor."""
        logits = self._take(self.net(torch.cat([z, y_onehot], dim=1)), '_perm')
        pieces = torch.split(logits, [*self._group_sizes, self._n_missing], dim=1)
        values = torch.sigmoid(pieces[0])
        if noise is not None and self.numeric_noise > 0:
            values = 1 - (1 - (values + self.numeric_noise * noise).abs()).abs()
        zeros = torch.zeros_like(pieces[-1])
        if not self._linked:
            heads = [self._smooth(torch.softmax(p, dim=1)) for p in pieces[1:-1]]
            rows = self._take(torch.cat([values, *heads, zeros], dim=1), '_inverse')
            return rows, rows
        heads, soft = self._linked_heads(pieces[1:-1], draws)
        rows = self._take(torch.cat([values, *heads, zeros], dim=1), '_inverse')
        if draws is None:
            return rows, rows
        return rows, self._take(torch.cat([values, *soft, zeros], dim=1), '_inverse')

    def _take(self, x, name):
        """``x[:, index]`` for the column permutation buffer ``name``: by slices of its runs of
        consecutive columns when there are few (their backward copies slices; a gather's
        scatters into a zero tensor of x's size), else by the gather. The runs are computed
        once (old pickles: on first use)."""
        cache = self.__dict__.setdefault('_column_runs', {})
        if name not in cache:
            runs = _column_runs(getattr(self, name).tolist())
            cache[name] = runs if len(runs) <= MAX_COLUMN_RUNS else None
        if cache[name] is None:
            return x[:, getattr(self, name)]
        return _take_columns(x, cache[name])

    @torch.no_grad()
    def sample(self, labels, generator, probabilities=None, adjust=None):
        """Encoded rows for ``labels``, float32 (n, n_columns): numeric values as in ``forward``,
        null indicators and one-hot categories drawn, other columns (the target's) zero. float32
        is the network's own precision, so nothing is lost; 0 and 1 are exact.

        Each drawn block takes one uniform per row, by inverse CDF on the head's probabilities,
        vectorised over rows (``torch.multinomial`` was most of the sampling time on wide tables).
        The work is done on columns x rows, where a block is a contiguous slab, and the result is
        returned as its transpose (a view, which pandas takes without a copy).
        ``probabilities``: a dict keyed by categorical head indices; each gets the (rows, public
        categories) probabilities that head's category was drawn from (``engines.calibration``).
        ``adjust``: {head index: f}, f((public categories, rows) probabilities) -> a logit step
        per category, applied ``ADJUST_PASSES`` times before the head is drawn.
        ``edge_snap`` (an attribute set after calibration): numeric values within it of 0 or 1
        become 0 or 1 exactly. A sigmoid never reaches the box edge, so without it a column
        whose rows sit at a public bound (zeros of a money column) has none there.
        """
        device = next(self.parameters()).device
        labels = torch.as_tensor(labels, dtype=torch.long)
        n = len(labels)
        z = torch.randn(n, self.latent_dim, generator=generator)
        noise = self._numeric_noise(n, generator, device)
        drawn = [b for b in self.blocks if b.nullable or b.kind == 'categorical']
        u = torch.rand(len(drawn), n, generator=generator).numpy()
        y = nn.functional.one_hot(labels, self.n_classes).float()
        hidden = torch.cat([z, y], dim=1).to(device)
        for layer in self.net[:-1]:
            hidden = hidden.relu_() if isinstance(layer, nn.ReLU) else layer(hidden)
        last = self.net[-1]
        logits = torch.addmm(last.bias[:, None], last.weight, hidden.T).cpu().numpy()
        out = np.zeros((self.n_columns, n), dtype=np.float32)
        numeric = [c for b in self.blocks if b.kind == 'numeric' for c in b.columns]
        if numeric:
            values = torch.sigmoid(torch.from_numpy(logits[numeric]))
            if noise is not None:
                values = 1 - (1 - (values + self.numeric_noise * noise.cpu().T).abs()).abs()
            out[numeric] = values.numpy()
            for column, (grid, mapped) in (getattr(self, 'value_maps', None) or {}).items():
                out[column] = np.interp(out[column], grid, mapped)  # engines.calibration
            snap = getattr(self, 'edge_snap', 0.0)  # set by post-processing; old pickles: off
            if snap > 0:
                for b in self.blocks:  # values only: a null indicator is a probability
                    if b.kind == 'numeric':
                        v = out[b.columns[0]]
                        v[v <= snap] = 0.0
                        v[v >= 1.0 - snap] = 1.0
        everyone = np.arange(n)
        heads = [b for b in self.blocks if b.kind == 'categorical']
        calibration = getattr(self, 'calibration', None) or {}  # None: trained before it
        for j, b in enumerate(drawn):
            if b.nullable:
                null = b.columns[1]
                out[null] = u[j] < out[null]
                continue
            # The last bucket holds out-of-domain values, which have no value to decode to:
            # it is modelled (so real rows stay bounded) but never sampled.
            inside = np.asarray(b.columns[:-1])
            k = heads.index(b)
            parents = self._parents[k] if self._linked else []
            if parents:  # earlier heads are drawn already: blocks run in layout order
                seen = out[[c for i in parents for c in heads[i].columns]]
                link = LINK_SCALE * self.links[k].detach().cpu().numpy()
                logits[_rows(np.asarray(b.columns))] += link @ seen
            for i, offsets in calibration.get(k, ()):  # see engines.calibration
                offsets = offsets.numpy()  # ([w_parent,] w_child), shared by the classes
                if i is None:
                    offsets = offsets[:, None]
                elif isinstance(i, CategoryGroups):  # by the group of a category drawn earlier
                    drawn_category = out[list(heads[i.head].columns)].argmax(axis=0)
                    offsets = offsets[np.asarray(i.groups)[drawn_category]].T
                else:  # by the category drawn in head i
                    offsets = offsets[out[list(heads[i].columns)].argmax(axis=0)].T
                logits[_rows(np.asarray(b.columns))] += offsets
            if len(inside) == 0:
                out[b.columns[0]] = 1.0
                continue
            cdf = self._inside_weights(logits, b.columns)
            if adjust is not None and k in adjust:  # engines.calibration: fit this head's
                # marginal to the rows drawn before it, in logit units (exact with smoothing)
                for _ in range(ADJUST_PASSES):
                    logits[inside] += adjust[k](cdf / cdf.sum(axis=0))[:, None]
                    cdf = self._inside_weights(logits, b.columns)
            if probabilities is not None and k in probabilities:
                probabilities[k] = torch.from_numpy((cdf / cdf.sum(axis=0)).T.copy())
            for i in range(1, len(cdf)):  # row by row: 3x faster than np.cumsum on axis 0
                cdf[i] += cdf[i - 1]
            total = cdf[-1]
            if not np.isfinite(total).all():
                raise FloatingPointError(
                    'The generator outputs non-finite values (training diverged); refit with '
                    'a lower learning_rate.'
                )
            # u * total can round up to total; just below it, the pick has mass > 0
            x = np.minimum(u[j] * total, np.nextafter(total, np.float32(0)))
            pick = (cdf <= x).sum(axis=0)
            out[inside[pick], everyone] = 1.0
        return out.T

    def _inside_weights(self, logits, columns):
        """Unnormalised probabilities of a categorical block's public categories (its buckets
        but the last), by row (columns x rows), as ``forward``'s smoothed softmax gives them."""
        if self.category_smoothing <= 0:
            part = logits[_rows(np.asarray(columns[:-1]))]
            return np.exp(part - part.max(axis=0))
        full = torch.from_numpy(logits[_rows(np.asarray(columns))]).T
        return self._smooth(torch.softmax(full, dim=1))[:, :-1].T.numpy().copy()


#: the links act in logit units of LINK_SCALE x their weights: Adam moves each weight by about the
#: learning rate per step, so unscaled weights could not reach the logit gaps of a one-to-one map
#: (about 10) in a few hundred steps
LINK_SCALE = 10.0
#: logit steps ``sample``'s ``adjust`` takes per head (Newton steps on one head's marginal: rows
#: that earlier heads' offsets made nearly certain slow them to linear convergence)
ADJUST_PASSES = 5


def linked_blocks(blocks, max_width, max_parameters):
    """Names of the categorical blocks whose heads are linked: those at most ``max_width``
    buckets wide, leaving out the widest while the links would hold more than
    ``max_parameters`` weights (sum over pairs of the two widths' product, as the 'pairs' map's
    features). Public widths only; () when fewer than two remain."""
    categorical = [b for b in blocks if b.kind == 'categorical']
    kept, _ = pair_blocks_within(categorical, 1.0, max_parameters, max_width)
    return tuple(b.name for b in kept) if len(kept) > 1 else ()


def _head_parents(heads, links):
    """_parents[j]: the indices of the earlier heads that head j sees. ``links``: names (each
    named head sees every earlier named head) or {name: names of its parents}."""
    index = {b.name: j for j, b in enumerate(heads)}
    if isinstance(links, dict):
        parents = [sorted(index[p] for p in links.get(b.name, ())) for b in heads]
        if any(i >= j for j, ps in enumerate(parents) for i in ps):
            raise ValueError('a linked head can only see heads drawn before it (layout order)')
        return parents
    linked = [b.name in set(links) for b in heads]
    return [[i for i in range(j) if linked[i]] if linked[j] else [] for j in range(len(heads))]


class CategoryGroups(NamedTuple):
    """A calibration parent that is a wide categorical head seen through groups of its
    consecutive categories (``groups[category]``: its group)."""

    head: int
    groups: tuple


#: above this many runs of consecutive columns, a permutation is a gather (the slices' backward
#: grows with their number: measured on 1024 x 700, slices are faster up to about 15 runs)
MAX_COLUMN_RUNS = 12


def _column_runs(index):
    """[(start, stop)]: ``index`` as runs of consecutive integers."""
    runs = []
    for i in index:
        if runs and runs[-1][1] == i:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1])
    return [tuple(r) for r in runs]


def _take_columns(x, runs):
    """``x[:, index]`` from ``index``'s runs: one split of x at the runs' ends and one
    concatenation. The same values; the backward is a concatenation and copies, where a gather
    scatters into a zero tensor of x's size (and each slice of x would write one)."""
    if len(runs) == 1:
        return x[:, runs[0][0]:runs[0][1]]
    cuts = sorted({0, x.shape[1], *(c for run in runs for c in run)})
    pieces = dict(zip(cuts, torch.split(x, [b - a for a, b in zip(cuts, cuts[1:])], dim=1)))
    return torch.cat([pieces[c] for a, b in runs for c in cuts if a <= c < b], dim=1)


def _rows(index):
    """A slice for consecutive indices (a view), else the indices."""
    if (np.diff(index) == 1).all():
        return slice(int(index[0]), int(index[-1]) + 1)
    return index


@torch.no_grad()
def collapsed_classes(generator, classes, rows=512, spread=0.01, dominance=0.99,
                      numeric_spread=0.03):
    """Classes whose generated rows are (near) identical: every numeric output's std below
    ``spread`` (of the public range) and every categorical column's mean probability above
    ``dominance`` on one bucket; or, with two or more numeric columns, whose numeric part is one
    point (every numeric std below ``numeric_spread``), whatever the heads draw: a fit that
    parks every numeric column of a class at one value, which the heads' spread hid
    (benchmarks/results/one_way_bins.md). Post-processing: it only runs the trained generator."""
    gen = torch.Generator().manual_seed(0)  # a diagnostic: leave the model RNG alone
    numeric = [b.columns[0] for b in generator.blocks if b.kind == 'numeric']
    groups = [list(b.columns) for b in generator.blocks if b.kind == 'categorical']
    device = next(generator.parameters()).device
    out = []
    for c in classes:
        z = torch.randn(rows, generator.latent_dim, generator=gen).to(device)
        y = nn.functional.one_hot(torch.full((rows,), int(c)), generator.n_classes).float()
        soft = generator(z, y.to(device), generator._numeric_noise(rows, gen, device)).cpu()
        stds = [float(soft[:, col].std()) for col in numeric]
        flat = all(s < spread for s in stds)
        # the smoothed heads put at most 1 - a on one bucket
        top = dominance * (1 - generator.category_smoothing)
        fixed = all(float(soft[:, g].mean(0).max()) > top for g in groups)
        if (flat and fixed) or (len(stds) >= 2 and max(stds) < numeric_spread):
            out.append(int(c))
    return out

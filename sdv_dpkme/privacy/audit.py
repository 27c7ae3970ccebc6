"""Empirical privacy audit: a measured lower bound on epsilon, to set next to the claimed one.

WARNING -- run it on PUBLIC or SYNTHETIC rows only. The audit fits a synthesizer many times on a
stand-in table (the bundled public Adult sample, or rows drawn from the declared public domain)
with and without a canary row, and its output reveals those tables far beyond any budget. Never
pass the private table: the audit's result would be a new, unaccounted release of it.

The game (many runs): D is the stand-in table, D' the same table with one row replaced by the
canary (replace-one neighbours, as the accountant's). Every trial fits D or D' on a fair secret
bit with the real fit path and real secret noise, and a test guesses the bit.

* White-box statistic. Inside ``recorder.recording()`` every Gaussian release records its clean
  statistic, noisy output and noise std. Two reference fits give the clean statistics s(D),
  s(D') (a fixed model ``random_state`` makes them the same in every fit); the score of a trial is
  the log-likelihood-ratio statistic sum_j <y_j - s_j(D), s_j(D') - s_j(D)> / std_j^2,
  normalised to N(0, 1) under D and N(mu, 1) under D' for a correct fit. Every white-box fit
  stops right after its releases (the engine's ``recorder.releases_done``, or ``stop_after``),
  so one costs one pass over the rows.
* Bounds (each at level 1 - alpha/k over the k methods run, so the maximum holds at 1 - alpha):
  'clopper_pearson' and 'guessing' are assumption-free (see ``audit_stats``); 'gaussian' assumes
  what the recorder sees, each release = clean statistic + iid Gaussian noise of unknown scale,
  bounds that scale from the recorded noise (chi-square) and converts mu to epsilon exactly.
* Black-box (optional): full fits, samples scored by their similarity to the canary.

Releases outside ``GaussianMechanism`` (the subsampled DP-SGD steps of DP-KIP, DP-MERF's
minibatches) are not recorded: their audit is black-box only.
"""

import math
import secrets
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from sdv_dpkme.privacy import audit_stats as st
from sdv_dpkme.privacy.recorder import recording

__all__ = ['AuditResult', 'STAND_IN_WARNING', 'default_canary', 'neighbours', 'run_audit']

STAND_IN_WARNING = (
    'The audit must run on a PUBLIC or SYNTHETIC stand-in table, never on private rows: its '
    'output reveals the audited tables beyond any budget.'
)


@dataclass
class AuditResult:
    synthesizer: str
    settings: dict
    claimed_epsilon: float
    delta: float
    epsilon_lower_bound: float
    method: str
    confidence: float
    trials: int
    reference_fits: int
    canaries_per_trial: int
    bounds: dict
    statistic: str
    stand_in: str
    releases_audited: list
    mu_claimed_pair: float
    noise_scale_upper: dict = field(default_factory=dict)
    black_box: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)

    @property
    def exceeds_claim(self):
        return self.epsilon_lower_bound > self.claimed_epsilon

    def to_dict(self):
        out = asdict(self)
        out['exceeds_claim'] = self.exceeds_claim
        return out


def default_canary(table, replace_index=0):
    """A canary far from row ``replace_index`` using only the stand-in table's own (public)
    values: per numeric column the stand-in's min or max, whichever is farther; per other column
    its rarest value that differs from the row's."""
    row = table.iloc[replace_index].copy()
    for column in table.columns:
        values = table[column].dropna()
        if values.empty:
            continue
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            low, high = values.min(), values.max()
            value = row[column]
            row[column] = low if pd.isna(value) or abs(value - low) > abs(value - high) else high
        else:
            counts = values.value_counts(ascending=True)
            others = [v for v in counts.index if v != row[column]]
            if others:
                row[column] = others[0]
    return row


def neighbours(table, canary, replace_index=0):
    """(D, D'): the stand-in table and the same table with one row replaced by the canary."""
    table = table.reset_index(drop=True)
    with_canary = table.copy()
    for column in table.columns:
        if column in canary.index:
            with_canary.at[replace_index, column] = canary[column]
    return table, with_canary


def _fit(factory, frame, table_name, stop_after=None, fit=None, white_box=True):
    """One fit; ``white_box``: it ends once its recorded releases are made (the engine's
    ``releases_done``, or ``stop_after`` releases)."""
    synthesizer = factory()
    if getattr(synthesizer, 'random_state', 0) is None:
        raise ValueError('the audit needs a fixed model random_state, so that every fit draws '
                         'the same public feature maps (the privacy noise stays secret)')
    with recording(stop_after, stop_when_done=white_box) as recorder:
        if fit is None:
            synthesizer.fit({table_name: frame})
        else:
            fit(synthesizer, frame)
    return synthesizer, recorder.releases


def _matching(ref_out, ref_in, releases):
    """Indices j whose release has the same public key in both references and this fit."""
    return [j for j, r in enumerate(releases[:min(len(ref_out), len(ref_in))])
            if r.key() == ref_out[j].key() == ref_in[j].key()]


def llr_score(ref_out, ref_in, releases, kappa=None):
    """(normalised LLR statistic, mu) of one fit's releases against the references."""
    t = m2 = 0.0
    for j in _matching(ref_out, ref_in, releases):
        std = releases[j].std * (1.0 if kappa is None else kappa.get(ref_out[j].name, 1.0))
        diff = ref_in[j].clean - ref_out[j].clean
        t += float(np.sum((releases[j].noisy - ref_out[j].clean) * diff)) / std**2
        m2 += float(np.sum(diff * diff)) / std**2
    mu = math.sqrt(m2)
    return (t / mu if mu > 0 else 0.0), mu


def similarity(samples, canary, table):
    """Black-box score: mean share of columns where a sampled row matches the canary (numbers:
    within 5% of the stand-in column's range)."""
    if isinstance(samples, dict):  # SDV's multi-table shape: one table
        samples = next(iter(samples.values()))
    shares = []
    for column in canary.index:
        if column not in samples.columns or pd.isna(canary[column]):
            continue
        col = samples[column]
        ref = table[column].dropna()
        if pd.api.types.is_numeric_dtype(ref) and not pd.api.types.is_bool_dtype(ref):
            width = 0.05 * max(float(ref.max() - ref.min()), 1e-12)
            hit = (pd.to_numeric(col, errors='coerce') - float(canary[column])).abs() <= width
        else:
            hit = col.astype(str) == str(canary[column])
        shares.append(hit.to_numpy(dtype=float))
    return float(np.mean(np.mean(shares, axis=0))) if shares else 0.0


def _describe(factory, synthesizer):
    try:
        params = synthesizer.get_parameters()
    except Exception:  # noqa: BLE001 - a description only
        params = {}
    return {k: (v if isinstance(v, (int, float, str, bool, type(None))) else repr(v))
            for k, v in params.items() if k != 'metadata'}


def run_audit(factory, table, *, table_name, stand_in, canary=None, replace_index=0, trials=20,
              black_box_fits=0, sample_rows=500, confidence=0.95, progress=False, fit=None):
    """Audit the synthesizer that ``factory()`` builds (unfitted, fixed ``random_state``) on the
    PUBLIC stand-in ``table`` (see the module docstring). ``stand_in``: how the table was made,
    for the report. ``fit(synthesizer, frame)``: another entry path than
    ``synthesizer.fit({table_name: frame})`` (e.g. SDV's ``fit_processed_data``). Returns an
    ``AuditResult``."""
    if not 0 < confidence < 1:
        raise ValueError(f'confidence must be in (0, 1), got {confidence!r}')
    canary = default_canary(table, replace_index) if canary is None else canary
    d_out, d_in = neighbours(table, canary, replace_index)
    bar = _bar(progress, 2 + trials + (black_box_fits + 2 if black_box_fits else 0))
    ref_synth, ref_out = _fit(factory, d_out, table_name, fit=fit)
    bar.update()
    _, ref_in = _fit(factory, d_in, table_name, stop_after=len(ref_out) or None, fit=fit)
    bar.update()
    claimed, delta = float(ref_synth.epsilon), float(ref_synth.delta)
    if not math.isfinite(claimed):
        raise ValueError('epsilon=inf adds no noise: there is no claim to audit')
    keep = _matching(ref_out, ref_in, ref_out)
    noise = {}
    _collect(noise, ref_out, keep)
    _collect(noise, ref_in, keep)
    stop = len(ref_out) if ref_out else None
    scores = {0: [], 1: []}
    for _ in range(trials):
        bit = secrets.randbits(1)
        _, releases = _fit(factory, d_in if bit else d_out, table_name, stop_after=stop, fit=fit)
        score, _ = llr_score(ref_out, ref_in, releases)
        scores[bit].append(score)
        _collect(noise, releases, _matching(ref_out, ref_in, releases))
        bar.update()
    bb = _black_box(factory, d_out, d_in, canary, table_name, black_box_fits, sample_rows, bar,
                    fit)
    bar.close()
    _, mu_claimed = llr_score(ref_out, ref_in, ref_out)
    methods = ['gaussian'] + (['clopper_pearson', 'guessing'] if trials else [])
    methods += ['black_box'] if black_box_fits else []
    alpha = (1 - confidence) / len(methods)
    kappa = {name: st.noise_scale_upper(np.concatenate(v), 1.0, alpha / max(len(noise), 1))
             for name, v in noise.items()}
    bounds = {'gaussian': _gaussian_bound(ref_out, ref_in, kappa, delta)}
    if trials:
        threshold = mu_claimed / 2
        bounds['clopper_pearson'] = st.clopper_pearson_epsilon_lower_bound(
            scores[0], scores[1], threshold, delta, alpha)
        right = sum(s <= threshold for s in scores[0]) + sum(s > threshold for s in scores[1])
        bounds['guessing'] = st.guessing_epsilon_lower_bound(right, trials, delta, alpha)
    if black_box_fits:
        bounds['black_box'] = st.guessing_epsilon_lower_bound(
            bb['correct'], bb['fits'], delta, alpha)
    best = max(bounds, key=bounds.get)
    return AuditResult(
        synthesizer=type(ref_synth).__name__, settings=_describe(factory, ref_synth),
        claimed_epsilon=claimed, delta=delta, epsilon_lower_bound=bounds[best],
        method=best if bounds[best] > 0 else 'none (all bounds 0)', confidence=confidence,
        trials=trials, reference_fits=2, canaries_per_trial=1, bounds=bounds,
        statistic=('white-box log-likelihood ratio of the recorded Gaussian releases against '
                   'the clean statistics of D and D\' (threshold mu/2)'),
        stand_in=stand_in, releases_audited=[ref_out[j].name for j in keep],
        mu_claimed_pair=mu_claimed, noise_scale_upper=kappa, black_box=bb,
        notes=[STAND_IN_WARNING] + ([] if keep else [
            'no Gaussian release was recorded (subsampled releases are not): white-box bounds '
            'are 0; use black_box_fits'])
        + [f'{len(scores[0])} trials fitted D, {len(scores[1])} fitted D\'.'],
    )


def _collect(noise, releases, indices):
    """Noise of each recorded release, in units of its recorded std, by release name."""
    for j in indices:
        r = releases[j]
        if r.std > 0:
            noise.setdefault(r.name, []).append(((r.noisy - r.clean) / r.std).ravel())


def _gaussian_bound(ref_out, ref_in, kappa, delta):
    """epsilon of the Gaussian shift with mu from the clean difference and the noise bounded
    above by kappa * recorded std (valid if the releases add iid Gaussian noise)."""
    _, mu = llr_score(ref_out, ref_in, ref_out, kappa)
    return min(st.MAX_EPSILON, st.gaussian_epsilon(mu, delta))


def _black_box(factory, d_out, d_in, canary, table_name, fits, rows, bar, fit):
    if not fits:
        return {}
    ref_out_synth, _ = _fit(factory, d_out, table_name, fit=fit, white_box=False)
    ref_in_synth, _ = _fit(factory, d_in, table_name, fit=fit, white_box=False)
    base_out = similarity(ref_out_synth.sample(rows), canary, d_out)
    base_in = similarity(ref_in_synth.sample(rows), canary, d_out)
    threshold = (base_out + base_in) / 2  # from fits independent of the trials
    correct = 0
    for _ in range(fits):
        bit = secrets.randbits(1)
        synth, _ = _fit(factory, d_in if bit else d_out, table_name, fit=fit, white_box=False)
        score = similarity(synth.sample(rows), canary, d_out)
        guess = score > threshold if base_in >= base_out else score < threshold
        correct += int(guess == bool(bit))
        bar.update()
    bar.update(2)
    return {'fits': fits, 'correct': correct, 'sample_rows': rows, 'threshold': threshold,
            'statistic': 'mean share of columns where a sampled row matches the canary'}


class _NoBar:
    def update(self, n=1):
        pass

    def close(self):
        pass


def _bar(progress, total):
    if not progress:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc='audit fits', unit='fit')

"""The noise-aware release plan of the kernel-mean-embedding engine (public facts only).

Before any spend, each release k is judged in the joint space (the class-weighted embedding
the generator's loss works in): its signal, the joint mean embedding, has Frobenius norm at
most the map's norm bound (||phi|| <= 1), and its Gaussian noise has expected norm about

    sigma_k * (D_k / n) * sqrt(dimension_k * classes),

from the calibrated multiplier sigma_k, the replace-one sensitivity D_k / n and the public
width of the map (a release pooled over the classes, 'one_way', has one row: no factor of
classes). Every input is public: n (the sensitivities divide by it), epsilon, delta,
the layout and the kernel options.

``choose_releases`` takes the term whose ratio noise / signal bound is the largest above
``max_ratio`` and narrows it if a narrower version exists, else drops it: the redrawn product
kernels keep fewer redraws; the 'pairs' map keeps fewer Fourier frequencies per numeric column
(down to one), then fewer pairs, those with the most cells first (``narrowed_pair_map``); the
Fourier-series marginals ('marginals', and the numeric part of 'one_way') a coarser length scale,
hence fewer frequencies per numeric column (a smooth column shape lives in the low frequencies),
down to a noise ratio of ``NARROWED_RATIO`` where ``MAX_MARGINAL_LENGTH`` allows it; a term
still above ``max_ratio`` at that length is dropped. A narrowed term keeps its share; a
dropped one gives it to the terms that remain (the plan is renormalised, so the total spend is
unchanged). It repeats until every optional term is below ``max_ratio``. The method's own kernel
(the first term) and the class proportions are never dropped; a Hermite sum kernel as that
kernel is narrowed to a lower order (at least ``MIN_CORE_ORDER``) while its expected noise norm
is above its bound. ``plan_warning.weak_signal`` then says whether that kernel, with the budget
it got, still expects noise above its signal bound: the fit warns before spending.
"""

import math
from dataclasses import asdict, dataclass, replace

from sdv_dpkme.engines.kme_pairs import pairs_index, selectable
from sdv_dpkme.engines.kme_plan import plan_releases
from sdv_dpkme.features import (
    FourierMarginalMap,
    OneWayMap,
    PairwiseKernelMap,
    SumKernelMap,
    replace_sensitivity,
)
from sdv_dpkme.features.marginal import default_frequencies
from sdv_dpkme.features.pairwise import narrowed_pair_map

SELECTED = 'selected_pairs'


@dataclass
class PlanEntry:
    """One release group of the plan: what was decided and the public numbers behind it."""

    group: str
    decision: str  # 'kept', 'narrowed' or 'dropped'
    releases: int  # releases made (0 when dropped)
    planned: int  # releases the options asked for
    dimension: int  # of one release (the largest), joint space: map width x classes (pooled: x 1)
    sensitivity: float  # L2, replace-one, of one release
    noise_multiplier: float  # at the final plan (before dropping, for a dropped group)
    expected_noise_norm: float
    signal_bound: float
    ratio: float  # expected_noise_norm / signal_bound
    reason: str

    def to_dict(self):
        return asdict(self)


def _selected_dimension(terms, selection):
    """Public width of the selected-pair release: its pair count times the mean cell count of
    a categorical pair (which pairs are chosen is decided on the 'pairs' release, so only
    their number is public before it)."""
    names = selectable(terms)
    if selection is None or len(names) < 2 or selection.size(len(names)) <= 0:
        return None
    fmap = next(t.feature_map for t in terms if isinstance(t.feature_map, PairwiseKernelMap))
    widths = [b.width for b in fmap.blocks if b.name in set(names)]
    cells = [a * b for i, a in enumerate(widths) for b in widths[i + 1:]]
    count = min(selection.size(len(names)), len(cells))
    return max(1, round(count * sum(cells) / len(cells)))


def _numbers(terms, plan, sigmas, n, n_classes, selected_dim):
    """{group: (dimension, sensitivity, sigma, noise norm, signal bound)}: the worst release."""
    out = {}
    for term in terms:
        fmap = term.feature_map
        sens = replace_sensitivity(fmap) / n
        dim = int(fmap.dim) * (1 if term.pooled else n_classes)  # pooled: one row
        noise = sigmas[term.group] * sens * math.sqrt(dim)
        bound = float(getattr(fmap, 'norm_bound', 1.0))
        if term.group not in out or noise / bound > out[term.group][3] / out[term.group][4]:
            out[term.group] = (dim, sens, sigmas[term.group], noise, bound)
    if SELECTED in plan:
        sens, dim = math.sqrt(2) / n, selected_dim * n_classes
        out[SELECTED] = (dim, sens, sigmas[SELECTED], sigmas[SELECTED] * sens * math.sqrt(dim),
                         1.0)
    if 'class_proportions' in plan:
        sens = math.sqrt(2) / n
        out['class_proportions'] = (n_classes, sens, sigmas['class_proportions'],
                                    sigmas['class_proportions'] * sens * math.sqrt(n_classes), 1.0)
    return out


def _reschedule(kept, steps):
    """The kept product redraws share the steps as the drawn ones did ('cycle': one per step in
    turn; else contiguous blocks)."""
    count = len(kept)
    if not count:
        return kept
    if kept[0].period > 1:
        return [replace(t, period=count, phase=r, first_step=0, last_step=None)
                for r, t in enumerate(kept)]
    per = max(1, steps // count)
    return [replace(t, first_step=r * per, last_step=None if r == count - 1 else (r + 1) * per,
                    period=1, phase=0) for r, t in enumerate(kept)]


#: a pooled term offered as a fallback (``choose_releases``) replaces the class-conditional
#: 'marginals' where these, planned without it, expect noise above this x their signal bound
POOLED_FALLBACK_RATIO = 1.0


def choose_releases(terms, shares, has_target, n, n_classes, calibrate, max_ratio=None,
                    selection=None, steps=1, pooled_fallback=(), keep_fallback=False):
    """(kept terms, whether 'selected_pairs' is released, plan, sigmas, [PlanEntry]).

    ``calibrate``: the accountant's ``calibrate`` (pure: it records nothing). ``max_ratio``
    None keeps every term (the fixed plan) and only reports the numbers.
    ``pooled_fallback``: pooled terms (the 'one_way' of a fit with a target) that replace the
    class-conditional 'marginals' where these, in the plan without the fallback, expect noise
    above ``POOLED_FALLBACK_RATIO`` x their signal bound (narrowed or dropped ones included):
    there one release of the column marginals pooled over the classes, with about sqrt(C) less
    noise per column, carries the shapes better than C noisy class-conditional ones. Where the
    'marginals' carry signal (or there are none), the pooled terms are planned beside them with
    ``keep_fallback`` (a target of >= 3 classes), else left out (benchmarks/results/one_way.md,
    small_marginals.md)."""
    chosen = _choose(terms, shares, has_target, n, n_classes, calibrate, max_ratio, selection,
                     steps)
    if not pooled_fallback or max_ratio is None:
        return chosen
    at, marginals = next(((i, e) for i, e in enumerate(chosen[4]) if e.group == 'marginals'),
                         (None, None))
    if marginals is None or (marginals.decision == 'kept'
                             and marginals.ratio <= POOLED_FALLBACK_RATIO):
        if not keep_fallback:
            return chosen
        return _choose(list(terms) + list(pooled_fallback), shares, has_target, n, n_classes,
                       calibrate, max_ratio, selection, steps)
    if marginals.decision == 'kept':
        why = (f'expected noise norm {marginals.ratio:.3g} x their signal bound (above '
               f'{POOLED_FALLBACK_RATIO:g})')
    else:
        why = (f'expected noise norm above max_noise_ratio={max_ratio:g} x their signal bound '
               f'(they were {marginals.decision})')
    pooled = _no_finer(pooled_fallback, chosen[0], marginals.decision)
    chosen = _choose([t for t in terms if t.group != 'marginals'] + pooled, shares, has_target,
                     n, n_classes, calibrate, max_ratio, selection, steps)
    groups = {t.group for t in pooled_fallback}
    coarser = {t.group: _fourier_part(t.feature_map).length_scale
               for t, was in zip(pooled, pooled_fallback) if t is not was}
    for entry in chosen[4]:
        if entry.group in groups:
            at_length = (f", at length {coarser[entry.group]:g} (no finer than that plan left "
                         f"them)" if entry.group in coarser else '')
            entry.reason = (f"released (pooled over the classes) instead of the class-"
                            f"conditional 'marginals', which in the plan without it had {why}"
                            f"{at_length}; " + entry.reason)
    marginals = replace(marginals, decision='dropped', releases=0, reason=(
        f"in the plan without {', '.join(sorted(groups))} they had {why}: replaced by that "
        'pooled release (about sqrt(classes) less noise per column), their budget share going '
        'to the kept terms'))
    chosen[4].insert(at, marginals)  # where it stood in the plan without the fallback
    return chosen


def _no_finer(pooled, kept, decision):
    """The pooled Fourier-series terms at no finer a length than the plan without them gave
    'marginals' (the coarsest length where it was dropped): a pooled release in its place at
    the full length would spread about as much noise over every frequency as the narrowing
    took out of the marginals (an 80-row fit then parked a column at a box edge)."""
    narrowed = next((t.feature_map for t in kept if t.group == 'marginals'), None)
    length = MAX_MARGINAL_LENGTH if decision == 'dropped' else narrowed.length_scale
    out = []
    for term in pooled:
        series = _fourier_part(term.feature_map)
        if term.group in FOURIER_GROUPS and series is not None and series.length_scale < length:
            term = replace(term, feature_map=_with_length(term.feature_map, length))
        out.append(term)
    return out


def _choose(terms, shares, has_target, n, n_classes, calibrate, max_ratio, selection, steps):
    planned = {}
    for term in terms:
        planned[term.group] = planned.get(term.group, 0) + 1
    core = terms[0].group if terms else None
    kept, gone, coarsest = list(terms), {}, {}
    last_selected = None  # 'selected_pairs' numbers of the previous pass
    while True:
        selected_dim = _selected_dimension(kept, selection)
        if selected_dim is not None:
            planned.setdefault(SELECTED, 1)
        plan = plan_releases(kept, shares, has_target, [SELECTED] if selected_dim else ())
        sigmas = calibrate(plan)
        numbers = _numbers(kept, plan, sigmas, n, n_classes, selected_dim)
        if (SELECTED in planned and SELECTED not in numbers and SELECTED not in gone
                and last_selected is not None):
            # its candidates went with a narrowed 'pairs' map (fewer than two categorical
            # columns left in it): judged on its last numbers
            gone[SELECTED] = ('with pairs', last_selected, last_selected[3] / last_selected[4],
                              None)
        last_selected = numbers.get(SELECTED)
        over = {g: v[3] / v[4] for g, v in numbers.items()
                if g not in (core, 'class_proportions') and v[3] / v[4] > max_ratio} \
            if max_ratio is not None else {}
        if not over:
            break
        group = max(over, key=over.get)
        ratio = over[group]
        members = [t for t in kept if t.group == group]
        # fewer redraws of a group with a fixed share: each keeps more precision (noise ~ sqrt(R))
        fewer = int(len(members) * (max_ratio / ratio) ** 2)
        if group != 'pairs' and len(members) > 1 and fewer >= 1:
            others = [t for t in kept if t.group != group]
            kept = others + _reschedule(members[:fewer], steps)
            gone.setdefault(group, ('narrowed', numbers[group], ratio, None))
            continue
        if group in FOURIER_GROUPS:  # a coarser kernel: noise norm ~ sqrt(width), same share
            kept, before, coarsest_ratio = _narrow_fourier(kept, group, ratio, max_ratio)
            if before is not None:
                gone.setdefault(group, ('narrowed', numbers[group], ratio, before))
                continue
            if coarsest_ratio is not None:
                coarsest[group] = coarsest_ratio
        if group == 'pairs':  # a narrower map: noise norm ~ sqrt(width) at the same share
            kept, narrowed = _narrow_pairs(kept, ratio, max_ratio)
            if narrowed is not None:
                gone.setdefault(group, ('narrowed', numbers[group], ratio, narrowed))
                if SELECTED in numbers and not _selectable_pairs_kept(kept):
                    selection = None  # its candidates are the categorical pairs of 'pairs'
                    selected = numbers[SELECTED]
                    gone.setdefault(SELECTED, ('with pairs', selected,
                                               selected[3] / selected[4], None))
                continue
        kept = [t for t in kept if t.group != group]
        if group == SELECTED:
            selection = None
        if group == 'pairs' and SELECTED in numbers:  # chosen on the 'pairs' release
            selected = numbers[SELECTED]
            gone.setdefault(SELECTED, ('with pairs', selected, selected[3] / selected[4], None))
        gone[group] = ('dropped', numbers[group], ratio, None)
    narrowed = _narrow_core(kept, numbers) if max_ratio is not None else None
    if narrowed is not None:  # the same plan and sigmas: only the core's width changes
        gone[core] = ('narrowed', numbers[core], numbers[core][3] / numbers[core][4],
                      kept[0].feature_map)
        kept = narrowed
        numbers = _numbers(kept, plan, sigmas, n, n_classes, selected_dim)
    return kept, selected_dim is not None, plan, sigmas, _entries(
        planned, kept, numbers, gone, max_ratio, core, coarsest)


#: the method's own Hermite sum kernel is narrowed (a lower order) while its expected noise
#: norm is above its signal bound, down to this order at the least
MIN_CORE_ORDER = 10


def _narrow_core(kept, numbers):
    """The terms with the core sum kernel at the highest order whose expected noise norm is at
    most its bound (at least ``MIN_CORE_ORDER``), or None when it is not above it or no lower
    order exists. Its sensitivity and share do not change with the order: noise ~ sqrt(width)."""
    fmap = kept[0].feature_map
    if not isinstance(fmap, SumKernelMap) or fmap.order <= MIN_CORE_ORDER:
        return None
    dim, _, _, noise, bound = numbers[kept[0].group]
    if noise <= bound:
        return None
    order = fmap.order
    while order > MIN_CORE_ORDER and \
            noise * math.sqrt(SumKernelMap(fmap.blocks, order, fmap.sigma2).dim / fmap.dim) > bound:
        order -= 1
    return [replace(kept[0], feature_map=SumKernelMap(fmap.blocks, order, fmap.sigma2)),
            *kept[1:]]


def _narrow_pairs(kept, ratio, max_ratio):
    """(terms, the map before) with the 'pairs' map narrowed to the width at which its noise,
    at the same share and sensitivity, would be ``max_ratio`` x its bound; (terms, None) when
    no narrower map exists. The loop re-judges it (the sensitivity can change with the mix)."""
    term = next(t for t in kept if t.group == 'pairs')
    fmap = term.feature_map
    target = min(fmap.dim - 1, int(fmap.dim * (max_ratio / ratio) ** 2))
    narrow = narrowed_pair_map(fmap, target) if target >= 1 else None
    if narrow is None:
        return kept, None
    return [replace(t, feature_map=narrow) if t is term else t for t in kept], fmap


#: the releases of Fourier-series marginals the plan narrows to a coarser length scale
FOURIER_GROUPS = ('marginals', 'one_way')
#: the coarsest length (on the public [0, 1] scale) a narrowed Fourier-series marginal keeps:
#: 6 frequencies, a column's location, spread and skew (MST's ten public bins resolve as much)
MAX_MARGINAL_LENGTH = 0.25
#: a Fourier-series marginal that has to be narrowed is narrowed to where its expected noise
#: norm is at most this times its signal bound, if its coarsest length gets there: at a ratio
#: near ``max_noise_ratio`` its low frequencies, which carry a column's shape, are still noise.
#: (A kept one is not: a spiky column, such as a money column's zeros, nearly reaches the
#: signal bound and keeps its fine shape at ratios below ``max_noise_ratio``.)
NARROWED_RATIO = 1.0


def _fourier_part(fmap):
    """The Fourier-series marginal map inside ``fmap`` (a 'one_way' map's numeric part)."""
    return fmap.numeric if isinstance(fmap, OneWayMap) else fmap


def coarser_length(frequencies):
    """A length scale whose ``default_frequencies`` is at most ``frequencies`` (>= 1): the
    finest such length rounded up to three significant digits, so that every rebuild of the map
    from its length alone gets the same frequency count."""
    length = math.sqrt(2 * math.log(1e4)) / (math.pi * frequencies)
    digits = 10.0 ** (math.floor(math.log10(length)) - 2)
    length = float(f'{math.ceil(length / digits) * digits:.3g}')
    while default_frequencies(length) > frequencies:  # rounding at the last digit
        length = float(f'{length + digits:.3g}')
    return length


def _with_length(fmap, length):
    if isinstance(fmap, OneWayMap):
        return OneWayMap(fmap.blocks, length)
    return FourierMarginalMap(fmap.blocks, length)


def _narrow_fourier(kept, group, ratio, max_ratio):
    """(terms, the map before, None) with the Fourier-series map of ``group`` at a coarser
    length: the finest whose width, at the same share and sensitivity (the norm bound is 1 at
    every length), gives noise ``NARROWED_RATIO`` (at most ``max_ratio``) x its bound, but no
    coarser than ``MAX_MARGINAL_LENGTH``; (terms, None, the ratio at that coarsest length) when
    even that is above ``max_ratio`` (or (terms, None, None) when no coarser map exists): it
    is dropped."""
    term = next(t for t in kept if t.group == group)
    fmap = term.feature_map
    series = _fourier_part(fmap)
    floor = default_frequencies(MAX_MARGINAL_LENGTH)
    if series is None or series.n_frequencies <= floor:
        return kept, None, None
    per_frequency = 2 * len(series.blocks)  # a cos and a sin per numeric column
    fixed = fmap.dim - per_frequency * series.n_frequencies
    coarsest = ratio * math.sqrt((fixed + per_frequency * floor) / fmap.dim)
    if coarsest > max_ratio:
        return kept, None, coarsest
    wanted = min(max_ratio, NARROWED_RATIO)
    frequencies = int((fmap.dim * (wanted / ratio) ** 2 - fixed) // per_frequency)
    frequencies = max(floor, min(series.n_frequencies - 1, frequencies))
    narrow = _with_length(fmap, MAX_MARGINAL_LENGTH if frequencies == floor
                          else coarser_length(frequencies))
    return [replace(t, feature_map=narrow) if t is term else t for t in kept], fmap, None


def _narrowed_fourier_reason(before, after, ratio, max_ratio, pooled):
    was, now = _fourier_part(before), _fourier_part(after)
    per = '' if pooled else ' per class'
    return (f'its {before.dim:,} features{per} would have had expected noise norm {ratio:.3g} x '
            f'the signal bound (above max_noise_ratio={max_ratio:g}); narrowed to the coarser '
            f'length {now.length_scale:g} (from {was.length_scale:g}; towards a ratio of '
            f'{NARROWED_RATIO:g}, at most length {MAX_MARGINAL_LENGTH:g}): '
            f'{now.n_frequencies} of {was.n_frequencies} Fourier frequencies per numeric '
            f'column, {after.dim:,} features{per}, the same budget share')


def _selectable_pairs_kept(kept):
    """Whether the 'pairs' map still holds every pair of its categorical columns: the selected
    pairs are chosen among those."""
    k = pairs_index(kept)
    if k is None:
        return False
    fmap = kept[k].feature_map
    names = selectable(kept)
    return len(names) < 2 or fmap.n_pairs == len(fmap.blocks) * (len(fmap.blocks) - 1) // 2 or \
        {tuple(sorted(p)) for p in fmap.pair_names()} >= {
            tuple(sorted((a, b))) for i, a in enumerate(names) for b in names[i + 1:]}


def _narrowed_pairs_reason(before, after, ratio, max_ratio):
    what = []
    if after.n_frequencies < before.n_frequencies:
        what.append(f'{after.n_frequencies} of {before.n_frequencies} Fourier frequencies per '
                    'numeric column')
    if after.n_pairs < before.n_pairs:
        what.append(f'{after.n_pairs} of its {before.n_pairs} pairs (those with the fewest '
                    f'cells, over {len(after.blocks)} columns)')
    return (f'its {before.dim:,} features per class would have had expected noise norm '
            f'{ratio:.3g} x the signal bound (above max_noise_ratio={max_ratio:g}); narrowed to '
            f'{" and ".join(what)}: {after.dim:,} features per class, the same budget share')


def _entries(planned, kept, numbers, gone, max_ratio, core, coarsest=None):
    counts = {}
    for term in kept:
        counts[term.group] = counts.get(term.group, 0) + 1
    entries = []
    for group in [*planned, *(g for g in numbers if g not in planned)]:
        if group in numbers:
            dim, sens, sigma, noise, bound = numbers[group]
        else:
            dim, sens, sigma, noise, bound = gone[group][1]
        ratio = noise / bound
        made = 1 if group in (SELECTED, 'class_proportions') and group in numbers \
            else counts.get(group, 0)
        if group not in numbers:
            decision = 'dropped'
            reason = (f'expected noise norm {gone[group][2]:.3g} x its signal bound, above '
                      f'max_noise_ratio={max_ratio:g}; its budget share went to the kept terms')
            if group in (coarsest or {}):
                reason = reason.replace('; its', (
                    f', and {coarsest[group]:.3g} x at the coarsest length '
                    f'{MAX_MARGINAL_LENGTH:g} ({default_frequencies(MAX_MARGINAL_LENGTH)} '
                    'frequencies per numeric column); its'), 1)
            if gone[group][0] == 'with pairs':
                reason = ("chosen on the 'pairs' release, which was dropped" if 'pairs' not in
                          numbers else "chosen among the categorical pairs of the 'pairs' "
                          'release, which was narrowed to fewer pairs')
        elif group in gone and gone[group][3] is not None:
            decision = 'narrowed'
            after = next(t.feature_map for t in kept if t.group == group)
            pooled = any(t.pooled for t in kept if t.group == group)
            if isinstance(after, (FourierMarginalMap, OneWayMap)):
                reason = _narrowed_fourier_reason(gone[group][3], after, gone[group][2],
                                                  max_ratio, pooled)
            elif isinstance(after, SumKernelMap):
                reason = (f'order {gone[group][3].order} would have had expected noise norm '
                          f'{gone[group][2]:.3g} x the signal bound (above 1); Hermite order '
                          f'{after.order} (at least {MIN_CORE_ORDER}), the same budget share')
            else:
                reason = _narrowed_pairs_reason(gone[group][3], after, gone[group][2],
                                                max_ratio)
        elif made < planned.get(group, made):
            decision = 'narrowed'
            reason = (f'{planned[group]} redraws would have had expected noise norm '
                      f'{gone[group][2]:.3g} x the signal bound (above max_noise_ratio='
                      f'{max_ratio:g}); {made} redraws share the same budget')
        else:
            decision = 'kept'
            if group in (core, 'class_proportions'):
                reason = 'always released (the method needs it)'
            elif max_ratio is None:
                reason = "plan='fixed': every term the options ask for"
            else:
                reason = f'expected noise norm at most max_noise_ratio={max_ratio:g} x the bound'
        entries.append(PlanEntry(group, decision, made, planned.get(group, made), dim, sens,
                                 sigma, noise, bound, ratio, reason))
    return entries


def note_class_shares(entries, release_std, combined_std, count):
    """Say in the 'class_proportions' entry how the class shares were estimated (public
    numbers: noise stds from sigma, sensitivity, n and widths). No-op without that entry."""
    entry = next((e for e in entries if e.group == 'class_proportions'), None)
    if entry is None or release_std is None:
        return
    entry.reason = (
        f'always released (the method needs it); the class shares used are this release '
        f'combined by inverse variance with {count - 1} per-class totals of one-hot blocks in '
        'the class-conditional releases (post-processing): noise std per share '
        f'{combined_std:.3g} instead of {release_std:.3g}; a class whose share comes out <= 0 '
        'keeps its mean given a share >= 0 (of the order of that std)')

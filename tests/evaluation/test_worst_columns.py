"""Per-column shapes and per-pair trends, worst named, and a PNG of the worst marginals."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sdv_dpkme.evaluation import (
    plot_worst_columns,
    quality_details,
    quality_scores,
    quality_summary,
)


@pytest.fixture(scope='module')
def damaged():
    """student_placements (sdmetrics demo) and a copy with one numeric and one categorical
    column destroyed: those two must come out worst."""
    import sdmetrics

    folder = Path(sdmetrics.__file__).parent / 'demos' / 'single_table'
    real = pd.read_csv(folder / 'student_placements_real.csv')
    metadata = json.loads((folder / 'metadata.json').read_text())
    synthetic = real.copy()
    synthetic['salary'] = real['salary'].max() * 3  # far outside the real distribution
    synthetic['gender'] = 'F'
    return real, synthetic, metadata


def test_details_are_worst_first_and_name_the_damaged_columns(damaged):
    real, synthetic, metadata = damaged
    scores = quality_scores(real, synthetic, metadata)
    shapes, pairs = scores['column_shape_details'], scores['pair_trend_details']
    assert set(shapes.head(2)['Column']) == {'salary', 'gender'}
    assert shapes['Score'].dropna().is_monotonic_increasing
    assert pairs['Score'].dropna().is_monotonic_increasing
    assert shapes['Score'].isna().sum() == 0 or shapes['Score'].tail(1).isna().all()
    # the same tables as quality_details of the report itself
    again, _ = quality_details(scores['quality_report'])
    pd.testing.assert_frame_equal(shapes, again)
    text = quality_summary(scores, worst=2)
    first = text.splitlines()[1]
    assert 'salary' in first and 'gender' in first
    assert f"{scores['quality']:.3f}" in text and 'worst pairs' in text


def test_png_of_the_worst_columns(damaged, tmp_path):
    pytest.importorskip('matplotlib')
    real, synthetic, metadata = damaged
    scores = quality_scores(real, synthetic, metadata)
    path = tmp_path / 'sub' / 'worst.png'
    drawn = plot_worst_columns(real, synthetic, metadata, scores, path, worst=3,
                               bounds={'salary': (0, 1_000_000)})
    assert drawn[:2] == list(scores['column_shape_details']['Column'][:2])
    assert len(drawn) == 3
    data = path.read_bytes()
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    from matplotlib.image import imread

    image = imread(path)
    assert image.shape[0] > 400 and image.shape[1] > 800  # two rows of two panels
    assert np.ptp(image[..., :3]) > 0.5  # something was drawn

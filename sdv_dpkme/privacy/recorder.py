"""A context-local recorder of Gaussian releases, for the empirical privacy audit only.

Off by default: ``GaussianMechanism.release`` reads one ``ContextVar`` and does nothing else.
Inside ``recording()`` every release also stores its clean statistic, its noisy output and its
noise std, so the audit (``privacy.audit``) can score a canary white-box. The clean statistics
are those of a PUBLIC stand-in table: the audit never runs on private rows. The recorder is never
pickled and never reaches a synthesizer.
"""

import contextlib
import contextvars
from dataclasses import dataclass, field

import numpy as np
import torch

_ACTIVE = contextvars.ContextVar('sdv_dpkme_release_recorder', default=None)


class ReleasesRecorded(BaseException):
    """Raised by the recorder after its ``stop_after``-th release to end a fit early (its
    generator training is not needed for a white-box trial). A BaseException, so that no
    ``except Exception`` on the fit path swallows it."""


@dataclass
class RecordedRelease:
    name: str
    clean: np.ndarray
    noisy: np.ndarray
    std: float
    details: dict = field(default_factory=dict)

    def key(self):
        """What must match for two fits' releases to be compared: public facts only."""
        return (self.name, self.clean.shape, repr(sorted(self.details.items())))


class ReleaseRecorder:
    def __init__(self, stop_after=None, stop_when_done=False):
        self.stop_after = stop_after
        self.stop_when_done = stop_when_done
        self.releases = []

    def add(self, name, clean, noisy, std, details):
        self.releases.append(RecordedRelease(
            name, _array(clean), _array(noisy), float(std), dict(details or {})))
        if self.stop_after is not None and len(self.releases) >= self.stop_after:
            raise ReleasesRecorded()

    def __getstate__(self):
        raise TypeError('the audit recorder must never be saved')


def _array(value):
    return torch.as_tensor(value).detach().cpu().numpy().astype(np.float64, copy=True)


def active_recorder():
    return _ACTIVE.get()


def releases_done():
    """Called by an engine once its recorded releases are made and only training is left:
    inside ``recording(stop_when_done=True)`` the fit ends here; otherwise a no-op."""
    recorder = _ACTIVE.get()
    if recorder is not None and recorder.stop_when_done:
        raise ReleasesRecorded()


@contextlib.contextmanager
def recording(stop_after=None, stop_when_done=False):
    """Record every Gaussian release made in this context; with ``stop_after`` the fit is
    ended (``ReleasesRecorded``, caught here) once that many releases are recorded, with
    ``stop_when_done`` when its engine calls ``releases_done``."""
    recorder = ReleaseRecorder(stop_after, stop_when_done)
    token = _ACTIVE.set(recorder)
    try:
        yield recorder
    except ReleasesRecorded:
        pass
    finally:
        _ACTIVE.reset(token)

"""Mechanisms, accountant and privacy report."""

from sdv_dpkme.privacy.accountant import BudgetExceededError, PrivacyAccountant, validate_budget
from sdv_dpkme.privacy.ledger import Ledger
from sdv_dpkme.privacy.mechanisms import GaussianMechanism, NoiseSource, NotPrivateWarning
from sdv_dpkme.privacy.report import DeltaReservation, PrivacyReport, Release
from sdv_dpkme.privacy.subsampled import (
    SAMPLING_POISSON,
    SAMPLING_WOR,
    PoissonSubsampledGaussianMechanism,
    SubsampledGaussianMechanism,
)

__all__ = [
    'BudgetExceededError',
    'DeltaReservation',
    'GaussianMechanism',
    'Ledger',
    'NoiseSource',
    'NotPrivateWarning',
    'PoissonSubsampledGaussianMechanism',
    'PrivacyAccountant',
    'PrivacyReport',
    'Release',
    'SAMPLING_POISSON',
    'SAMPLING_WOR',
    'SubsampledGaussianMechanism',
    'validate_budget',
]

"""Mechanisms, accountant and privacy report."""

from sdv_dpkme.privacy.accountant import BudgetExceededError, PrivacyAccountant, validate_budget
from sdv_dpkme.privacy.ledger import Ledger
from sdv_dpkme.privacy.mechanisms import GaussianMechanism, NoiseSource, NotPrivateWarning
from sdv_dpkme.privacy.report import DeltaReservation, PrivacyReport, Release
from sdv_dpkme.privacy.subsampled import SubsampledGaussianMechanism

__all__ = [
    'BudgetExceededError',
    'DeltaReservation',
    'GaussianMechanism',
    'Ledger',
    'NoiseSource',
    'NotPrivateWarning',
    'PrivacyAccountant',
    'PrivacyReport',
    'Release',
    'SubsampledGaussianMechanism',
    'validate_budget',
]

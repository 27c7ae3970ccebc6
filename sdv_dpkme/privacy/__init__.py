"""Mechanisms, accountant and privacy report."""

from sdv_dpkme.privacy.accountant import BudgetExceededError, PrivacyAccountant, validate_budget
from sdv_dpkme.privacy.mechanisms import GaussianMechanism, NoiseSource
from sdv_dpkme.privacy.report import PrivacyReport, Release

__all__ = [
    'BudgetExceededError',
    'GaussianMechanism',
    'NoiseSource',
    'PrivacyAccountant',
    'PrivacyReport',
    'Release',
    'validate_budget',
]

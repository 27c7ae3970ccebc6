"""SDV's entry points that read private rows, with errors that quote no private value.

``BaseDPSynthesizer`` decorates its own ``fit`` and ``validate``; this mixin wraps the two that
it inherits from SDV unchanged. See ``sdv_dpkme.privacy.diagnostics``.
"""

from sdv_dpkme.privacy.diagnostics import sanitised_errors


class SanitisedEntryPoints:
    """Mixin before SDV's synthesizer class: ``preprocess`` and ``fit_processed_data``."""

    @sanitised_errors
    def preprocess(self, data):
        return super().preprocess(data)

    @sanitised_errors
    def fit_processed_data(self, processed_data):
        return super().fit_processed_data(processed_data)

"""The error type engines raise for a user's argument (the SDV side re-raises it as SDV's), and
the warnings they give about a fitted model."""


class EngineInputError(ValueError):
    """A method argument the engine cannot use; the message says what to change."""


class CollapsedGeneratorWarning(UserWarning):
    """The trained generator gives (near) identical rows for some class: a failed fit."""


class NoiseDominatedWarning(UserWarning):
    """Before any spend: at this n and epsilon the method's own release expects noise of a larger
    norm than its signal can have; the fitted model will follow the data only roughly."""

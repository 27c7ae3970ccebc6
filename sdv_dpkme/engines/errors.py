"""The one error type engines raise for a user's argument (the SDV side re-raises it as SDV's)."""


class EngineInputError(ValueError):
    """A method argument the engine cannot use; the message says what to change."""

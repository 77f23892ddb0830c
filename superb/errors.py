"""Exception types. Every message names the key, column or file at fault and says how to fix it."""


class SuperbError(Exception):
    """Base class of all errors raised on bad input or failed resources."""


class SpecError(SuperbError, ValueError):
    """An experiment spec is wrong: unknown key, wrong type, bad value. The message carries the key path."""

    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class DataError(SuperbError):
    """A data file is missing, corrupt, or has the wrong columns. The message names the file and how to get it."""


class LLMError(SuperbError):
    """An LLM call failed after its retries, or the endpoint/model could not be set up."""


class MissingDependencyError(SuperbError, ImportError):
    """An optional backend is not installed; the message carries the pip command."""

    def __init__(self, what: str, pip_command: str):
        super().__init__(f"{what} is not installed. Install it with: {pip_command}")

"""Ember's errors in Python: the extension raises the class of a Status's code
(python/src/module.cpp) with Status::to_string() as the message."""


class EmberError(RuntimeError):
    """An error Ember reported."""


class InvalidArgument(EmberError, ValueError):
    """An argument, input, shape or dtype Ember cannot take."""


class InvalidGraph(EmberError):
    """A malformed or inconsistent model."""


class NoSuchFile(EmberError, FileNotFoundError):
    """A file that is missing or cannot be read."""


class NotImplemented(EmberError, NotImplementedError):  # noqa: A001 - onnxruntime's name
    """Something valid that Ember does not support (an operator, a dtype, an option)."""

"""Deprecated alias of :mod:`amqp_codec.inspect.dissector`, kept for one release.

Import :class:`~amqp_codec.inspect.StreamDissector` and its events from
:mod:`amqp_codec.inspect` instead.
"""

import warnings

from ..inspect.dissector import *  # noqa: F403 (the whole module, under its old name)
from ..inspect.dissector import __all__ as __all__

warnings.warn(
    "amqp_codec.dissect is deprecated and will be removed in the next release: "
    "import StreamDissector and its events from amqp_codec.inspect",
    DeprecationWarning,
    stacklevel=2,
)

"""Deprecated alias of the decode command's output modules, kept for one release.

:class:`HumanReporter` is in :mod:`amqp_codec.inspect.text`, :class:`JsonReporter` in
:mod:`amqp_codec.inspect.jsonlines`, :class:`Reporter` and :func:`display_name` in
:mod:`amqp_codec.inspect.reporter`, :func:`draft_flag_names` and :func:`json_struct` in
:mod:`amqp_codec.inspect.values`.
"""

import warnings

from ..inspect.jsonlines import JsonReporter
from ..inspect.reporter import Reporter, display_name
from ..inspect.text import HumanReporter
from ..inspect.values import draft_flag_names, json_struct

__all__ = [
    "HumanReporter",
    "JsonReporter",
    "Reporter",
    "display_name",
    "draft_flag_names",
    "json_struct",
]

warnings.warn(
    "amqp_codec.report is deprecated and will be removed in the next release: import "
    "HumanReporter from amqp_codec.inspect.text, JsonReporter from amqp_codec.inspect.jsonlines",
    DeprecationWarning,
    stacklevel=2,
)

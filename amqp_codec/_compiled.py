"""What the optional compiled build (``AMQP_CODEC_COMPILE=1``, see ``build_backend/``) needs
from the source, and whether it is the one running.

The hot modules listed in :data:`COMPILED_MODULES` are plain Python that mypyc can also
compile to C extensions. Their value classes stay ordinary Python classes either way (marked
``@mypyc_attr(native_class=False)``), so that ``__class__`` assignment, pickling and
frozen-dataclass behaviour are the same in both builds; only functions and methods are
compiled. :class:`~amqp_codec.decoder.FrameDecoder` is the exception: compiled, it is a
native class (its attribute reads are the hot path) that still allows Python subclasses,
whose overrides are called; what it does not allow is patching methods on an instance or
adding attributes it does not define.

This module itself is never compiled: it is where ``mypyc_attr`` is a no-op at run time, so
the codec needs nothing but the standard library.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["COMPILED_MODULES", "compiled_modules", "mypyc_attr"]

#: The modules the compiled build turns into C extensions (paths from the repository root
#: are these with dots as slashes and ``.py``).
COMPILED_MODULES = (
    "amqp_codec.decoder",
    "amqp_codec._table_decode",
    "amqp_codec.v0_8.decoders",
    "amqp_codec.v0_9_1.decoders",
    "amqp_codec.v0_10_draft.decoders",
)

if TYPE_CHECKING:
    from mypy_extensions import mypyc_attr as mypyc_attr
else:

    def mypyc_attr(*_args: Any, **_kwargs: Any) -> Any:
        """The compiler reads this decorator; at run time it leaves the class as it is."""
        return lambda cls: cls


def compiled_modules() -> list[str]:
    """Which of :data:`COMPILED_MODULES` are loaded from compiled extensions."""
    loaded = []
    for name in COMPILED_MODULES:
        module = importlib.import_module(name)
        if not (module.__file__ or "").endswith(".py"):
            loaded.append(name)
    return loaded

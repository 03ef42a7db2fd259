"""``python -m amqp_codec``: the ``amqp-codec`` command line (see :mod:`amqp_codec.cli`)."""

from .cli import main

raise SystemExit(main())

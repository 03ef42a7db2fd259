"""Generate typed, sans-IO AMQP codec packages from the protocol's spec XML.

``python -m codegen`` regenerates the packages listed in :data:`codegen.__main__.TARGETS`;
``--spec/--overlay/--out`` generate one package from your own XML.
"""

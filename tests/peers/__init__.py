"""Adapters that drive other AMQP libraries (pika, pamqp) as differential-testing peers.

Each adapter module exposes the same small interface (registry, build, encode, decode,
normalise) so ``tests/test_differential.py`` can treat the peers alike.
"""

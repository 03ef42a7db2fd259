"""Side-by-side codec benchmark: amqp-codec vs pamqp, pika and py-amqp.

Run with ``python -m benchmarks`` (``--quick`` for a smoke run, ``--json FILE`` to save the
results, ``--profile`` to cProfile our side of every workload below its target;
``--compare FILE`` to print the ratios against a saved result).

Modules:

* :mod:`benchmarks.fixtures` -- the inputs: one canonical set of values and wire bytes that
  every library works on (built with amqp-codec, cross-checked against every peer).
* :mod:`benchmarks.peers` -- one adapter per library: the code that is timed for each
  workload (each library's fastest honest public path) and how its results are normalised
  for the correctness check.
* :mod:`benchmarks.workloads` -- the workloads, the verification run before any timing.
* :mod:`benchmarks.timing` -- timeit-based measurement (median of repeats, round-robin).
* :mod:`benchmarks.report` -- the results table and the JSON file.
* :mod:`benchmarks.profiling` -- cProfile of our side of the slow workloads.
* :mod:`benchmarks.pipeline` -- the capture-analysis job on a generated 1 GB capture set,
  against tshark, with 1 and 2 local cores (``python -m benchmarks.pipeline``).
"""

TARGET_RATIO = 2.5
"""Our goal: at least this many times the ops/s of the fastest peer on every workload."""
LARGE_MESSAGE_TARGET_RATIO = 2.0
"""The goal for the 1 MiB message, where copying the body costs every library alike."""
COMPILED_DECODE_TARGET_RATIO = 5.0
"""The goal of the compiled build (``AMQP_CODEC_COMPILE=1``) on the decode workloads."""

"""The Alibaba GPU-sharing trace benchmark (FGD, ATC '23): ``python -m benchmarks.alibaba``.

``trace`` (the typical-task mix), ``state`` (the array picture of the cluster and F per state),
``policies`` (the simulator's policies and Volcano's default scores), ``batches`` (a batch of
arrivals as a vcopt instance) and ``replay`` (running a sequence and reading it out). The trace
files and arrival sequences come from :mod:`optimizer.trace_import`, which ``vcopt import
alibaba`` uses too.
"""

"""CPU-only worker code: the `ukernel-calls` rewrite (cblas sgemm) and `lh-math-approx`."""

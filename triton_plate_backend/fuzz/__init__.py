"""Differential fuzzing of plate against Triton's interpreter (`plate fuzz`).

`generator` writes random, valid Triton kernels as source text with their inputs, `runner` runs
each on plate and under the interpreter, `compare` decides per output whether the two agree
(bit-exact where Triton defines the result, bounded where it does not, or explained by a named
rule), `report` writes the summary and a standalone reproducer for every mismatch."""

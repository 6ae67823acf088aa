// Translation unit that only exists to build the shared torch precompiled
// header (spmd_torch_pch) that tests and benchmarks reuse.

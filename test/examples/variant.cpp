// variant.cpp - names the variant an in-process example test executable was
// linked with: "example", "local" (tensor_parallel_local.cpp) or the name of
// a bug of examples/bugs
// (test/examples/CMakeLists.txt compiles it once per variant).
#ifndef SPMD_EXAMPLE_VARIANT
#error "compile with -DSPMD_EXAMPLE_VARIANT=\"<variant>\""
#endif

const char* spmd_example_variant() { return SPMD_EXAMPLE_VARIANT; }

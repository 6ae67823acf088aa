# Settings shared by examples/ and test/examples (the top level adds test/
# before examples/, so both include this file instead of passing variables).

# The bug variants of examples/bugs: each replaces one translation unit of
# examples/tp_transformer_block (the tp block or the optimizer step).
set(SPMD_EXAMPLE_BLOCK_BUGS
    missing_copy_to_tp all_reduce_to_replicate gelu_before_reduce)
set(SPMD_EXAMPLE_OPTIMIZER_BUGS forgot_dp_grad_allreduce)
set(SPMD_EXAMPLE_BUGS ${SPMD_EXAMPLE_BLOCK_BUGS} ${SPMD_EXAMPLE_OPTIMIZER_BUGS})

# Whether the examples are compiled with the spmd-check plugin: it needs the
# plugin target and a Clang 19 compiler (a plugin loads only into the Clang
# major it was built for).
set(SPMD_EXAMPLES_CHECKED OFF)
if(TARGET spmd-check)
  get_target_property(_spmd_check_type spmd-check TYPE)
  if(_spmd_check_type MATCHES "MODULE_LIBRARY|SHARED_LIBRARY"
     AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang"
     AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 19
     AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 20)
    set(SPMD_EXAMPLES_CHECKED ON)
  endif()
endif()

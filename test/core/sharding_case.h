// sharding_case.h - the table row and check shared by the sharding
// propagation tests (sharding_propagation_test.cpp, attention_shapes_test.cpp):
// an op on global operands and either the GlobalType it gives or the error
// kind and the phrases its message must contain.
#ifndef SPMD_TEST_CORE_SHARDING_CASE_H
#define SPMD_TEST_CORE_SHARDING_CASE_H

#include <string>
#include <vector>

#include "global_test_util.h"

namespace spmd::core::testing {

/// One row of a sharding propagation table.
struct ShardingCase {
  const char* id;
  const char* op;
  std::vector<GlobalOperand> operands;
  ShardingArgs args;
  const char* expected;  // GlobalType text, nullptr for an error
  std::vector<std::string> phrases;
  ErrorKind kind = ErrorKind::SpmdTypeError;
};

/// Runs infer_global on the row and checks its result or its error.
inline void CheckSharding(const ShardingCase& c) {
  auto r = infer_global(c.op, c.operands, c.args);
  Result<GlobalType> t =
      r.ok() ? Result<GlobalType>(r->type) : Result<GlobalType>(r.error());
  if (c.expected) {
    EXPECT_TRUE(GivesGlobal(t, c.expected)) << c.id;
  } else {
    EXPECT_TRUE(FailsWith(t, c.kind, c.phrases)) << c.id;
  }
}

/// The test name of a row: its id as an identifier.
inline std::string ShardingCaseName(
    const ::testing::TestParamInfo<ShardingCase>& i) {
  return Ident(i.param.id);
}

}  // namespace spmd::core::testing

#endif  // SPMD_TEST_CORE_SHARDING_CASE_H

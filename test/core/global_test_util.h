// global_test_util.h - shorthands for the global SPMD core tests.
//
// Operands are written as the cases file writes them: a map with S(i) sugar
// and a local shape, e.g. G("{tp: S(0)}", {4, 3}). Expectations are the
// spec's and the cases file's, never the implementation's output.
#ifndef SPMD_TEST_CORE_GLOBAL_TEST_UTIL_H
#define SPMD_TEST_CORE_GLOBAL_TEST_UTIL_H

#include "core_test_util.h"

namespace spmd::core::testing {

/// A global type from the S(i) sugar and a shape (a parse or build failure
/// is a test failure).
inline GlobalType GT(std::string_view map, const Shape& shape,
                     std::optional<std::string_view> spec = std::nullopt) {
  auto entries = TensorType::parse_entries(map);
  EXPECT_TRUE(entries.ok()) << map;
  std::optional<PartitionSpec> ps;
  if (spec) {
    auto p = PartitionSpec::parse(*spec);
    EXPECT_TRUE(p.ok()) << *spec;
    if (p.ok()) ps = *p;
  }
  auto g =
      make_global(entries.ok() ? *entries : decltype(*entries){}, ps, shape);
  EXPECT_TRUE(g.ok()) << map << ": " << (g.ok() ? "" : g.error().message);
  return g.ok() ? *g : GlobalType{};
}

/// A tensor operand with a known local shape.
inline GlobalOperand G(std::string_view map, std::vector<long> shape,
                       std::optional<std::string_view> spec = std::nullopt) {
  Shape s = Shape::of(shape);
  return GlobalOperand::tensor(GT(map, s, spec), s);
}

/// A tensor operand whose rank is unknown (static front end).
inline GlobalOperand GUnknownRank(std::string_view map) {
  return GlobalOperand::tensor(GT(map, Shape::unknown()), Shape::unknown());
}

/// ShardingArgs with dims.
inline ShardingArgs Dims(std::vector<long> dims, bool keepdim = false) {
  ShardingArgs a;
  a.dims = std::move(dims);
  a.has_dims = true;
  a.keepdim = keepdim;
  return a;
}
inline ShardingArgs Sizes(std::vector<long> sizes) {
  ShardingArgs a;
  for (long s : sizes) a.sizes.emplace_back(s);
  return a;
}
inline ShardingArgs Eq(std::string eq) {
  ShardingArgs a;
  a.equation = std::move(eq);
  return a;
}

/// Checks that `r` succeeded with the global type printed as `expected`
/// ("{tp: S(0)} PartitionSpec(tp, None)"; GlobalType::to_string form).
inline ::testing::AssertionResult GivesGlobal(const Result<GlobalType>& r,
                                              std::string_view expected) {
  if (!r.ok())
    return ::testing::AssertionFailure()
           << "expected " << expected << ", got " << to_string(r.error().kind)
           << ": " << r.error().full_message();
  if (r.value().to_string() == expected) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected " << expected << ", got " << r.value().to_string();
}

}  // namespace spmd::core::testing

#endif  // SPMD_TEST_CORE_GLOBAL_TEST_UTIL_H

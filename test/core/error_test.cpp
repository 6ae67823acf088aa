// Error kinds (spec §9.1) and the TypeError / Result value types.
#include "core_test_util.h"

namespace spmd::core::testing {
namespace {

TEST(ErrorKind, PrintsSpecNames) {
  const std::pair<ErrorKind, const char*> rows[] = {
      {ErrorKind::SpmdTypeError, "SpmdTypeError"},
      {ErrorKind::InvalidArgument, "InvalidArgument"},
      {ErrorKind::UsageError, "UsageError"},
      {ErrorKind::MeshResolutionError, "MeshResolutionError"},
      {ErrorKind::ShapeError, "ShapeError"},
      {ErrorKind::NotImplemented, "NotImplemented"},
      {ErrorKind::ParseError, "ParseError"},
  };
  for (const auto& [kind, name] : rows) EXPECT_STREQ(to_string(kind), name);
}

TEST(TypeError, FullMessageAppendsFixOnlyWhenKnown) {
  TypeError e;
  e.message = "base";
  EXPECT_EQ(e.full_message(), "base");
  e.fix = "do this";
  std::string full = e.full_message();
  EXPECT_EQ(full.rfind("base", 0), 0u) << full;
  EXPECT_TRUE(Contains(full, "\n"));
  EXPECT_TRUE(Contains(full, "do this"));
}

TEST(TypeError, FullMessageRendersNotesOnTheirOwnLines) {
  TypeError e;
  e.message = "base";
  e.fix = "do this";
  e.notes = {"first", "second"};
  EXPECT_EQ(e.full_message(), "base\ndo this\n  first\n  second");
}

TEST(Result, HoldsValueOrError) {
  Result<int> ok = 3;
  EXPECT_TRUE(ok.ok());
  EXPECT_TRUE(static_cast<bool>(ok));
  EXPECT_EQ(ok.value(), 3);
  TypeError e;
  e.kind = ErrorKind::ShapeError;
  Result<int> bad = e;
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::ShapeError);
}

// §6.4: inference errors list the operand types as given, in operand order.
TEST(InferenceMessages, ListTypesInOperandOrder) {
  Result<PerAxisType> ir = infer_axis({AxisOperand::of(I), AxisOperand::of(R)},
                                      OpClass::Nonlinear, "tp");
  Result<PerAxisType> ri = infer_axis({AxisOperand::of(R), AxisOperand::of(I)},
                                      OpClass::Nonlinear, "tp");
  ASSERT_FALSE(ir.ok());
  ASSERT_FALSE(ri.ok());
  EXPECT_TRUE(Contains(ir.error().message, "[I, R]"));
  EXPECT_TRUE(Contains(ri.error().message, "[R, I]"));
  EXPECT_EQ(ir.error().axis, "tp");
}

}  // namespace
}  // namespace spmd::core::testing

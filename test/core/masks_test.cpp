// 0/1 masks and zero fills (core/include/spmd/core/masks.h): which ops make
// a mask, which keep one, and which ops zero the elements of an operand.
#include <gtest/gtest.h>
#include <spmd/core/masks.h>

namespace spmd::core {
namespace {

const MaskOperand kPlain = MaskOperand::of_tensor(MaskKind::None);
const MaskOperand kBool = MaskOperand::of_tensor(MaskKind::Bool);
const MaskOperand kZeroOne = MaskOperand::of_tensor(MaskKind::ZeroOne);
MaskOperand num(double v) { return MaskOperand::of_scalar(v); }
const MaskOperand kUnknownNumber = MaskOperand::of_scalar(std::nullopt);

TEST(Masks, ComparisonsAndLogicalOpsAreBool) {
  for (const char* op : {"lt", "operator<", "operator>=", "__ge__", "at::eq",
                         ".ne", "isnan", "logical_not", "logical_or"})
    EXPECT_EQ(mask_result(op, {kPlain, kUnknownNumber}), MaskKind::Bool) << op;
}

TEST(Masks, BitwiseOpsOfMasks) {
  EXPECT_EQ(mask_result("operator|", {kBool, kBool}), MaskKind::Bool);
  EXPECT_EQ(mask_result("__and__", {kBool, kZeroOne}), MaskKind::ZeroOne);
  // An operand that is not a mask: the bits of any integer.
  EXPECT_EQ(mask_result("operator|", {kBool, kPlain}), MaskKind::None);
  EXPECT_EQ(mask_result("operator|", {kBool, num(2)}), MaskKind::None);
  EXPECT_EQ(mask_result("operator~", {kBool}), MaskKind::Bool);
  // ~ of an integer 0/1 tensor is -1/-2.
  EXPECT_EQ(mask_result("operator~", {kZeroOne}), MaskKind::None);
  EXPECT_EQ(mask_result("operator~", {kPlain}), MaskKind::None);
}

TEST(Masks, ConversionsKeepZeroOne) {
  EXPECT_EQ(mask_result(".to", {kBool, kUnknownNumber}), MaskKind::ZeroOne);
  EXPECT_EQ(mask_result("at::Tensor::type_as", {kBool, kPlain}),
            MaskKind::ZeroOne);
  EXPECT_EQ(mask_result(".to", {kPlain, kUnknownNumber}), MaskKind::None);
}

TEST(Masks, MovingElementsKeepsTheKind) {
  EXPECT_EQ(mask_result(".unsqueeze", {kBool, num(-1)}), MaskKind::Bool);
  EXPECT_EQ(mask_result("expand_as", {kZeroOne, kPlain}), MaskKind::ZeroOne);
  EXPECT_EQ(mask_result(".view", {kPlain}), MaskKind::None);
}

TEST(Masks, ArithmeticOnMasks) {
  EXPECT_EQ(mask_result("operator*", {kZeroOne, kBool}), MaskKind::ZeroOne);
  EXPECT_EQ(mask_result("operator*", {kZeroOne, num(2)}), MaskKind::None);
  EXPECT_EQ(mask_result("operator*", {kZeroOne, kPlain}), MaskKind::None);
  EXPECT_EQ(mask_result("operator-", {num(1), kZeroOne}), MaskKind::ZeroOne);
  EXPECT_EQ(mask_result("operator-", {num(2), kZeroOne}), MaskKind::None);
  EXPECT_EQ(mask_result("operator-", {kZeroOne, num(1)}), MaskKind::None);
  EXPECT_EQ(mask_result("__rsub__", {kZeroOne, num(1)}), MaskKind::ZeroOne);
  EXPECT_EQ(mask_result("operator+", {kZeroOne, kZeroOne}), MaskKind::None);
}

TEST(Masks, WhereAndMaskedFill) {
  EXPECT_EQ(mask_result("where", {kBool, num(0), num(1)}), MaskKind::ZeroOne);
  EXPECT_EQ(mask_result("where", {kPlain, kBool, num(0)}), MaskKind::ZeroOne);
  EXPECT_EQ(mask_result("where", {kBool, num(0), num(2)}), MaskKind::None);
  EXPECT_EQ(mask_result("where", {kBool, kPlain, num(0)}), MaskKind::None);
  EXPECT_EQ(mask_result("masked_fill", {kBool, kBool, num(0)}), MaskKind::Bool);
  EXPECT_EQ(mask_result("masked_fill", {kPlain, kBool, num(0)}),
            MaskKind::None);
}

TEST(Masks, OtherOpsAreNotMasks) {
  EXPECT_EQ(mask_result("relu", {kBool}), MaskKind::None);
  EXPECT_EQ(mask_result("sum", {kBool}), MaskKind::None);
  EXPECT_EQ(mask_result("embedding", {kPlain, kBool}), MaskKind::None);
}

TEST(ZeroFills, MaskedFillWithZero) {
  EXPECT_TRUE(zero_fills(".masked_fill", {kPlain, kBool, num(0)}, 0));
  EXPECT_TRUE(zero_fills("masked_fill_", {kPlain, kPlain, num(0.0)}, 0));
  EXPECT_FALSE(zero_fills(".masked_fill", {kPlain, kBool, num(1)}, 0));
  EXPECT_FALSE(zero_fills(".masked_fill", {kPlain, kBool, kUnknownNumber}, 0));
  // The mask is not what is filled.
  EXPECT_FALSE(zero_fills(".masked_fill", {kPlain, kBool, num(0)}, 1));
}

// index_put_({mask}, 0) is masked_fill_(mask, 0); other indices or values
// zero nothing for sure.
TEST(ZeroFills, IndexPutOfZeroUnderAMask) {
  EXPECT_TRUE(zero_fills(".index_put_", {kPlain, kBool, num(0)}, 0));
  EXPECT_TRUE(zero_fills("aten::index_put_", {kPlain, kBool, num(0.0)}, 0));
  EXPECT_FALSE(zero_fills(".index_put_", {kPlain, kBool, num(1)}, 0));
  EXPECT_FALSE(zero_fills(".index_put_", {kPlain, kPlain, num(0)}, 0));
  EXPECT_FALSE(zero_fills(".index_put_", {kPlain, kBool, num(0)}, 1));
}

TEST(ZeroFills, ProductWithAMask) {
  EXPECT_TRUE(zero_fills("operator*", {kPlain, kZeroOne}, 0));
  EXPECT_TRUE(zero_fills("operator*", {kBool, kPlain}, 1));
  EXPECT_TRUE(zero_fills(".mul_", {kPlain, kBool}, 0));
  // A scale, a weight, or an unknown factor zeroes nothing for sure.
  EXPECT_FALSE(zero_fills("operator*", {kPlain, num(0.5)}, 0));
  EXPECT_FALSE(zero_fills("operator*", {kPlain, kPlain}, 0));
  EXPECT_FALSE(zero_fills("operator+", {kPlain, kZeroOne}, 0));
  EXPECT_FALSE(zero_fills("div", {kPlain, kZeroOne}, 0));
}

TEST(ZeroFills, WhereWithAZeroBranch) {
  EXPECT_TRUE(zero_fills("where", {kBool, kPlain, num(0)}, 1));
  EXPECT_TRUE(zero_fills("at::where", {kBool, num(0.0), kPlain}, 2));
  EXPECT_FALSE(zero_fills("where", {kBool, kPlain, num(1)}, 1));
  EXPECT_FALSE(zero_fills("where", {kBool, kPlain, kPlain}, 1));
  EXPECT_FALSE(zero_fills("where", {kPlain, kPlain, num(0)}, 0));
}

TEST(ZeroedRows, ArePartial) { EXPECT_EQ(zeroed_rows_type(), types::P); }

TEST(GivesValues, ShapeAndDtypeReferencesDoNot) {
  EXPECT_TRUE(gives_values(".type_as", 0));
  EXPECT_FALSE(gives_values(".type_as", 1));
  EXPECT_FALSE(gives_values("expand_as", 1));
  EXPECT_FALSE(gives_values("at::Tensor::view_as", 1));
  EXPECT_TRUE(gives_values("operator*", 1));
  EXPECT_TRUE(gives_values("where", 2));
}

}  // namespace
}  // namespace spmd::core

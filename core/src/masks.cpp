// 0/1 masks and zero fills through ordinary ops (docs/plugin.md
// "Vocab-parallel lookups").
#include <spmd/core/masks.h>
#include <spmd/core/sharding_propagation.h>

#include <algorithm>
#include <set>
#include <string>

namespace spmd::core {
namespace {

// Ops whose result is bool whatever their operands are.
const std::set<std::string, std::less<>> kBoolResult = {
    "eq",          "ne",         "lt",          "le",
    "gt",          "ge",         "greater",     "greater_equal",
    "less",        "less_equal", "not_equal",   "isnan",
    "isinf",       "isfinite",   "isneginf",    "isposinf",
    "isin",        "signbit",    "logical_and", "logical_or",
    "logical_xor", "logical_not"};

// Ops that only move, copy or select elements of operand 0: its values are
// the result's values.
const std::set<std::string, std::less<>> kMovesElements = {
    "broadcast_to", "clone",     "contiguous",
    "detach",       "expand",    "expand_as",
    "flatten",      "flip",      "index",
    "index_select", "moveaxis",  "movedim",
    "mT",           "narrow",    "permute",
    "ravel",        "repeat",    "reshape",
    "reshape_as",   "roll",      "select",
    "slice",        "squeeze",   "swapaxes",
    "swapdims",     "t",         "T",
    "tile",         "transpose", "unflatten",
    "unsqueeze",    "view",      "view_as"};

// Dtype conversions: a mask's values stay 0 and 1, in another dtype.
const std::set<std::string, std::less<>> kConversion = {
    "to",  "float", "half",    "bfloat16", "double",
    "int", "long",  "type_as", "toType",   "type"};

bool is_mask(MaskKind k) { return k != MaskKind::None; }

bool is_zero_or_one(const MaskOperand& o) {
  if (o.tensor) return is_mask(o.mask);
  return o.constant && (*o.constant == 0.0 || *o.constant == 1.0);
}

bool is_zero(const MaskOperand& o) {
  return !o.tensor && o.constant && *o.constant == 0.0;
}

// The weaker of two mask kinds (None < ZeroOne < Bool).
MaskKind meet(MaskKind a, MaskKind b) { return std::min(a, b); }

// All operands are tensors that are masks: their meet, else None.
MaskKind all_masks(const std::vector<MaskOperand>& ops) {
  if (ops.empty()) return MaskKind::None;
  MaskKind k = MaskKind::Bool;
  for (const auto& o : ops) {
    if (!o.tensor || !is_mask(o.mask)) return MaskKind::None;
    k = meet(k, o.mask);
  }
  return k;
}

}  // namespace

MaskKind mask_result(std::string_view op,
                     const std::vector<MaskOperand>& operands) {
  std::string n = canonical_op_name(op);
  if (kBoolResult.count(n)) return MaskKind::Bool;
  if (operands.empty() || !operands[0].tensor) {
    // `1 - m` (operator-(Scalar, Tensor)): 0/1 when m is.
    if (n == "sub" && operands.size() == 2 && operands[0].constant &&
        *operands[0].constant == 1.0 && operands[1].tensor &&
        is_mask(operands[1].mask))
      return MaskKind::ZeroOne;
    // `2 * m` is not a mask; `1 * m` is rare enough to ignore.
    return MaskKind::None;
  }
  const MaskOperand& self = operands[0];
  if (kMovesElements.count(n) || n == "repeat_interleave") return self.mask;
  if (!is_mask(self.mask) && n != "where" && n != "masked_fill")
    return MaskKind::None;
  if (kConversion.count(n)) return MaskKind::ZeroOne;
  if (n == "bitwise_and" || n == "bitwise_or" || n == "bitwise_xor")
    return all_masks(operands);
  if (n == "bitwise_not")
    return operands.size() == 1 && self.mask == MaskKind::Bool ? MaskKind::Bool
                                                               : MaskKind::None;
  if (n == "mul") return meet(all_masks(operands), MaskKind::ZeroOne);
  // m.__rsub__(1), at::rsub(m, 1): 1 - m.
  if ((n == "rsub" || op.find("__rsub__") != std::string_view::npos) &&
      operands.size() == 2 && !operands[1].tensor && operands[1].constant &&
      *operands[1].constant == 1.0)
    return MaskKind::ZeroOne;
  if (n == "where") {
    if (operands.size() != 3 || !is_zero_or_one(operands[1]) ||
        !is_zero_or_one(operands[2]))
      return MaskKind::None;
    return MaskKind::ZeroOne;
  }
  if (n == "masked_fill") {
    if (operands.size() != 3 || !is_mask(self.mask) ||
        !is_zero_or_one(operands[2]) || operands[2].tensor)
      return MaskKind::None;
    return self.mask;
  }
  return MaskKind::None;
}

bool zero_fills(std::string_view op, const std::vector<MaskOperand>& operands,
                std::size_t marked) {
  if (marked >= operands.size() || !operands[marked].tensor) return false;
  std::string n = canonical_op_name(op);
  if (n == "masked_fill")
    return marked == 0 && operands.size() == 3 && is_zero(operands[2]);
  // index_put_({mask}, 0): one bool mask index and a zero value is
  // masked_fill_(mask, 0).
  if (n == "index_put")
    return marked == 0 && operands.size() == 3 && operands[1].tensor &&
           is_mask(operands[1].mask) && is_zero(operands[2]);
  if (n == "mul") {
    if (operands.size() != 2) return false;
    const MaskOperand& other = operands[1 - marked];
    return other.tensor && is_mask(other.mask);
  }
  if (n == "where") {
    if (operands.size() != 3 || marked == 0) return false;
    return is_zero(operands[marked == 1 ? 2 : 1]);
  }
  return false;
}

bool gives_values(std::string_view op, std::size_t index) {
  if (index == 0) return true;
  std::string n = canonical_op_name(op);
  return !(n == "type_as" || n == "expand_as" || n == "view_as" ||
           n == "reshape_as");
}

PerAxisType zeroed_rows_type() { return types::P; }

}  // namespace spmd::core

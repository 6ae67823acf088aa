// spmd/core/masks.h - 0/1 masks and zero fills through ordinary ops.
//
// Global mode marks the rows looked up in a table sharded by rows (a
// vocab-parallel embedding) as not yet a pending sum: each rank looked up a
// row for every index, also for the indices another rank owns. They become
// the rank's term of the sum once those rows are zeroed. These rules decide
// which ops zero elements (masked_fill with 0, a product with a 0/1 mask,
// where with a 0 branch) and which values are 0/1 masks (comparisons, their
// logical combinations, conversions to another dtype), so that every front
// end (the plugin, a runtime) reads the idioms of docs/plugin.md
// "Vocab-parallel lookups" the same way.
#ifndef SPMD_CORE_MASKS_H
#define SPMD_CORE_MASKS_H

#include <spmd/core/per_axis_type.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace spmd::core {

/// What is known about the values of a tensor, as far as masking goes.
enum class MaskKind : std::uint8_t {
  None,     ///< nothing known
  ZeroOne,  ///< every element is 0 or 1 (any dtype: a converted mask)
  Bool,     ///< a bool tensor (a comparison, a logical combination)
};

/// One operand of an op, for the mask rules: a tensor with its MaskKind, or
/// a plain number with its value when it is a constant.
struct MaskOperand {
  bool tensor = true;
  MaskKind mask = MaskKind::None;
  std::optional<double> constant;  ///< a plain number's constant value

  static MaskOperand of_tensor(MaskKind k) { return {true, k, std::nullopt}; }
  static MaskOperand of_scalar(std::optional<double> c) {
    return {false, MaskKind::None, c};
  }
};

/// The MaskKind of `op`'s result (any spelling canonical_op_name accepts),
/// from its operands in call order (the receiver of a method first).
/// Bool: comparisons (`eq`, `lt`, `ge`, ..., `isnan`, `isin`, `logical_*`),
/// `&`, `|`, `^` of bool masks, `~` of a bool mask. ZeroOne: the same of
/// 0/1 masks, their products, `1 - m`, a conversion (`to`, `float`,
/// `type_as`, ...) of a mask, `where(c, a, b)` with a and b masks or the
/// constants 0 and 1, masked_fill of a mask with 0 or 1. Ops that only move
/// or copy elements (`unsqueeze`, `view`, `expand`, `transpose`, `clone`,
/// ...) keep operand 0's kind. Everything else: None. `~` of a 0/1 mask that
/// is not bool is None (`~1` is -2 for an integer tensor).
MaskKind mask_result(std::string_view op,
                     const std::vector<MaskOperand>& operands);

/// Whether `op` zeroes its operand `marked` (an index into `operands`, the
/// operands in call order) wherever some mask says so, leaving the other
/// elements as they were: `masked_fill(marked, mask, 0)`, `marked * m` (or
/// `m * marked`, `mul`, `mul_`) with `m` a 0/1 mask (MaskKind other than
/// None) and no other operand, `where(c, marked, 0)` and
/// `where(c, 0, marked)`. Which mask is not checked: the rule says that
/// elements are zeroed, not which ones.
bool zero_fills(std::string_view op, const std::vector<MaskOperand>& operands,
                std::size_t marked);

/// Whether operand `index` (in call order) of `op` gives the result its
/// values: false for the reference of `type_as`, `expand_as`, `view_as`
/// and `reshape_as` (only its shape or dtype is read), true otherwise. What
/// the rows' values are (zeroed or not) follows the operands that give
/// values only.
bool gives_values(std::string_view op, std::size_t index);

/// The type, on the axis that shards the table by rows, of looked-up rows
/// once an op zeroes them (zero_fills): P. Each rank then holds its own rows
/// and zeros elsewhere, so the sum over the axis is the whole lookup: the
/// pending sum that the embedding sharding rule gives the masked lookup
/// (DTensor's masked partial). Such a value is accepted where P is declared
/// and rejected where a shard is (an all_gather, a parameter S(i)); a
/// `reinterpret(x, V, P)` of it is a reinterpret of a P (docs/type-system.md
/// "Masked lookups are P").
PerAxisType zeroed_rows_type();

}  // namespace spmd::core

#endif  // SPMD_CORE_MASKS_H

// spmd/core/op_table.h - the one op table both front ends read.
//
// One row per op (spec §6.5 naming: the function name, e.g. "transpose"),
// with its spellings (ATen schema base names, C++ torch::/at:: functions and
// at::Tensor methods), how its integer arguments map to the structural roles
// the sharding rules read (§6.12), and its aliasing (view, in-place, out=;
// §6.11). The plugin's transfer and the runtime checker look ops up here
// instead of keeping lists of their own.
#ifndef SPMD_CORE_OP_TABLE_H
#define SPMD_CORE_OP_TABLE_H

#include <spmd/core/sharding_propagation.h>

#include <optional>
#include <string_view>
#include <vector>

namespace spmd::core {

/// What an op's result shares with its operands (spec §6.11).
enum class Aliasing {
  None,     ///< a fresh tensor
  View,     ///< the result is a view of operand 0 (shares its storage)
  InPlace,  ///< the op writes operand 0 and returns it
  Out,      ///< the op writes its `out=` argument and returns it
};
const char* to_string(Aliasing a);  ///< "none", "view", "in-place", "out"

/// How the constant integer arguments of a call (in call order, after the
/// tensors; each argument an int or an int list) map to ShardingArgs.
enum class IntArgs {
  None,             ///< no structural integer argument is read
  AllDims,          ///< every integer is a dim (transpose, permute, movedim)
  AllSizes,         ///< every integer is a size (view, reshape, expand)
  StartEndDims,     ///< flatten(start_dim, end_dim)
  DimThenSizes,     ///< unflatten(dim, sizes)
  FirstDim,         ///< the first argument is the dim (softmax, select)
  FirstDimOr0,      ///< the first argument is the dim, default 0 (cat)
  SecondDim,        ///< (shifts, dims): the second is the dims (roll)
  SecondDimOnly,    ///< (count, dim); a lone list is not read
                    ///< (repeat_interleave)
  SecondDimOr0,     ///< (count or sizes, dim = 0) (chunk, split)
  NormalizedShape,  ///< the first list is normalized_shape (layer_norm)
  Unread,           ///< the structure is not in integers (einsum, index)
};

/// One op of the table.
struct OpRow {
  std::string_view name;  ///< the spec's function name, e.g. "transpose"
  /// Other spellings of the same op: ATen schema base names that differ
  /// (e.g. "swapaxes"), C++ names (torch::/at:: functions, Tensor methods).
  std::vector<std::string_view> spellings;
  IntArgs int_args = IntArgs::None;
  Aliasing aliasing = Aliasing::None;
  /// A factory whose first integer list is the shape (zeros, randn, ...).
  bool shape_factory = false;
  /// torch requires every tensor operand to have one rank (cat, stack).
  bool same_rank_operands = false;
  /// Metadata or autograd bookkeeping: the runtime passes it through untyped
  /// (spec §5.2 step 3); the plugin never types its result as a tensor.
  bool metadata = false;
  /// Tensor operands after the first give only their dtype and device, not
  /// their values or type (`Tensor::to(other)`): the result has operand 0's
  /// type.
  bool attributes_from_others = false;
  /// The implementation class of libtorch's stock module that applies this
  /// op and holds no tensors (`torch::nn::DropoutImpl`: "DropoutImpl"); its
  /// forward(x) is the op on x. Empty when none.
  std::string_view stock_module;
};

/// Every row of the table, in a stable order (the differential test walks
/// it).
const std::vector<OpRow>& op_table();

/// The row of an op by its name or any of its spellings, after stripping a
/// namespace ("aten::", "torch::", "at::", "at::Tensor::"), an ATen overload
/// (".Tensor", ".int") and a leading "." of a method. In-place variants
/// ("add_", ".transpose_") find their base op's row; use aliasing_of for
/// their aliasing. nullptr when the op is not in the table.
const OpRow* find_op(std::string_view name);

/// The aliasing of a spelled op: None for metadata ops ("requires_grad_"),
/// InPlace for an in-place name (is_inplace_name: "add_", "operator+="), Out
/// for libtorch's out= variants ("relu_out"), else the row's aliasing, else
/// None.
Aliasing aliasing_of(std::string_view name);

/// The structural arguments (dims, sizes, normalized_ndim) of a call of
/// `canon` from its constant integer arguments in call order (nullopt
/// entries are not constants). `known` is false when an argument the op's
/// rule needs is not a constant or is not read (IntArgs::Unread). Ops not in
/// the table give a default ShardingArgs.
ShardingArgs sharding_args_from_ints(
    std::string_view canon,
    const std::vector<std::vector<std::optional<long>>>& ints);

/// The row whose stock_module is `class_name` ("DropoutImpl"), or nullptr.
const OpRow* find_stock_module(std::string_view class_name);

/// find_op(name) && row->shape_factory.
bool is_shape_factory(std::string_view name);
/// find_op(name) && row->same_rank_operands.
bool has_same_rank_operands(std::string_view name);
/// find_op(name) && row->metadata.
bool is_metadata_op(std::string_view name);
/// find_op(name) && row->attributes_from_others: tensor operand `position`
/// (> 0) of the op contributes no type (Tensor::to(other)).
bool gives_attributes_only(std::string_view name, int position);

}  // namespace spmd::core

#endif  // SPMD_CORE_OP_TABLE_H

// op_table.cpp - the one op table (spec §6.5, §6.11, §6.12); see op_table.h.
#include <spmd/core/op_table.h>
#include <spmd/core/propagation.h>

#include <map>
#include <string>

namespace spmd::core {

const char* to_string(Aliasing a) {
  switch (a) {
    case Aliasing::None:
      return "none";
    case Aliasing::View:
      return "view";
    case Aliasing::InPlace:
      return "in-place";
    case Aliasing::Out:
      return "out";
  }
  return "none";  // every enumerator is handled above
}

namespace {

OpRow row(std::string_view name, IntArgs ints,
          Aliasing aliasing = Aliasing::None,
          std::vector<std::string_view> spellings = {}) {
  OpRow r;
  r.name = name;
  r.int_args = ints;
  r.aliasing = aliasing;
  r.spellings = std::move(spellings);
  return r;
}

OpRow factory(std::string_view name) {
  OpRow r = row(name, IntArgs::None);
  r.shape_factory = true;
  return r;
}

OpRow module(OpRow r, std::string_view impl) {
  r.stock_module = impl;
  return r;
}

OpRow attributes_only(OpRow r) {
  r.attributes_from_others = true;
  return r;
}

OpRow metadata(std::string_view name) {
  OpRow r = row(name, IntArgs::None);
  r.metadata = true;
  return r;
}

std::vector<OpRow> build_table() {
  using A = Aliasing;
  using I = IntArgs;
  std::vector<OpRow> t = {
      // Dim permutations (§6.12): views of their operand.
      row("transpose", I::AllDims, A::View),
      row("swapaxes", I::AllDims, A::View),
      row("swapdims", I::AllDims, A::View),
      row("movedim", I::AllDims, A::View),
      row("moveaxis", I::AllDims, A::View),
      row("permute", I::AllDims, A::View),
      row("t", I::None, A::View),
      // Size changes. view/expand always alias; reshape/flatten/unflatten
      // alias when the strides allow it, which the checkers treat as a view.
      row("view", I::AllSizes, A::View),
      row("reshape", I::AllSizes, A::View),
      row("expand", I::AllSizes, A::View),
      row("broadcast_to", I::AllSizes, A::View),
      row("repeat", I::AllSizes),
      row("flatten", I::StartEndDims, A::View),
      row("unflatten", I::DimThenSizes, A::View),
      // Ops along one dim.
      row("softmax", I::FirstDim),
      row("log_softmax", I::FirstDim),
      row("cumsum", I::FirstDim),
      row("cumprod", I::FirstDim),
      row("sort", I::FirstDim),
      row("argsort", I::FirstDim),
      row("unsqueeze", I::FirstDim, A::View),
      row("squeeze", I::FirstDim, A::View),
      row("select", I::FirstDim, A::View),
      row("narrow", I::FirstDim, A::View),
      row("index_select", I::FirstDim),
      row("flip", I::FirstDim),
      row("unbind", I::FirstDimOr0, A::View),
      row("cat", I::FirstDimOr0, A::None, {"concat", "concatenate"}),
      row("stack", I::FirstDimOr0),
      row("roll", I::SecondDim),
      row("repeat_interleave", I::SecondDimOnly),
      row("chunk", I::SecondDimOr0, A::View, {"unsafe_chunk"}),
      row("split", I::SecondDimOr0, A::View,
          {"split_with_sizes", "unsafe_split"}),
      row("tensor_split", I::SecondDimOr0, A::View),
      row("layer_norm", I::NormalizedShape),
      row("rms_norm", I::NormalizedShape),
      row("einsum", I::Unread),
      row("index", I::Unread, A::None, {"__getitem__"}),
      // Views whose structure the rules read from elsewhere.
      row("diagonal", I::None, A::View),
      row("detach", I::None, A::View),
      row("alias", I::None, A::View),
      row("view_as", I::None, A::View),
      row("expand_as", I::None, A::View),
      row("as_strided", I::None, A::View),
      row("unfold", I::None, A::View),
      row("slice", I::None, A::View),
      // Writes through an index or a mask (a zero fill under a mask is
      // masked_fill's rule; spec §6.11).
      row("index_put", I::None),
      row("masked_fill", I::None),
      row("index_fill", I::None),
      row("copy", I::None),
      row("zero", I::None),
      row("fill", I::None),
      // dtype/device conversion: the type passes through (spec §6.5).
      attributes_only(row("to", I::None)),
      row("type_as", I::None),
      row("contiguous", I::None),
      module(row("dropout", I::None), "DropoutImpl"),
      module(row("relu", I::None), "ReLUImpl"),
      module(row("gelu", I::None), "GELUImpl"),
      module(row("silu", I::None), "SiLUImpl"),
      module(row("tanh", I::None), "TanhImpl"),
      module(row("sigmoid", I::None), "SigmoidImpl"),
      // Factories whose first integer list is the shape (§6.10).
      factory("zeros"),
      factory("ones"),
      factory("empty"),
      factory("randn"),
      factory("rand"),
      factory("full"),
      // Metadata and autograd bookkeeping (spec §5.2 step 3, plus the
      // C++-only bookkeeping ops libtorch routes through the dispatcher).
      metadata("requires_grad"),
      metadata("retain_grad"),
      metadata("retains_grad"),
      metadata("dim"),
      metadata("element_size"),
      metadata("get_device"),
      metadata("is_complex"),
      metadata("is_contiguous"),
      metadata("is_floating_point"),
      metadata("nelement"),
      metadata("numel"),
      metadata("size"),
      metadata("stride"),
      metadata("untyped_storage"),
      metadata("storage_offset"),
      metadata("_version"),
      metadata("output_nr"),
      metadata("is_leaf"),
      metadata("set_data"),
      metadata("_fw_primal"),
      metadata("is_same_size"),
      metadata("_has_compatible_shallow_copy_type"),
      metadata("record_stream"),
      metadata("is_signed"),
      metadata("is_inference"),
      metadata("_backward"),
      metadata("is_conj"),
      metadata("is_neg"),
      metadata("sym_size"),
      metadata("sym_stride"),
      metadata("sym_numel"),
  };
  for (OpRow& r : t)
    if (r.name == "cat" || r.name == "stack") r.same_rank_operands = true;
  return t;
}

const std::map<std::string, const OpRow*, std::less<>>& index() {
  static const std::map<std::string, const OpRow*, std::less<>> m = [] {
    std::map<std::string, const OpRow*, std::less<>> out;
    for (const OpRow& r : op_table()) {
      out.emplace(std::string(r.name), &r);
      for (std::string_view s : r.spellings) out.emplace(std::string(s), &r);
    }
    return out;
  }();
  return m;
}

// The bare name: namespace, method dot and ATen overload dropped.
std::string bare_name(std::string_view name) {
  std::string s(name);
  if (s.rfind("prop ", 0) == 0) s = s.substr(5);
  if (auto p = s.rfind("::"); p != std::string::npos) s = s.substr(p + 2);
  if (!s.empty() && s[0] == '.') s = s.substr(1);
  if (auto p = s.find('.'); p != std::string::npos) s = s.substr(0, p);
  return s;
}

}  // namespace

const std::vector<OpRow>& op_table() {
  static const std::vector<OpRow> t = build_table();
  return t;
}

const OpRow* find_op(std::string_view name) {
  const auto& m = index();
  std::string s = bare_name(name);
  if (auto it = m.find(s); it != m.end()) return it->second;
  // Metadata names keep their underscores ("_version", "requires_grad_").
  if (s.size() > 1 && s.back() == '_') {
    s.pop_back();
    if (auto it = m.find(s); it != m.end()) return it->second;
  }
  std::string canon = canonical_op_name(name);
  if (auto it = m.find(canon); it != m.end()) return it->second;
  return nullptr;
}

Aliasing aliasing_of(std::string_view name) {
  const OpRow* r = find_op(name);
  if (r != nullptr && r->metadata) return Aliasing::None;
  if (is_inplace_name(name)) return Aliasing::InPlace;
  // libtorch's out= variants: "relu_out", "at::add_out".
  std::string bare = bare_name(name);
  if (bare.size() > 4 && bare.compare(bare.size() - 4, 4, "_out") == 0)
    return Aliasing::Out;
  return r != nullptr ? r->aliasing : Aliasing::None;
}

const OpRow* find_stock_module(std::string_view class_name) {
  for (const OpRow& r : op_table())
    if (!r.stock_module.empty() && r.stock_module == class_name) return &r;
  return nullptr;
}

bool is_shape_factory(std::string_view name) {
  const OpRow* r = find_op(name);
  return r != nullptr && r->shape_factory;
}

bool has_same_rank_operands(std::string_view name) {
  const OpRow* r = find_op(name);
  return r != nullptr && r->same_rank_operands;
}

bool is_metadata_op(std::string_view name) {
  const OpRow* r = find_op(name);
  return r != nullptr && r->metadata;
}

bool gives_attributes_only(std::string_view name, int position) {
  const OpRow* r = find_op(name);
  return position > 0 && r != nullptr && r->attributes_from_others;
}

ShardingArgs sharding_args_from_ints(
    std::string_view canon,
    const std::vector<std::vector<std::optional<long>>>& ints) {
  ShardingArgs sa;
  const OpRow* r = find_op(canon);
  if (r == nullptr) return sa;
  auto dims = [&](std::size_t from, std::size_t to) {
    sa.has_dims = true;
    for (std::size_t i = from; i < to && i < ints.size(); ++i)
      for (const std::optional<long>& d : ints[i]) {
        if (!d) sa.known = false;
        sa.dims.push_back(d.value_or(0));
      }
  };
  auto sizes = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to && i < ints.size(); ++i)
      sa.sizes.insert(sa.sizes.end(), ints[i].begin(), ints[i].end());
  };
  switch (r->int_args) {
    case IntArgs::None:
      break;
    case IntArgs::AllDims:
      dims(0, ints.size());
      break;
    case IntArgs::AllSizes:
      sizes(0, ints.size());
      break;
    case IntArgs::StartEndDims:
      if (!ints.empty()) dims(0, 2);
      break;
    case IntArgs::DimThenSizes:
      dims(0, 1);
      sizes(1, 2);
      break;
    case IntArgs::FirstDim:
      if (!ints.empty()) dims(0, 1);
      break;
    case IntArgs::FirstDimOr0:
      if (!ints.empty())
        dims(0, 1);
      else
        dims(1, 1);
      if (sa.dims.empty()) sa.dims.push_back(0);
      break;
    case IntArgs::SecondDim:
      // roll(shifts, dims): without dims it rolls the flattened tensor.
      if (ints.size() > 1) dims(1, 2);
      break;
    case IntArgs::SecondDimOnly:
      // (repeats, dim) with a constant count; one list is either the count
      // without a dim or the dim after a tensor of counts: not read.
      if (ints.size() > 1)
        dims(1, 2);
      else if (ints.size() == 1)
        sa.known = false;
      break;
    case IntArgs::SecondDimOr0:
      if (ints.size() > 1) {
        dims(1, 2);
      } else {
        sa.has_dims = true;
        sa.dims.push_back(0);
      }
      break;
    case IntArgs::NormalizedShape:
      if (!ints.empty()) sa.normalized_ndim = long(ints[0].size());
      break;
    case IntArgs::Unread:
      sa.known = false;  // the equation / the subscripts are not read
      break;
  }
  return sa;
}

}  // namespace spmd::core

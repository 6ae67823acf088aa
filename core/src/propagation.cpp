// Propagation through ordinary ops (spec §6): the op registry, the per-axis
// decision procedure, whole-op inference with completeness checks, and the
// fix suggestions of §9.4.
#include <spmd/core/mesh_region.h>
#include <spmd/core/propagation.h>

#include <algorithm>
#include <initializer_list>
#include <set>
#include <unordered_map>

namespace spmd::core {

const char* to_string(OpClass c) {
  switch (c) {
    case OpClass::Nonlinear:
      return "nonlinear";
    case OpClass::Linear:
      return "linear";
    case OpClass::Multilinear:
      return "multilinear";
  }
  return "?";
}

Result<OpClass> parse_op_class(std::string_view text) {
  if (text == "nonlinear") return OpClass::Nonlinear;
  if (text == "linear") return OpClass::Linear;
  if (text == "multilinear") return OpClass::Multilinear;
  TypeError e;
  e.kind = ErrorKind::ParseError;
  e.actual = std::string(text);
  e.expected = "linear, multilinear or nonlinear";
  e.message = "unknown op class '" + std::string(text) +
              "': expected linear, multilinear or nonlinear";
  return e;
}

// ---------------------------------------------------------------------------
// The registry (spec §6.5, §6.10).
// ---------------------------------------------------------------------------
namespace {

using Registry = std::unordered_map<std::string, OpInfo>;

void add_group(Registry& r, std::initializer_list<const char*> names, OpClass c,
               std::vector<int> tensor_positions,
               std::vector<int> nonlinear_positions = {},
               OpShape shape = OpShape::Plain) {
  for (const char* n : names) {
    OpInfo info;
    info.name = n;
    info.op_class = c;
    info.shape = shape;
    info.tensor_positions = tensor_positions;
    info.nonlinear_positions = nonlinear_positions;
    info.known = true;
    r[n] = std::move(info);
  }
}

// Long on purpose: the op classification of spec §6.5 as one table, an
// add_group line per op family; split, it would no longer read as the table.
const Registry& registry() {
  static const Registry r = [] {
    Registry r;
    const auto L = OpClass::Linear;
    const auto M = OpClass::Multilinear;
    const auto N = OpClass::Nonlinear;
    // LINEAR (sum-like; all-P -> P).
    add_group(r, {"add", ".add", ".add_", "__add__", "__radd__", "__iadd__"}, L,
              {0, 1});
    add_group(r,
              {"sub", "subtract", ".sub", ".subtract", ".sub_", "__sub__",
               "__rsub__", "__isub__"},
              L, {0, 1});
    add_group(r,
              {"neg", ".neg", ".neg_", "__neg__", "negative", ".negative",
               ".negative_", "positive", ".positive"},
              L, {0});
    add_group(r, {"clone", ".clone", "detach", ".detach", ".detach_"}, L, {0});
    add_group(r,
              {"sum", ".sum", "mean", ".mean", "nansum", "nanmean", "cumsum",
               ".cumsum"},
              L, {0});
    add_group(r,
              {"cat", "concat", "concatenate", "stack", "hstack", "vstack",
               "dstack", "column_stack", "row_stack", "block_diag"},
              L, {0});
    add_group(r,
              {"reshape",
               ".reshape",
               ".view",
               ".view_as",
               "transpose",
               ".transpose",
               ".transpose_",
               "prop T",
               "prop mT",
               "prop H",
               "prop mH",
               "prop real",
               "prop imag",
               "t",
               ".t",
               ".t_",
               "permute",
               ".permute",
               ".contiguous",
               "flatten",
               ".flatten",
               "unflatten",
               ".unflatten",
               "ravel",
               ".ravel",
               "squeeze",
               ".squeeze",
               ".squeeze_",
               "unsqueeze",
               ".unsqueeze",
               ".unsqueeze_",
               ".expand",
               ".expand_as",
               "broadcast_to",
               "narrow",
               ".narrow",
               "select",
               ".select",
               "index_select",
               ".index_select",
               "gather",
               ".gather",
               "split",
               ".split",
               "chunk",
               ".chunk",
               "unbind",
               ".unbind",
               "flip",
               ".flip",
               "fliplr",
               "flipud",
               "roll",
               ".roll",
               "movedim",
               ".movedim",
               "moveaxis",
               ".moveaxis",
               "swapaxes",
               ".swapaxes",
               "swapdims",
               ".swapdims",
               "diagonal",
               ".diagonal",
               ".repeat",
               "tile",
               ".tile",
               "repeat_interleave",
               ".repeat_interleave",
               ".unfold"},
              L, {0});
    // MULTILINEAR (product-like; exactly one P factor).
    add_group(r,
              {"mul", "multiply", ".mul", ".multiply", ".mul_", "__mul__",
               "__rmul__", "__imul__"},
              M, {});
    add_group(r,
              {"matmul", "mm", "bmm", ".matmul", ".mm", ".bmm", "__matmul__",
               "__rmatmul__"},
              M, {});
    add_group(r, {"einsum", "dot", ".dot", "mv", ".mv"}, M, {});
    add_group(r, {"div", "divide", "true_divide"}, M, {0, 1}, {1});
    add_group(r,
              {".div", ".divide", ".true_divide", ".div_", "__truediv__",
               "__itruediv__"},
              M, {0, 1}, {1});
    add_group(r, {"__rtruediv__"}, M, {0, 1}, {0});
    // Type-level decompositions: LINEAR(MULTILINEAR(a1, a2), self).
    add_group(r,
              {"addmm", ".addmm", "addmv", ".addmv", "addbmm", ".addbmm",
               "baddbmm", ".baddbmm", "addr", ".addr"},
              L, {}, {}, OpShape::LinearOfProduct);
    // Factories (only matter when no operand type is collected).
    add_group(r,
              {"zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
               "arange", "linspace", "logspace", "eye", "tensor"},
              N, {}, {}, OpShape::DeterministicFactory);
    add_group(r,
              {"randn", "rand", "randint", "randperm", "empty", "empty_like",
               "randn_like", "rand_like", "randint_like", "normal"},
              N, {}, {}, OpShape::RandomFactory);
    add_group(r, {".new_zeros", ".new_ones", ".new_full", ".new_empty"}, N, {},
              {}, OpShape::NewFactory);
    // Well-known NONLINEAR ops (the default anyway; listed so that tools can
    // tell "known nonlinear" from "unknown").
    add_group(r, {"relu",        ".relu",       "relu_",
                  ".relu_",      "gelu",        "silu",
                  "softmax",     ".softmax",    "log_softmax",
                  "exp",         ".exp",        "log",
                  ".log",        "tanh",        ".tanh",
                  "sigmoid",     ".sigmoid",    "abs",
                  ".abs",        "sqrt",        ".sqrt",
                  "rsqrt",       ".rsqrt",      "reciprocal",
                  ".reciprocal", "pow",         ".pow",
                  "__pow__",     "where",       "clamp",
                  ".clamp",      "__ge__",      "__gt__",
                  "__le__",      "__lt__",      "__eq__",
                  "__ne__",      "eq",          "ne",
                  "ge",          "gt",          "le",
                  "lt",          "__getitem__", "sort",
                  ".sort",       "copy_",       ".copy_",
                  "zero_",       ".zero_",      "item",
                  ".item",       "linear",      "layer_norm",
                  "dropout",     "embedding",   "cross_entropy",
                  "mse_loss",    "max",         ".max",
                  "min",         ".min",        "argmax",
                  ".argmax",     "topk",        "norm",
                  ".norm",       "var",         ".var",
                  "std",         ".std",        "square",
                  ".square",     "erf",         "softplus"},
              N, {});
    return r;
  }();
  return r;
}

/// ATen names whose spec (Python) name differs.
std::string_view aten_rename(std::string_view base) {
  static const std::unordered_map<std::string_view, std::string_view> kMap = {
      {"rsub", "__rsub__"},         // 2.0 - x
      {"scalar_tensor", "tensor"},  // torch::tensor(0.5)
      {"index", "__getitem__"},     // x.index({idx})
      {"split_with_sizes", "split"},
      {"unsafe_split", "split"},
      {"unsafe_chunk", "chunk"},
      // The transposing / complex-part properties are LINEAR (spec §5.2).
      {"T", "prop T"},
      {"numpy_T", "prop T"},
      {"H", "prop H"},
      {"matrix_H", "prop H"},
      {"mT", "prop mT"},
      {"mH", "prop mH"},
      {"adjoint", "prop mH"},
      {"real", "prop real"},
      {"imag", "prop imag"},
  };
  auto it = kMap.find(base);
  return it == kMap.end() ? base : it->second;
}

/// "aten::add_.Tensor" -> "add_" (namespace and overload dropped).
std::string_view schema_base(std::string_view name) {
  std::size_t ns = name.find("::");
  if (ns != std::string_view::npos) name = name.substr(ns + 2);
  return name.substr(0, name.find('.'));
}

bool is_aten(std::string_view name) { return name.substr(0, 6) == "aten::"; }

}  // namespace

bool is_inplace_name(std::string_view name) {
  if (is_aten(name)) name = schema_base(name);
  std::size_t last = name.rfind("::");
  std::string_view leaf =
      last == std::string_view::npos ? name : name.substr(last + 2);
  if (leaf.substr(0, 8) == "operator") {
    std::string_view op = leaf.substr(8);
    while (!op.empty() && op.front() == ' ') op.remove_prefix(1);
    return op.size() >= 2 && op.back() == '=' && op != "==" && op != "!=" &&
           op != "<=" && op != ">=";
  }
  if (!leaf.empty() && leaf.front() == '.') leaf.remove_prefix(1);
  if (leaf.substr(0, 2) == "__") {
    static const std::set<std::string_view> kInplaceDunders = {
        "__iadd__",      "__isub__", "__imul__", "__itruediv__",
        "__ifloordiv__", "__imod__", "__ipow__", "__imatmul__",
        "__iand__",      "__ior__",  "__ixor__", "__ilshift__",
        "__irshift__"};
    return kInplaceDunders.count(leaf) != 0;
  }
  return leaf.size() > 1 && leaf.back() == '_';
}

std::string normalize_schema_name(std::string_view schema_name) {
  std::string base(aten_rename(schema_base(schema_name)));
  // In-place variants are methods in the spec (".add_").
  if (base.substr(0, 2) != "__" && is_inplace_name(base)) return "." + base;
  return base;
}

std::string normalize_op_name(std::string_view name) {
  if (is_aten(name)) return normalize_schema_name(name);
  std::size_t last = name.rfind("::");
  std::string_view leaf =
      last == std::string_view::npos ? name : name.substr(last + 2);
  if (leaf.substr(0, 8) == "operator") {
    std::string d = dunder_for_operator(leaf.substr(8), /*unary=*/false);
    return d.empty() ? std::string(leaf) : d;
  }
  if (last == std::string_view::npos) return std::string(name);
  std::string_view scope = name.substr(0, last);
  std::size_t prev = scope.rfind("::");
  std::string_view cls =
      prev == std::string_view::npos ? scope : scope.substr(prev + 2);
  if (cls == "Tensor" || cls == "TensorBase") return "." + std::string(leaf);
  return std::string(leaf);
}

std::string dunder_for_operator(std::string_view op, bool unary,
                                bool reflected) {
  while (!op.empty() && op.front() == ' ') op.remove_prefix(1);
  if (unary) {
    if (op == "-") return "__neg__";
    if (op == "+") return "positive";
    if (op == "~") return "__invert__";
    return {};
  }
  struct Entry {
    const char* op;
    const char* dunder;
    const char* reflected;
  };
  static const Entry table[] = {
      {"+", "__add__", "__radd__"},    {"-", "__sub__", "__rsub__"},
      {"*", "__mul__", "__rmul__"},    {"/", "__truediv__", "__rtruediv__"},
      {"%", "__mod__", "__rmod__"},    {"+=", "__iadd__", nullptr},
      {"-=", "__isub__", nullptr},     {"*=", "__imul__", nullptr},
      {"/=", "__itruediv__", nullptr}, {"[]", "__getitem__", nullptr},
      {"<", "__lt__", "__gt__"},       {"<=", "__le__", "__ge__"},
      {">", "__gt__", "__lt__"},       {">=", "__ge__", "__le__"},
      {"==", "__eq__", "__eq__"},      {"!=", "__ne__", "__ne__"},
      {"&", "__and__", "__rand__"},    {"|", "__or__", "__ror__"},
      {"^", "__xor__", "__rxor__"},
  };
  for (const Entry& e : table)
    if (op == e.op)
      return reflected ? (e.reflected ? e.reflected : "") : e.dunder;
  return {};
}

OpInfo classify_schema_op(std::string_view schema_name) {
  const Registry& r = registry();
  const std::string normal = normalize_schema_name(schema_name);
  auto it = r.find(normal);
  // The dispatcher has one name for a function and its method; some ops are
  // registered only as methods (".view", ".expand", ".contiguous").
  if (it == r.end() && !normal.empty() && normal.front() != '.')
    it = r.find("." + normal);
  OpInfo info;
  if (it != r.end()) {
    info = it->second;
  } else {  // spec §6.6: unknown ops are NONLINEAR with no positions
    info.name = normal;
  }
  info.inplace = is_inplace_name(schema_base(schema_name));
  return info;
}

OpInfo classify_op(std::string_view name) {
  if (is_aten(name)) return classify_schema_op(name);
  const Registry& r = registry();
  auto it = r.find(std::string(name));
  if (it == r.end()) it = r.find(normalize_op_name(name));
  OpInfo info;
  if (it != r.end()) {
    info = it->second;
  } else {  // spec §6.6: unknown ops are NONLINEAR with no positions
    info.name = std::string(name);
  }
  info.inplace = is_inplace_name(name);
  return info;
}

// ---------------------------------------------------------------------------
// Per-axis rule (spec §6.4) and suggestions (§9.4).
// ---------------------------------------------------------------------------
namespace {

std::string operand_name(const AxisOperand& o) {
  return o.weak_scalar ? "Scalar" : to_string(o.type);
}

std::string list_types(const std::vector<AxisOperand>& ops) {
  std::string s = "[";
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (i) s += ", ";
    s += operand_name(ops[i]);
  }
  return s + "]";
}

/// The rule without suggestions; `row` reports which row decided (for
/// messages).
Result<PerAxisType> decide(const std::vector<AxisOperand>& ops, OpClass cls,
                           std::string_view axis, std::string_view op_name) {
  bool has_r = false, has_i = false, has_v = false, has_p = false,
       has_scalar = false;
  int partials = 0;
  for (const AxisOperand& o : ops) {
    if (o.weak_scalar) {
      has_scalar = true;
      continue;
    }
    switch (o.type.local().kind) {
      case TypeKind::Replicate:
        has_r = true;
        break;
      case TypeKind::Invariant:
        has_i = true;
        break;
      case TypeKind::Varying:
      case TypeKind::Shard:
        has_v = true;
        break;
      case TypeKind::Partial:
        has_p = true;
        ++partials;
        break;
    }
  }
  (void)has_scalar;
  if (!has_i && !has_v && !has_p) return spmd::types::R;  // row 1
  if (!has_r && !has_v && !has_p) return spmd::types::I;  // row 2
  if (!has_i && !has_p) return spmd::types::V;            // row 3

  TypeError e;
  e.kind = ErrorKind::SpmdTypeError;
  e.axis = std::string(axis);
  e.actual = list_types(ops);
  std::string prefix =
      op_name.empty() ? std::string() : std::string(op_name) + ": ";
  std::string on_axis = " on axis " + std::string(axis);
  std::string got = "; operand types " + e.actual;
  if (has_i) {  // row 4
    e.message = prefix + "Invariant type" + on_axis +
                " cannot mix with other types" + got +
                ". Invariant tensors combine only with Invariant tensors and "
                "plain numbers";
    e.expected = "all I";
  } else if (has_v) {  // row 5 (P with V)
    e.message = prefix + "Partial type" + on_axis +
                " cannot combine with Varying" + got +
                ". A pending sum and per-rank data have no common meaning";
    e.expected = "no P together with V";
  } else if (cls == OpClass::Nonlinear) {  // row 6
    e.message = prefix + "Partial type" + on_axis +
                " cannot propagate through non-linear ops" + got +
                ". A non-linear function of a pending sum is not the sum of "
                "the per-rank results";
    e.expected = "no P in a non-linear op";
  } else if (cls == OpClass::Linear && (has_r || has_scalar)) {  // row 7
    e.message =
        prefix + "Partial type" + on_axis +
        " cannot be added to a non-partial term in a linear op" + got +
        ". The op is affine in the partial operand: the non-partial term "
        "would be counted once per rank when the pending sum is reduced";
    e.expected = "all P";
  } else if (cls == OpClass::Multilinear && partials > 1) {  // row 8
    e.message = prefix + "Partial in multiple factors of multilinear op" +
                on_axis + " is forbidden" + got +
                ". A product of sums is not the sum of per-rank products";
    e.expected = "exactly one P factor";
  } else if (has_p) {  // row 9
    return spmd::types::P;
  } else {  // row 10
    e.message = prefix + "Incompatible types" + on_axis + got;
  }
  return e;
}

struct Suggestion {
  TypeKind from, to;
  const char* call;
  const char* src;
  const char* dst;
  const char* effect;
};

constexpr Suggestion kSuggestions[] = {
    {TypeKind::Invariant, TypeKind::Replicate, "convert", "I", "R",
     "no-op forward, all-reduce in backward"},
    {TypeKind::Invariant, TypeKind::Partial, "convert", "I", "P",
     "zeros non-rank-0 in forward, no-op backward"},
    {TypeKind::Partial, TypeKind::Replicate, "all_reduce", "P", "R",
     "all-reduce in forward, all-reduce in backward"},
    {TypeKind::Partial, TypeKind::Invariant, "all_reduce", "P", "I",
     "all-reduce in forward, no-op backward"},
    {TypeKind::Replicate, TypeKind::Partial, "convert", "R", "P",
     "zeros non-rank-0 in forward, zeros non-rank-0 in backward"},
};

/// Sets the §9.4 suggestions of `e`: the question as its fix, one note per
/// suggested call.
void add_suggestions(TypeError& e, const std::vector<AxisOperand>& ops,
                     OpClass cls, std::string_view axis) {
  std::vector<std::string> lines;
  for (const Suggestion& s : kSuggestions) {
    auto it = std::find_if(ops.begin(), ops.end(), [&](const AxisOperand& o) {
      return !o.weak_scalar && o.type.local().kind == s.from;
    });
    if (it == ops.end()) continue;
    std::vector<AxisOperand> rewritten = ops;
    rewritten[it - ops.begin()].type = PerAxisType{s.to, 0};
    auto fixed = decide(rewritten, cls, axis, {});
    if (!fixed.ok()) continue;
    std::vector<AxisOperand> rest = ops;
    rest.erase(rest.begin() + (it - ops.begin()));
    if (!rest.empty()) {
      auto alone = decide(rest, cls, axis, {});
      if (alone.ok() && alone.value() != fixed.value()) continue;
    }
    lines.push_back("spmd::" + std::string(s.call) + "(tensor, " +
                    std::string(axis) + ", " + s.src + ", " + s.dst +
                    ") on the " + full_name(PerAxisType{s.from, 0}) +
                    " operand (" + s.effect + ")");
  }
  if (lines.empty()) return;
  e.fix = "Are you missing a collective or a reinterpret/convert call? e.g.,";
  e.notes = std::move(lines);
}

}  // namespace

Result<PerAxisType> infer_axis(const std::vector<AxisOperand>& operands,
                               OpClass op_class, std::string_view axis,
                               std::string_view op_name) {
  auto r = decide(operands, op_class, axis, op_name);
  if (r.ok()) return r;
  TypeError e = r.error();
  add_suggestions(e, operands, op_class, axis);
  return e;
}

// ---------------------------------------------------------------------------
// Whole-op inference (spec §6.1-§6.10).
// ---------------------------------------------------------------------------
namespace {

bool contains(const std::vector<int>& v, int x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string axis_set(const std::set<std::string>& axes) {
  std::string s = "{";
  bool first = true;
  for (const auto& a : axes) {
    if (!first) s += ", ";
    first = false;
    s += a;
  }
  return s + "}";
}

std::string axis_set(const TensorType& t) {
  auto v = t.axes();
  return axis_set(std::set<std::string>(v.begin(), v.end()));
}

/// A collected operand: a map (tensor or typed scalar) or the weak scalar.
struct Collected {
  bool weak = false;
  TensorType type;
  std::size_t index = 0;  // args[i] numbering
};

/// Nonlinear positions (division denominators) must not be P (spec §6.5).
Status check_nonlinear_positions(const OpInfo& op,
                                 const std::vector<Operand>& operands) {
  for (const Operand& o : operands) {
    if (o.kind == Operand::Kind::WeakScalar || !o.type) continue;
    if (!contains(op.nonlinear_positions, o.position)) continue;
    for (const auto& [axis, t] : o.type->map()) {
      if (t.kind != TypeKind::Partial) continue;
      TypeError e;
      e.kind = ErrorKind::SpmdTypeError;
      e.axis = axis;
      e.actual = "P";
      e.expected = "R, I or V";
      e.message = op.name + ": Partial type in nonlinear argument on axis " +
                  axis +
                  " is not allowed (division is linear in the numerator "
                  "only)";
      e.fix = "Reduce it first, e.g. spmd::all_reduce(denominator, " + axis +
              ", P, R)";
      return e;
    }
  }
  return Ok{};
}

/// Operand types in the spec's order (§6.1): tensors first, then typed
/// scalars and the weak scalars at declared tensor positions, numbered
/// args[i]. `any_typed_input`: a tensor (even untyped) or a typed scalar.
std::vector<Collected> collect_operands(const OpInfo& op,
                                        const std::vector<Operand>& operands,
                                        bool& any_typed_input) {
  std::vector<Collected> collected;
  any_typed_input = false;
  for (const Operand& o : operands) {
    if (o.kind != Operand::Kind::Tensor) continue;
    collected.push_back({false, o.type.value_or(TensorType{}), 0});
    any_typed_input = true;
  }
  for (const Operand& o : operands) {
    if (o.kind == Operand::Kind::TypedScalar) {
      collected.push_back({false, o.type.value_or(TensorType{}), 0});
      any_typed_input = true;
    } else if (o.kind == Operand::Kind::WeakScalar) {
      bool declared = o.position < 0
                          ? !op.tensor_positions.empty()
                          : contains(op.tensor_positions, o.position);
      if (declared) collected.push_back({true, {}, 0});
    }
  }
  for (std::size_t i = 0; i < collected.size(); ++i) collected[i].index = i;
  return collected;
}

/// Cross-mesh lift (spec §6.2): operands typed on another mesh.
Status lift_operands(const std::string& op_name,
                     std::vector<Collected>& collected,
                     const InferenceContext& ctx) {
  if (!ctx.axis_table || !ctx.mesh_axes) return Ok{};
  for (Collected& c : collected) {
    if (c.weak) continue;
    Result<TensorType> lifted =
        lift_to_mesh(c.type, *ctx.mesh_axes, *ctx.axis_table);
    if (!lifted.ok()) {
      TypeError e = lifted.error();
      e.message =
          op_name + ": args[" + std::to_string(c.index) + "] " + e.message;
      return e;
    }
    c.type = std::move(lifted).value();
  }
  return Ok{};
}

/// Strict mode: operand `c` lacks `axis`, which the mesh or another operand
/// has (spec §6.3), with the §9.5 hint when the axis table knows one.
TypeError missing_axis_error(const std::string& op_name, const Collected& c,
                             const std::string& axis,
                             const std::vector<Collected>& collected,
                             const std::set<std::string>& mesh_axes,
                             const std::set<std::string>& operand_axes,
                             const InferenceContext& ctx) {
  TypeError e;
  e.kind = ErrorKind::SpmdTypeError;
  e.axis = axis;
  e.actual = c.type.to_string();
  std::string where;
  if (mesh_axes.count(axis)) {
    where = "from the current mesh " + axis_set(mesh_axes);
  } else {
    where = "present on other operands " + axis_set(operand_axes) +
            "; every operand must carry the same axis set";
  }
  e.message = op_name + ": args[" + std::to_string(c.index) +
              "] is missing axis " + axis + " " + where + " (args[" +
              std::to_string(c.index) + "] has axes " + axis_set(c.type) + ")";
  e.fix = "Annotate the operand's type on " + axis +
          ", e.g. spmd::assert_type(x, {" + axis +
          " = R}) or an "
          "[[spmd::type(" +
          axis + " = ...)]] annotation";
  if (ctx.axis_table) {  // §9.5
    std::vector<TensorType> types;
    for (const Collected& k : collected)
      if (!k.weak) types.push_back(k.type);
    std::string hint = axis_mismatch_hint(types, *ctx.axis_table);
    if (!hint.empty()) e.notes.push_back("Hint: " + hint);
  }
  return e;
}

/// addmm(self, m1, m2) = LINEAR(MULTILINEAR(m1, m2), self) on one axis. The
/// first tensor operand is self whether or not it has the axis: a skipped
/// operand (permissive) must not turn self into a factor.
Result<PerAxisType> infer_linear_of_product(
    const std::vector<Collected>& collected,
    const std::vector<std::pair<std::size_t, AxisOperand>>& present,
    bool scalars_join, const std::string& axis, const std::string& op_name) {
  std::optional<AxisOperand> self;
  std::vector<AxisOperand> factors;
  bool any_factor = false, first_tensor = true;
  for (const Collected& c : collected) {
    if (c.weak) {
      if (scalars_join) factors.push_back(AxisOperand::scalar());
      continue;
    }
    bool is_self = first_tensor;
    first_tensor = false;
    for (const auto& [idx, ao] : present) {
      if (idx != c.index) continue;
      if (is_self) {
        self = ao;
      } else {
        factors.push_back(ao);
        any_factor = true;
      }
    }
  }
  if (!any_factor)
    return self ? infer_axis({*self}, OpClass::Linear, axis, op_name)
                : Result<PerAxisType>(spmd::types::R);
  auto product = infer_axis(factors, OpClass::Multilinear, axis, op_name);
  if (!product.ok()) return product.error();
  return self ? infer_axis({AxisOperand::of(product.value()), *self},
                           OpClass::Linear, axis, op_name)
              : product;
}

}  // namespace

Result<TensorType> infer(const OpInfo& op, const std::vector<Operand>& operands,
                         const InferenceContext& ctx) {
  const std::string& op_name = op.name;
  if (Status s = check_nonlinear_positions(op, operands); !s.ok())
    return s.error();
  bool any_typed_input = false;
  std::vector<Collected> collected =
      collect_operands(op, operands, any_typed_input);
  if (Status s = lift_operands(op_name, collected, ctx); !s.ok())
    return s.error();

  // Factories (spec §6.10).
  const bool mesh_set = ctx.mesh_axes.has_value();
  auto mesh_replicate = [&] {
    TensorType t;
    if (mesh_set)
      for (const auto& a : *ctx.mesh_axes) t.set(a, spmd::types::R);
    return t;
  };
  if (op.shape == OpShape::NewFactory) return mesh_replicate();
  if (!any_typed_input) {
    if (op.shape == OpShape::DeterministicFactory) return mesh_replicate();
    return TensorType{};
  }

  // Axis set (spec §6.3).
  std::set<std::string> all_axes;
  std::set<std::string> operand_axes;
  for (const Collected& c : collected)
    for (const auto& entry : c.type.map()) operand_axes.insert(entry.first);
  all_axes = operand_axes;
  if (mesh_set) all_axes.insert(ctx.mesh_axes->begin(), ctx.mesh_axes->end());
  std::set<std::string> mesh_axes;
  if (mesh_set) mesh_axes.insert(ctx.mesh_axes->begin(), ctx.mesh_axes->end());

  TensorType out;
  for (const std::string& axis : all_axes) {
    // Per operand: its type on this axis, or missing.
    std::vector<std::pair<std::size_t, AxisOperand>> present;
    for (const Collected& c : collected) {
      if (c.weak) continue;
      if (auto t = c.type.get(axis)) {
        present.push_back({c.index, AxisOperand::of(*t)});
      } else if (ctx.strict) {
        return missing_axis_error(op_name, c, axis, collected, mesh_axes,
                                  operand_axes, ctx);
      }
    }
    if (present.empty()) continue;  // permissive: no operand has the axis

    // Weak scalars join on axes the tensor operands mention.
    const bool scalars_join = operand_axes.count(axis) != 0;
    Result<PerAxisType> t = spmd::types::R;
    if (op.shape == OpShape::LinearOfProduct) {
      t = infer_linear_of_product(collected, present, scalars_join, axis,
                                  op_name);
    } else {
      std::vector<AxisOperand> axis_ops;
      for (const Collected& c : collected) {
        if (c.weak) {
          if (scalars_join) axis_ops.push_back(AxisOperand::scalar());
          continue;
        }
        for (const auto& [idx, ao] : present)
          if (idx == c.index) axis_ops.push_back(ao);
      }
      t = infer_axis(axis_ops, op.op_class, axis, op_name);
    }
    if (!t.ok()) return t.error();
    out.set(axis, t.value());
  }
  return out;
}

Result<TensorType> infer(std::string_view op_name,
                         const std::vector<Operand>& operands,
                         const InferenceContext& ctx) {
  return infer(classify_op(op_name), operands, ctx);
}

// ---------------------------------------------------------------------------
// In-place and out= (spec §6.11).
// ---------------------------------------------------------------------------
Result<TensorType> apply_inplace(std::string_view op_name,
                                 const std::optional<TensorType>& before,
                                 const TensorType& inferred,
                                 bool requires_grad) {
  if (!before) return inferred;
  for (const auto& [axis, after] : inferred.map()) {
    auto prev = before->get(axis);
    if (!prev || *prev == after) continue;
    bool widening =
        after.kind == TypeKind::Varying && (prev->kind == TypeKind::Replicate ||
                                            prev->kind == TypeKind::Invariant);
    if (widening && !requires_grad) continue;
    TypeError e;
    e.kind = ErrorKind::SpmdTypeError;
    e.axis = axis;
    e.expected = to_string(*prev);
    e.actual = to_string(after);
    e.message = std::string(op_name) +
                ": in-place/out operation would change SPMD type on axis " +
                axis + " from " + to_string(*prev) + " to " + to_string(after);
    if (widening) {
      e.message +=
          " (widening to V is allowed only for tensors that do not require "
          "grad: it would change the gradient contract of an autograd leaf)";
      e.fix = "Use the out-of-place op and assign the result to a new tensor";
    } else {
      e.fix =
          "Use the out-of-place op, or convert the operands so the "
          "result keeps type " +
          to_string(*prev);
    }
    return e;
  }
  TensorType result = *before;
  for (const auto& [axis, t] : inferred.map()) result.set(axis, t);
  return result;
}

// ---------------------------------------------------------------------------
// Writes through aliases (spec §6.11.1).
// ---------------------------------------------------------------------------
bool is_view_op(std::string_view name) {
  if (name.substr(0, 6) == "aten::") name.remove_prefix(6);
  if (auto dot = name.find('.'); dot != std::string_view::npos)
    name = name.substr(0, dot);
  static constexpr std::string_view kViews[] = {
      "alias",      "as_strided",   "contiguous",
      "detach",     "diagonal",     "expand",
      "expand_as",  "flatten",      "imag",
      "movedim",    "moveaxis",     "narrow",
      "permute",    "real",         "reshape",
      "reshape_as", "select",       "slice",
      "squeeze",    "swapaxes",     "swapdims",
      "t",          "transpose",    "unflatten",
      "unfold",     "unsqueeze",    "view",
      "view_as",    "view_as_real", "view_as_complex",
      "mT",         "mH",           "T",
      "H",          "adjoint"};
  for (std::string_view v : kViews)
    if (name == v) return true;
  return false;
}

Result<std::optional<TensorType>> apply_alias_write(
    std::string_view op_name, const std::optional<TensorType>& alias,
    const TensorType& written, bool requires_grad) {
  if (!alias) return std::optional<TensorType>();
  TensorType result = *alias;
  for (const auto& [axis, after] : written.map()) {
    auto prev = alias->get(axis);
    if (!prev || *prev == after) continue;
    const bool same_data = [](TypeKind k) {
      return k == TypeKind::Replicate || k == TypeKind::Invariant;
    }(after.kind);
    if (prev->kind == TypeKind::Varying && same_data) continue;
    const bool widening =
        after.kind == TypeKind::Varying && (prev->kind == TypeKind::Replicate ||
                                            prev->kind == TypeKind::Invariant);
    if (widening && !requires_grad) {
      result.set(axis, after);
      continue;
    }
    TypeError e;
    e.kind = ErrorKind::SpmdTypeError;
    e.axis = axis;
    e.expected = to_string(*prev);
    e.actual = to_string(after);
    e.message = std::string(op_name) + ": in-place write of a " +
                to_string(after) + " value on axis " + axis +
                " through a view would leave another tensor that shares its "
                "storage (the base or another view), typed " +
                to_string(*prev) + ", holding data that no type denotes";
    if (widening)
      e.message +=
          " (it requires grad, so it cannot widen to V: that would change "
          "its gradient contract)";
    e.fix =
        "Clone the view before writing to it (auto v = x.view(...).clone()), "
        "or write through the base so that its type is checked";
    return e;
  }
  return std::optional<TensorType>(std::move(result));
}

}  // namespace spmd::core

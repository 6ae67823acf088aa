// Propagation through ordinary ops (spec §6): the §6.4 decision procedure and
// its binary table, the §6.5 registry, division's nonlinear positions, the
// addmm-family decompositions, factories (§6.10), strict/permissive and mesh
// completeness (§6.3), multi-axis (§6.8), fix suggestions (§9.4) and the
// in-place rule (§6.11).
#include <algorithm>

#include "core_test_util.h"

namespace spmd::core::testing {
namespace {

// ---------------------------------------------------------------------------
// §6.4 per-axis rule.

// Expected outcome of the per-axis rule: a type, or an error class.
enum class Out { R, I, V, P, IMix, PWithV, Nonlinear, Affine, TwoPartial };

const char* OutText(Out o) {
  switch (o) {
    case Out::R:
      return "R";
    case Out::I:
      return "I";
    case Out::V:
      return "V";
    case Out::P:
      return "P";
    case Out::IMix:
      return "err_I_mix";
    case Out::PWithV:
      return "err_P_with_V";
    case Out::Nonlinear:
      return "err_nonlinear";
    case Out::Affine:
      return "err_affine";
    case Out::TwoPartial:
      return "err_two_partial_factors";
  }
  return "?";
}

// The §9.3 key phrase each error class must carry (affine has none listed).
const char* OutPhrase(Out o) {
  switch (o) {
    case Out::IMix:
      return "cannot mix";
    case Out::PWithV:
      return "cannot combine with Varying";
    case Out::Nonlinear:
      return "non-linear";
    case Out::TwoPartial:
      return "Partial in multiple factors";
    default:
      return "";
  }
}

std::optional<PerAxisType> OutType(Out o) {
  switch (o) {
    case Out::R:
      return R;
    case Out::I:
      return I;
    case Out::V:
      return V;
    case Out::P:
      return P;
    default:
      return std::nullopt;
  }
}

// Operand tokens: "R", "I", "V", "P", "Sc" (weak plain number).
AxisOperand Tok(const std::string& t) {
  if (t == "Sc") return AxisOperand::scalar();
  return AxisOperand::of(parse_per_axis_type(t).value());
}

const char* ClassText(OpClass c) {
  switch (c) {
    case OpClass::Nonlinear:
      return "NONLINEAR";
    case OpClass::Linear:
      return "LINEAR";
    case OpClass::Multilinear:
      return "MULTILINEAR";
  }
  return "?";
}

struct RuleRow {
  std::vector<std::string> operands;
  OpClass op_class;
  Out out;
};

std::string RuleName(const RuleRow& row) {
  std::string s = ClassText(row.op_class);
  s += "_";
  for (const std::string& t : row.operands) s += t;
  return s + "_is_" + OutText(row.out);
}

void PrintTo(const RuleRow& r, std::ostream* os) { *os << RuleName(r); }
void CheckRule(const RuleRow& row) {
  std::vector<AxisOperand> ops;
  for (const std::string& t : row.operands) ops.push_back(Tok(t));
  Result<PerAxisType> r = infer_axis(ops, row.op_class, "tp", "op");
  if (std::optional<PerAxisType> want = OutType(row.out)) {
    ASSERT_TRUE(Succeeds(r));
    EXPECT_EQ(r.value(), *want) << "got " << TypeText(r.value());
  } else {
    EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError, {OutPhrase(row.out)}));
    if (!r.ok()) {
      EXPECT_TRUE(Contains(r.error().message, "tp")) << "must name the axis";
    }
  }
}

// The complete binary table of §6.4 (plus unary rows), one entry per
// unordered pair; both operand orders are generated below.
struct PairRow {
  const char* a;
  const char* b;  // "" = unary
  Out nonlinear, linear, multilinear;
};

const PairRow kBinaryTable[] = {
    {"R", "R", Out::R, Out::R, Out::R},
    {"I", "I", Out::I, Out::I, Out::I},
    {"V", "V", Out::V, Out::V, Out::V},
    {"R", "V", Out::V, Out::V, Out::V},
    {"R", "Sc", Out::R, Out::R, Out::R},
    {"I", "Sc", Out::I, Out::I, Out::I},
    {"V", "Sc", Out::V, Out::V, Out::V},
    {"I", "R", Out::IMix, Out::IMix, Out::IMix},
    {"I", "V", Out::IMix, Out::IMix, Out::IMix},
    {"I", "P", Out::IMix, Out::IMix, Out::IMix},
    {"P", "P", Out::Nonlinear, Out::P, Out::TwoPartial},
    {"P", "R", Out::Nonlinear, Out::Affine, Out::P},
    {"P", "Sc", Out::Nonlinear, Out::Affine, Out::P},
    {"P", "V", Out::PWithV, Out::PWithV, Out::PWithV},
    // Row 1 with T = {Scalar}: only plain numbers give R.
    {"Sc", "Sc", Out::R, Out::R, Out::R},
    // Unary.
    {"R", "", Out::R, Out::R, Out::R},
    {"I", "", Out::I, Out::I, Out::I},
    {"V", "", Out::V, Out::V, Out::V},
    {"P", "", Out::Nonlinear, Out::P, Out::P},
};

std::vector<RuleRow> BinaryRows() {
  std::vector<RuleRow> rows;
  for (const PairRow& p : kBinaryTable) {
    std::vector<std::vector<std::string>> orders;
    if (std::string(p.b).empty()) {
      orders.push_back({p.a});
    } else {
      orders.push_back({p.a, p.b});
      if (std::string(p.a) != p.b) orders.push_back({p.b, p.a});
    }
    for (const auto& ops : orders) {
      rows.push_back({ops, OpClass::Nonlinear, p.nonlinear});
      rows.push_back({ops, OpClass::Linear, p.linear});
      rows.push_back({ops, OpClass::Multilinear, p.multilinear});
    }
  }
  return rows;
}

class BinaryTable : public ::testing::TestWithParam<RuleRow> {};
TEST_P(BinaryTable, Rule) { CheckRule(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Spec6_4, BinaryTable,
                         ::testing::ValuesIn(BinaryRows()),
                         [](const auto& info) { return RuleName(info.param); });

// Longer operand lists: the first matching row of the procedure wins.
const RuleRow kDecisionRows[] = {
    {{"P", "P", "P"}, OpClass::Linear, Out::P},                // P079
    {{"P", "R", "R", "Sc"}, OpClass::Multilinear, Out::P},     // P080
    {{"R", "V", "Sc"}, OpClass::Nonlinear, Out::V},            // P081
    {{"I", "I", "Sc", "Sc"}, OpClass::Linear, Out::I},         // row 2
    {{"R", "R", "Sc", "V"}, OpClass::Multilinear, Out::V},     // row 3
    {{"I", "P", "V"}, OpClass::Linear, Out::IMix},             // row 4 before 5
    {{"P", "V", "I"}, OpClass::Multilinear, Out::IMix},        // row 4 before 5
    {{"P", "V", "R"}, OpClass::Nonlinear, Out::PWithV},        // row 5 before 6
    {{"P", "R", "V"}, OpClass::Linear, Out::PWithV},           // row 5 before 7
    {{"P", "V", "P"}, OpClass::Multilinear, Out::PWithV},      // row 5 before 8
    {{"P", "P", "R"}, OpClass::Linear, Out::Affine},           // row 7
    {{"P", "P", "Sc"}, OpClass::Linear, Out::Affine},          // row 7
    {{"P", "P", "R"}, OpClass::Multilinear, Out::TwoPartial},  // row 8
    {{"R", "P", "Sc", "R"}, OpClass::Multilinear, Out::P},     // row 9
    {{"P", "P", "P", "P"}, OpClass::Nonlinear, Out::Nonlinear},  // row 6
};

class DecisionRows : public ::testing::TestWithParam<RuleRow> {};
TEST_P(DecisionRows, FirstMatchWins) { CheckRule(GetParam()); }
INSTANTIATE_TEST_SUITE_P(Spec6_4, DecisionRows,
                         ::testing::ValuesIn(kDecisionRows),
                         [](const auto& info) { return RuleName(info.param); });

TEST(OpClassText, PrintsAndParses) {
  EXPECT_STREQ(to_string(OpClass::Nonlinear), "nonlinear");
  EXPECT_STREQ(to_string(OpClass::Linear), "linear");
  EXPECT_STREQ(to_string(OpClass::Multilinear), "multilinear");
  for (OpClass c :
       {OpClass::Nonlinear, OpClass::Linear, OpClass::Multilinear}) {
    auto r = parse_op_class(to_string(c));
    ASSERT_TRUE(Succeeds(r));
    EXPECT_EQ(r.value(), c);
  }
  EXPECT_TRUE(FailsWith(parse_op_class("sublinear"), ErrorKind::ParseError,
                        {"sublinear"}));
}

// ---------------------------------------------------------------------------
// §6.5 registry.

struct ClassRow {
  const char* name;
  OpClass op_class;
  std::vector<int> tensor_positions;
  std::vector<int> nonlinear_positions;
};

// One test per §6.5 group; every name of the group is checked in a loop.
struct RegistryGroup {
  const char* group;
  std::vector<const char*> names;
  OpClass op_class;
  std::vector<int> tensor_positions;
  std::vector<int> nonlinear_positions;
};

std::vector<RegistryGroup> RegistryGroups() {
  const OpClass L = OpClass::Linear, M = OpClass::Multilinear;
  // clang-format off
  return {
      {"add", {"add", ".add", ".add_", "__add__", "__radd__", "__iadd__"},
       L, {0, 1}, {}},
      {"sub", {"sub", "subtract", ".sub", ".subtract", ".sub_", "__sub__",
               "__rsub__", "__isub__"}, L, {0, 1}, {}},
      {"negation", {"neg", ".neg", ".neg_", "__neg__", "negative",
                    ".negative", ".negative_", "positive", ".positive"},
       L, {0}, {}},
      {"copy", {"clone", ".clone", "detach", ".detach", ".detach_"},
       L, {0}, {}},
      {"reductions", {"sum", ".sum", "mean", ".mean", "nansum", "nanmean",
                      "cumsum", ".cumsum"}, L, {0}, {}},
      {"concatenation", {"cat", "concat", "concatenate", "stack", "hstack",
                         "vstack", "dstack", "column_stack", "row_stack",
                         "block_diag"}, L, {0}, {}},
      {"shape_structural", {
           "reshape", ".reshape", ".view", ".view_as", "transpose",
           ".transpose", ".transpose_", "prop T", "prop mT", "prop H",
           "prop mH", "prop real", "prop imag", "t", ".t", ".t_", "permute",
           ".permute", ".contiguous", "flatten", ".flatten", "unflatten",
           ".unflatten", "ravel", ".ravel", "squeeze", ".squeeze",
           ".squeeze_", "unsqueeze", ".unsqueeze", ".unsqueeze_", ".expand",
           ".expand_as", "broadcast_to", "narrow", ".narrow", "select",
           ".select", "index_select", ".index_select", "gather", ".gather",
           "split", ".split", "chunk", ".chunk", "unbind", ".unbind", "flip",
           ".flip", "fliplr", "flipud", "roll", ".roll", "movedim",
           ".movedim", "moveaxis", ".moveaxis", "swapaxes", ".swapaxes",
           "swapdims", ".swapdims", "diagonal", ".diagonal", ".repeat",
           "tile", ".tile", "repeat_interleave", ".repeat_interleave",
           ".unfold"}, L, {0}, {}},
      {"multiplication", {"mul", "multiply", ".mul", ".multiply", ".mul_",
                          "__mul__", "__rmul__", "__imul__"}, M, {}, {}},
      {"matrix_products", {"matmul", "mm", "bmm", ".matmul", ".mm", ".bmm",
                           "__matmul__", "__rmatmul__"}, M, {}, {}},
      {"contractions", {"einsum", "dot", ".dot", "mv", ".mv"}, M, {}, {}},
      {"division", {"div", "divide", "true_divide"}, M, {0, 1}, {1}},
      {"division_methods", {".div", ".divide", ".true_divide", ".div_",
                            "__truediv__", "__itruediv__"}, M, {0, 1}, {1}},
      {"reflected_division", {"__rtruediv__"}, M, {0, 1}, {0}},
      // C++ spellings (header: namespaces stripped, operators mapped).
      {"cpp_add", {"torch::add", "at::add", "operator+", "operator+="},
       L, {0, 1}, {}},
      {"cpp_mul", {"torch::mul", "at::matmul", "operator*"}, M, {}, {}},
      {"cpp_div", {"operator/", "torch::div"}, M, {0, 1}, {1}},
  };
  // clang-format on
}

std::vector<int> Sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

void PrintTo(const RegistryGroup& g, std::ostream* os) { *os << g.group; }
class Registry : public ::testing::TestWithParam<RegistryGroup> {};

TEST_P(Registry, ClassAndPositions) {
  const RegistryGroup& g = GetParam();
  for (const char* name : g.names) {
    SCOPED_TRACE(name);
    OpInfo info = classify_op(name);
    EXPECT_TRUE(info.known);
    EXPECT_EQ(info.op_class, g.op_class) << to_string(info.op_class);
    EXPECT_EQ(info.shape, OpShape::Plain);
    EXPECT_EQ(Sorted(info.tensor_positions), g.tensor_positions);
    EXPECT_EQ(Sorted(info.nonlinear_positions), g.nonlinear_positions);
  }
}

INSTANTIATE_TEST_SUITE_P(Spec6_5, Registry,
                         ::testing::ValuesIn(RegistryGroups()),
                         [](const auto& info) {
                           return std::string(info.param.group) + "_is_" +
                                  to_string(info.param.op_class);
                         });

// Listed NONLINEAR examples (and F.linear, §15.3) plus unknown ops (§6.6).
const char* const kNonlinearNames[] = {
    "relu",       "gelu",        "softmax",    "exp",
    "log",        "tanh",        "sigmoid",    "abs",
    "sqrt",       "rsqrt",       "reciprocal", "pow",
    "__pow__",    "where",       "clamp",      "__ge__",
    "eq",         "__getitem__", "sort",       ".copy_",
    ".zero_",     ".item",       "linear",     "torch::nn::functional::linear",
    "operator[]", "operator>=",
};

TEST(Registry, NonlinearExamples) {
  for (const char* name : kNonlinearNames) {
    SCOPED_TRACE(name);
    EXPECT_EQ(classify_op(name).op_class, OpClass::Nonlinear);
    EXPECT_TRUE(classify_op(name).nonlinear_positions.empty());
  }
}

TEST(Registry, UnknownOpIsNonlinearWithoutTensorPositions) {
  for (const char* name :
       {"unregistered_op", "my_fused_kernel", ".frobnicate"}) {
    SCOPED_TRACE(name);
    OpInfo info = classify_op(name);
    EXPECT_FALSE(info.known);
    EXPECT_EQ(info.op_class, OpClass::Nonlinear);
    EXPECT_TRUE(info.tensor_positions.empty());
  }
}

TEST(Registry, Decompositions) {
  for (const char* name :
       {"addmm", ".addmm", "addmv", ".addmv", "addbmm", ".addbmm", "baddbmm",
        ".baddbmm", "addr", ".addr", "torch::addmm"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(classify_op(name).shape, OpShape::LinearOfProduct);
  }
}

TEST(Registry, Factories) {
  for (const char* name :
       {"zeros", "ones", "full", "zeros_like", "ones_like", "full_like",
        "arange", "linspace", "logspace", "eye", "tensor", "torch::zeros"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(classify_op(name).shape, OpShape::DeterministicFactory);
  }
  for (const char* name : {"randn", "rand", "empty"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(classify_op(name).shape, OpShape::RandomFactory);
  }
  for (const char* name : {".new_zeros", ".new_ones", ".new_full"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(classify_op(name).shape, OpShape::NewFactory);
  }
  // §6.5 lists zeros_like as NONLINEAR when it has a typed input.
  EXPECT_EQ(classify_op("zeros_like").op_class, OpClass::Nonlinear);
}

struct DunderRow {
  const char* op;
  bool unary;
  const char* dunder;
};

const DunderRow kDunders[] = {
    {"+", false, "__add__"},       {"+=", false, "__iadd__"},
    {"-", false, "__sub__"},       {"-=", false, "__isub__"},
    {"-", true, "__neg__"},        {"*", false, "__mul__"},
    {"*=", false, "__imul__"},     {"/", false, "__truediv__"},
    {"/=", false, "__itruediv__"}, {"[]", false, "__getitem__"},
    {">=", false, "__ge__"},       {",", false, ""},
};

TEST(Registry, DunderForOperator) {
  for (const DunderRow& row : kDunders) {
    SCOPED_TRACE(std::string(row.op) + (row.unary ? " unary" : ""));
    EXPECT_EQ(dunder_for_operator(row.op, row.unary), row.dunder);
  }
}

// ---------------------------------------------------------------------------
// Whole-op inference.

struct InferRow {
  const char* what;
  const char* op;
  std::vector<Operand> operands;
  InferenceContext ctx;
  const char* want;                  // expected map, or nullptr for an error
  std::vector<std::string> phrases;  // for errors
  const char* axis = "";             // axis the error must report
};

void PrintTo(const InferRow& r, std::ostream* os) { *os << r.what; }
class Infer : public ::testing::TestWithParam<InferRow> {};

TEST_P(Infer, Rule) {
  const InferRow& row = GetParam();
  Result<TensorType> r = infer(row.op, row.operands, row.ctx);
  if (row.want) {
    EXPECT_TRUE(Gives(r, row.want));
  } else {
    EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError, row.phrases));
    if (!r.ok() && std::string(row.axis).size()) {
      EXPECT_EQ(r.error().axis, row.axis);
    }
  }
}

InferRow Ok(const char* what, const char* op, std::vector<Operand> ops,
            const char* want, InferenceContext ctx = {}) {
  return {what, op, std::move(ops), std::move(ctx), want, {}};
}
InferRow Err(const char* what, const char* op, std::vector<Operand> ops,
             std::vector<std::string> phrases, const char* axis = "tp",
             InferenceContext ctx = {}) {
  return {what, op, std::move(ops), std::move(ctx), nullptr, std::move(phrases),
          axis};
}

// §6.5 division: linear in the numerator only.
std::vector<InferRow> DivisionRows() {
  return {
      Ok("P_div_number_is_P", "div", {Ten("{tp: P}", 0), Num(1)}, "{tp: P}"),
      Ok("P_div_R_is_P", "div", {Ten("{tp: P}", 0), Ten("{tp: R}", 1)},
         "{tp: P}"),
      Err("R_div_P_rejected", "div", {Ten("{tp: R}", 0), Ten("{tp: P}", 1)},
          {"nonlinear argument"}),
      Err("P_div_P_rejected", "div", {Ten("{tp: P}", 0), Ten("{tp: P}", 1)},
          {"nonlinear argument"}),
      Err("number_div_P_rejected", "div", {Num(0), Ten("{tp: P}", 1)},
          {"nonlinear argument"}),
      Err("method_R_div_P_rejected", ".div",
          {Ten("{tp: R}", 0), Ten("{tp: P}", 1)}, {"nonlinear argument"}),
      Err("truediv_R_div_P_rejected", "__truediv__",
          {Ten("{tp: R}", 0), Ten("{tp: P}", 1)}, {"nonlinear argument"}),
      Err("rtruediv_number_div_P_rejected", "__rtruediv__",
          {Ten("{tp: P}", 0), Num(1)}, {"nonlinear argument"}),
      Ok("rtruediv_number_div_R_is_R", "__rtruediv__",
         {Ten("{tp: R}", 0), Num(1)}, "{tp: R}"),
      Ok("I_div_number_is_I", "__truediv__", {Ten("{tp: I}", 0), Num(1)},
         "{tp: I}"),
      Ok("P_div_ScalarR_is_P", "__truediv__",
         {Ten("{tp: P}", 0), Sc("{tp: R}", 1)}, "{tp: P}"),
      Err("P_div_ScalarP_rejected", "__truediv__",
          {Ten("{tp: P}", 0), Sc("{tp: P}", 1)}, {"nonlinear argument"}),
      Err("inplace_div_R_by_P_rejected", ".div_",
          {Ten("{tp: R}", 0), Ten("{tp: P}", 1)}, {"nonlinear argument"}),
  };
}
INSTANTIATE_TEST_SUITE_P(Spec6_5Division, Infer,
                         ::testing::ValuesIn(DivisionRows()),
                         [](const auto& info) { return info.param.what; });

// §6.5 decompositions: LINEAR(MULTILINEAR(op1, op2), op0).
std::vector<InferRow> DecompositionRows() {
  auto three = [](const char* a, const char* b, const char* c) {
    return std::vector<Operand>{Ten(a, 0), Ten(b, 1), Ten(c, 2)};
  };
  return {
      Ok("addmm_PPR_is_P", "addmm", three("{tp: P}", "{tp: P}", "{tp: R}"),
         "{tp: P}"),
      Ok("addmm_PRP_is_P", "addmm", three("{tp: P}", "{tp: R}", "{tp: P}"),
         "{tp: P}"),
      Err("addmm_PRR_affine_lists_product_then_self", "addmm",
          three("{tp: P}", "{tp: R}", "{tp: R}"), {"[R, P]"}),
      Err("addmm_RPR_affine", "addmm", three("{tp: R}", "{tp: P}", "{tp: R}"),
          {}),
      Err("addmm_RPP_two_partial_factors", "addmm",
          three("{tp: R}", "{tp: P}", "{tp: P}"),
          {"Partial in multiple factors"}),
      Ok("addmm_VRR_is_V", "addmm", three("{tp: V}", "{tp: R}", "{tp: R}"),
         "{tp: V}"),
      Ok("addmm_RRR_is_R", "addmm", three("{tp: R}", "{tp: R}", "{tp: R}"),
         "{tp: R}"),
      Ok("addmm_III_is_I", "addmm", three("{tp: I}", "{tp: I}", "{tp: I}"),
         "{tp: I}"),
      Err("addmm_VPR_P_with_V", "addmm", three("{tp: V}", "{tp: P}", "{tp: R}"),
          {"cannot combine with Varying"}),
      Ok("method_addmm_PPR_is_P", ".addmm",
         three("{tp: P}", "{tp: P}", "{tp: R}"), "{tp: P}"),
      Ok("baddbmm_PPR_is_P", "baddbmm", three("{tp: P}", "{tp: P}", "{tp: R}"),
         "{tp: P}"),
      Err("addr_PRR_affine", "addr", three("{tp: P}", "{tp: R}", "{tp: R}"),
          {"[R, P]"}),
      Ok("addmv_PRP_is_P", "addmv", three("{tp: P}", "{tp: R}", "{tp: P}"),
         "{tp: P}"),
      Err("addbmm_RPP_two_partial_factors", "addbmm",
          three("{tp: R}", "{tp: P}", "{tp: P}"),
          {"Partial in multiple factors"}),
  };
}
INSTANTIATE_TEST_SUITE_P(Spec6_5Decomposition, Infer,
                         ::testing::ValuesIn(DecompositionRows()),
                         [](const auto& info) { return info.param.what; });

// §6.10 factories.
std::vector<InferRow> FactoryRows() {
  return {
      Ok("zeros_no_mesh_is_empty", "zeros", {}, "{}"),
      Ok("zeros_under_mesh_is_R_everywhere", "zeros", {}, "{dp: R, tp: R}",
         Mesh({"dp", "tp"})),
      Ok("tensor_under_mesh_is_R", "tensor", {}, "{tp: R}", Mesh({"tp"})),
      Ok("arange_under_mesh_is_R", "arange", {}, "{tp: R}", Mesh({"tp"})),
      Ok("eye_under_mesh_is_R", "eye", {}, "{tp: R}", Mesh({"tp"})),
      Ok("randn_under_mesh_is_empty", "randn", {}, "{}", Mesh({"dp", "tp"})),
      Ok("empty_under_mesh_is_empty", "empty", {}, "{}", Mesh({"tp"})),
      Ok("randn_no_mesh_is_empty", "randn", {}, "{}"),
      Ok("new_zeros_ignores_receiver_under_mesh", ".new_zeros",
         {Ten("{tp: V}", 0)}, "{tp: R}", Mesh({"tp"})),
      Ok("new_ones_ignores_P_receiver_under_mesh", ".new_ones",
         {Ten("{tp: P}", 0)}, "{tp: R}", Mesh({"tp"})),
      Ok("new_full_no_mesh_is_empty", ".new_full", {Ten("{tp: V}", 0)}, "{}"),
      Ok("arange_of_varying_Scalars_is_V", "arange",
         {Sc("{tp: V}", 0), Sc("{tp: V}", 1)}, "{tp: V}"),
      Ok("tensor_of_varying_Scalar_is_V", "tensor", {Sc("{tp: V}", 0)},
         "{tp: V}"),
      Err("zeros_like_typed_P_is_nonlinear", "zeros_like", {Ten("{tp: P}", 0)},
          {"non-linear"}),
      Ok("zeros_like_typed_V_is_V", "zeros_like", {Ten("{tp: V}", 0)},
         "{tp: V}", Mesh({"tp"})),
      Ok("untyped_only_no_mesh_is_empty", "relu", {Untyped(0)}, "{}"),
      Err("untyped_only_under_mesh_strict_missing_axis", "relu", {Untyped(0)},
          {"args[0]", "missing axis"}, "dp", Mesh({"dp", "tp"})),
      Ok("typed_empty_among_themselves", "add", {Ten("{}", 0), Ten("{}", 1)},
         "{}"),
  };
}
INSTANTIATE_TEST_SUITE_P(Spec6_10Factories, Infer,
                         ::testing::ValuesIn(FactoryRows()),
                         [](const auto& info) { return info.param.what; });

// §6.3 axis set and completeness, §6.8 multi-axis, §6.9 scalars.
std::vector<InferRow> AxisSetRows() {
  return {
      Err("strict_operand_missing_axis", "add",
          {Ten("{tp: R}", 0), Ten("{}", 1)}, {"args[1]", "missing axis"}),
      Ok("permissive_operand_missing_axis_skipped", "add",
         {Ten("{tp: R}", 0), Ten("{}", 1)}, "{tp: R}", Permissive()),
      Err("strict_untyped_operand_missing_axis", "add",
          {Ten("{tp: R}", 0), Untyped(1)}, {"args[1]"}),
      Ok("permissive_untyped_operand_skipped", "add",
         {Ten("{tp: R}", 0), Untyped(1)}, "{tp: R}", Permissive()),
      Err("strict_union_of_operand_axes", "add",
          {Ten("{tp: R}", 0), Ten("{dp: R, tp: R}", 1)},
          {"args[0]", "missing axis", "dp"}, "dp"),
      Err("strict_mesh_axis_missing_from_all", "add",
          {Ten("{tp: R}", 0), Ten("{tp: R}", 1)},
          {"missing axis", "current mesh"}, "dp", Mesh({"dp", "tp"})),
      Ok("permissive_mesh_axis_missing_from_all_omitted", "add",
         {Ten("{tp: R}", 0), Ten("{tp: R}", 1)}, "{tp: R}",
         Mesh({"dp", "tp"}, false)),
      Ok("complete_under_mesh", "add",
         {Ten("{dp: V, tp: R}", 0), Ten("{dp: R, tp: R}", 1)}, "{dp: V, tp: R}",
         Mesh({"dp", "tp"})),
      // addmm(self, m1, m2) with m2 lacking the axis (permissive, skipped):
      // self stays the added term, so R + P is still rejected (it was
      // typed as the product R * P = P).
      Err("permissive_addmm_missing_factor_keeps_self_added", "addmm",
          {Ten("{tp: R}", 0), Ten("{tp: P}", 1), Ten("{}", 2)}, {}, "tp",
          Permissive()),
      Ok("permissive_addmm_missing_self_is_product", "addmm",
         {Ten("{}", 0), Ten("{tp: P}", 1), Ten("{tp: R}", 2)}, "{tp: P}",
         Permissive()),
      Ok("permissive_addmm_missing_factor_P_plus_P", "addmm",
         {Ten("{tp: P}", 0), Ten("{tp: P}", 1), Ten("{}", 2)}, "{tp: P}",
         Permissive()),
      Ok("permissive_disjoint_axes_union", "add",
         {Ten("{tp: V}", 0), Ten("{dp: R}", 1)}, "{dp: R, tp: V}",
         Permissive()),
      // §6.8.
      Ok("multiaxis_mul_P_V_times_R_V", "mul",
         {Ten("{dp: P, tp: V}", 0), Ten("{dp: R, tp: V}", 1)},
         "{dp: P, tp: V}"),
      Err("multiaxis_add_fails_on_dp", "add",
          {Ten("{dp: P, tp: R}", 0), Ten("{dp: R, tp: R}", 1)}, {"dp"}, "dp"),
      Err("multiaxis_first_failing_axis_in_sorted_order", "add",
          {Ten("{a: P, b: I}", 0), Ten("{a: R, b: R}", 1)}, {}, "a"),
      Err("multiaxis_first_failing_axis_sorted_not_operand_order", "mul",
          {Ten("{zz: I, aa: I}", 0), Ten("{zz: V, aa: R}", 1)}, {"cannot mix"},
          "aa"),
      // §6.9 weak numbers and typed Scalars.
      Err("P_plus_number_affine", "add", {Ten("{tp: P}", 0), Num(1)}, {}),
      Ok("R_plus_number_is_R", "add", {Ten("{tp: R}", 0), Num(1)}, "{tp: R}"),
      Ok("P_times_number_is_P", "mul", {Ten("{tp: P}", 0), Num(1)}, "{tp: P}"),
      Ok("P_times_ScalarR_is_P", "mul", {Ten("{tp: P}", 0), Sc("{tp: R}", 1)},
         "{tp: P}"),
      Err("P_times_ScalarV_rejected", "mul",
          {Ten("{tp: P}", 0), Sc("{tp: V}", 1)},
          {"cannot combine with Varying"}),
      Err("P_times_ScalarI_rejected", "mul",
          {Ten("{tp: P}", 0), Sc("{tp: I}", 1)}, {"cannot mix"}),
      Err("P_times_ScalarP_rejected", "mul",
          {Ten("{tp: P}", 0), Sc("{tp: P}", 1)},
          {"Partial in multiple factors"}),
      Ok("R_plus_ScalarV_is_V", "add", {Ten("{tp: R}", 0), Sc("{tp: V}", 1)},
         "{tp: V}"),
      Err("R_plus_ScalarP_rejected", "add",
          {Ten("{tp: R}", 0), Sc("{tp: P}", 1)}, {}),
      Ok("P_plus_ScalarP_is_P", "add", {Ten("{tp: P}", 0), Sc("{tp: P}", 1)},
         "{tp: P}"),
      Err("I_plus_ScalarV_rejected", "add",
          {Ten("{tp: I}", 0), Sc("{tp: V}", 1)}, {"cannot mix"}),
      Ok("Scalar_anywhere_narrow", "narrow",
         {Ten("{tp: R}", 0), Sc("{tp: V}", 2), Sc("{tp: V}", 3)}, "{tp: V}"),
      // §6.5: F.linear is NONLINEAR (§15.3).
      Ok("F_linear_V_R_is_V", "torch::nn::functional::linear",
         {Ten("{tp: V}", 0), Ten("{tp: R}", 1)}, "{tp: V}"),
      Err("F_linear_P_R_rejected", "linear",
          {Ten("{tp: P}", 0), Ten("{tp: R}", 1)}, {"non-linear"}),
      Err("unknown_op_P_rejected", "unregistered_op", {Ten("{tp: P}", 0)},
          {"non-linear"}),
      Ok("operator_plus_P_P_is_P", "operator+",
         {Ten("{tp: P}", 0), Ten("{tp: P}", 1)}, "{tp: P}"),
      Ok("operator_times_P_R_is_P", "operator*",
         {Ten("{tp: P}", 0), Ten("{tp: R}", 1)}, "{tp: P}"),
  };
}
INSTANTIATE_TEST_SUITE_P(Spec6_3AxisSet, Infer,
                         ::testing::ValuesIn(AxisSetRows()),
                         [](const auto& info) { return info.param.what; });

TEST(InferMessages, NameOpAxisAndOperand) {
  Result<TensorType> r = infer("add", {Ten("{tp: P}", 0), Ten("{tp: V}", 1)});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.error().message, "add"));
  EXPECT_TRUE(Contains(r.error().message, "tp"));
  EXPECT_EQ(r.error().axis, "tp");
}

// ---------------------------------------------------------------------------
// §9.4 fix suggestions.

// The spec writes the call Python-style, "convert(tensor, A, src=I,
// dst=R)"; the C++ API takes src/dst positionally, so the C++ spelling
// "convert(tensor, tp, I, R)" (optionally "spmd::"-qualified) is the same
// suggestion. Either is accepted; the effect text is the spec's.
struct Suggestion {
  const char* call;      // spec spelling
  const char* cpp_call;  // C++ spelling
  const char* operand;   // "on the <Full name> operand"
  const char* effect;
};

const Suggestion kItoR{"convert(tensor, tp, src=I, dst=R)",
                       "convert(tensor, tp, I, R)", "on the Invariant operand",
                       "(no-op forward, all-reduce in backward)"};
const Suggestion kItoP{"convert(tensor, tp, src=I, dst=P)",
                       "convert(tensor, tp, I, P)", "on the Invariant operand",
                       "(zeros non-rank-0 in forward, no-op backward)"};
const Suggestion kPtoR{"all_reduce(tensor, tp, src=P, dst=R)",
                       "all_reduce(tensor, tp, P, R)", "on the Partial operand",
                       "(all-reduce in forward, all-reduce in backward)"};
const Suggestion kPtoI{"all_reduce(tensor, tp, src=P, dst=I)",
                       "all_reduce(tensor, tp, P, I)", "on the Partial operand",
                       "(all-reduce in forward, no-op backward)"};
const Suggestion kRtoP{
    "convert(tensor, tp, src=R, dst=P)", "convert(tensor, tp, R, P)",
    "on the Replicate operand",
    "(zeros non-rank-0 in forward, zeros non-rank-0 in backward)"};
const Suggestion* const kAllSuggestions[] = {&kItoR, &kItoP, &kPtoR, &kPtoI,
                                             &kRtoP};

// Position of the suggestion in `text` (either spelling), or npos.
std::size_t FindSuggestion(const std::string& text, const Suggestion& s) {
  std::size_t at = text.find(s.call);
  return at != std::string::npos ? at : text.find(s.cpp_call);
}

struct FixRow {
  const char* what;
  std::vector<std::string> operands;
  OpClass op_class;
  std::vector<const Suggestion*> want;  // in order
};

const FixRow kFixRows[] = {
    {"I_R_nonlinear_convert_I_to_R_only",
     {"I", "R"},
     OpClass::Nonlinear,
     {&kItoR}},
    {"I_R_linear_convert_I_to_R_only", {"I", "R"}, OpClass::Linear, {&kItoR}},
    {"I_R_multilinear_convert_I_to_R_only",
     {"I", "R"},
     OpClass::Multilinear,
     {&kItoR}},
    {"P_R_nonlinear_all_reduce_P_to_R_only",
     {"P", "R"},
     OpClass::Nonlinear,
     {&kPtoR}},
    {"P_R_linear_all_reduce_P_to_R_and_convert_R_to_P",
     {"P", "R"},
     OpClass::Linear,
     {&kPtoR, &kRtoP}},
    {"P_I_multilinear_convert_I_to_R_and_all_reduce_P_to_I",
     {"P", "I"},
     OpClass::Multilinear,
     {&kItoR, &kPtoI}},
};

void PrintTo(const FixRow& r, std::ostream* os) { *os << r.what; }
class FixSuggestions : public ::testing::TestWithParam<FixRow> {};

TEST_P(FixSuggestions, Spec9_4) {
  const FixRow& row = GetParam();
  std::vector<AxisOperand> ops;
  for (const std::string& t : row.operands) ops.push_back(Tok(t));
  Result<PerAxisType> r = infer_axis(ops, row.op_class, "tp", "op");
  ASSERT_FALSE(r.ok());
  std::string text = AllText(r.error());
  EXPECT_TRUE(Contains(
      text,
      "Are you missing a collective or a reinterpret/convert call? e.g.,"));
  std::size_t last = 0;
  for (const Suggestion* s : row.want) {
    std::size_t at = FindSuggestion(text, *s);
    ASSERT_NE(at, std::string::npos) << "missing " << s->call << " in\n"
                                     << text;
    EXPECT_GE(at, last) << "suggestions out of §9.4 order";
    last = at;
    std::string line = text.substr(at, text.find('\n', at) - at);
    EXPECT_TRUE(Contains(line, s->operand));
    EXPECT_TRUE(Contains(line, s->effect));
  }
  for (const Suggestion* s : kAllSuggestions) {
    if (std::find(row.want.begin(), row.want.end(), s) != row.want.end())
      continue;
    EXPECT_EQ(FindSuggestion(text, *s), std::string::npos)
        << "unexpected suggestion " << s->call << " in\n"
        << text;
  }
  // Never suggested (§9.4): R->I, P->V (reduce_scatter), V->P (reinterpret).
  EXPECT_EQ(text.find("reduce_scatter("), std::string::npos);
  EXPECT_EQ(text.find("reinterpret(tensor"), std::string::npos);
  EXPECT_EQ(text.find("src=R, dst=I"), std::string::npos);
  EXPECT_EQ(text.find("tp, R, I)"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Spec9_4, FixSuggestions, ::testing::ValuesIn(kFixRows),
                         [](const auto& info) { return info.param.what; });

// §9.4 output format: the base message, then the suggestion block.
TEST(FixSuggestions, FullMessageIsMessageThenSuggestions) {
  Result<PerAxisType> r =
      infer_axis({Tok("I"), Tok("R")}, OpClass::Nonlinear, "tp", "add");
  ASSERT_FALSE(r.ok());
  const TypeError& e = r.error();
  std::string full = e.full_message();
  EXPECT_EQ(full.rfind(e.message, 0), 0u) << full;
  EXPECT_NE(full.find("Are you missing a collective", e.message.size()),
            std::string::npos)
      << full;
  // Each part is one line: the question is the fix, each call a note.
  EXPECT_FALSE(e.notes.empty());
  for (const std::string& part : [&] {
         std::vector<std::string> parts = e.notes;
         parts.push_back(e.message);
         parts.push_back(e.fix);
         return parts;
       }())
    EXPECT_EQ(part.find('\n'), std::string::npos) << part;
}

TEST(FixSuggestions, ReachWholeOpErrors) {
  Result<TensorType> r = infer("add", {Ten("{tp: P}", 0), Ten("{tp: R}", 1)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(FindSuggestion(AllText(r.error()), kPtoR), std::string::npos)
      << AllText(r.error());
  EXPECT_NE(FindSuggestion(AllText(r.error()), kRtoP), std::string::npos)
      << AllText(r.error());
}

// ---------------------------------------------------------------------------
// §6.11 in-place / out=.

struct InplaceRow {
  const char* what;
  std::optional<const char*> before;  // nullopt: untyped
  const char* inferred;
  bool requires_grad;
  const char* want;          // nullptr: error
  const char* from_to = "";  // "from X to Y" for errors
};

const InplaceRow kInplace[] = {
    {"R_stays_R", "{tp: R}", "{tp: R}", false, "{tp: R}"},
    {"V_stays_V", "{tp: V}", "{tp: V}", true, "{tp: V}"},
    {"P_stays_P", "{tp: P}", "{tp: P}", true, "{tp: P}"},
    {"R_widens_to_V_without_grad", "{tp: R}", "{tp: V}", false, "{tp: V}"},
    {"I_widens_to_V_without_grad", "{tp: I}", "{tp: V}", false, "{tp: V}"},
    {"R_to_V_rejected_with_grad", "{tp: R}", "{tp: V}", true, nullptr,
     "from R to V"},
    {"I_to_V_rejected_with_grad", "{tp: I}", "{tp: V}", true, nullptr,
     "from I to V"},
    {"V_to_R_rejected", "{tp: V}", "{tp: R}", false, nullptr, "from V to R"},
    {"R_to_P_never_allowed", "{tp: R}", "{tp: P}", false, nullptr,
     "from R to P"},
    {"R_to_I_rejected", "{tp: R}", "{tp: I}", false, nullptr, "from R to I"},
    {"P_to_V_rejected", "{tp: P}", "{tp: V}", false, nullptr, "from P to V"},
    {"V_to_P_rejected", "{tp: V}", "{tp: P}", false, nullptr, "from V to P"},
    {"untyped_takes_inferred", std::nullopt, "{tp: V}", false, "{tp: V}"},
    {"untyped_with_grad_takes_inferred", std::nullopt, "{tp: P}", true,
     "{tp: P}"},
    {"new_axis_added", "{dp: R}", "{dp: R, tp: V}", true, "{dp: R, tp: V}"},
    {"second_axis_fails", "{dp: R, tp: V}", "{dp: R, tp: R}", false, nullptr,
     "from V to R"},
};

void PrintTo(const InplaceRow& r, std::ostream* os) { *os << r.what; }
class Inplace : public ::testing::TestWithParam<InplaceRow> {};

TEST_P(Inplace, Spec6_11) {
  const InplaceRow& row = GetParam();
  std::optional<TensorType> before;
  if (row.before) before = TT(*row.before);
  Result<TensorType> r =
      apply_inplace(".add_", before, TT(row.inferred), row.requires_grad);
  if (row.want) {
    EXPECT_TRUE(Gives(r, row.want));
  } else {
    EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError,
                          {"in-place/out", "tp", row.from_to}));
  }
}

INSTANTIATE_TEST_SUITE_P(Spec6_11, Inplace, ::testing::ValuesIn(kInplace),
                         [](const auto& info) { return info.param.what; });

}  // namespace
}  // namespace spmd::core::testing

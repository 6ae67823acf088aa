// The decisions the two front ends (the Clang plugin and the runtime) take
// from the core instead of making them themselves: op names and in-place
// detection (spec §6.5, §6.11), all_to_all dims (§7.6), alias lowering
// (§7.11, §7.12), mesh completeness (§4.3), the options of the collectives
// (§7.1-§7.10) and the validity of type values.
#include "core_test_util.h"

namespace spmd::core::testing {
namespace {

using C = Collective;
using O = CollectiveOption;

// ---- op names ------------------------------------------------------------

struct NameRow {
  const char* spelled;
  const char* normal;  // normalize_op_name
  bool inplace;        // is_inplace_name
};

const NameRow kNames[] = {
    // ATen schema names (the runtime checker's dispatcher fallback).
    {"aten::add.Tensor", "add", false},
    {"aten::add_.Tensor", ".add_", true},
    {"aten::mul_.Scalar", ".mul_", true},
    {"aten::relu_", ".relu_", true},
    {"aten::rsub.Scalar", "__rsub__", false},
    {"aten::scalar_tensor", "tensor", false},
    {"aten::index.Tensor", "__getitem__", false},
    {"aten::split_with_sizes", "split", false},
    {"aten::unsafe_split.Tensor", "split", false},
    {"aten::unsafe_chunk", "chunk", false},
    {"aten::T", "prop T", false},
    {"aten::numpy_T", "prop T", false},
    {"aten::H", "prop H", false},
    {"aten::matrix_H", "prop H", false},
    {"aten::mT", "prop mT", false},
    {"aten::mH", "prop mH", false},
    {"aten::adjoint", "prop mH", false},
    {"aten::real", "prop real", false},
    {"aten::imag", "prop imag", false},
    {"aten::view", "view", false},
    {"aten::__iadd__.Tensor", "__iadd__", true},
    {"aten::_to_copy", "_to_copy", false},
    // C++ spellings (the plugin).
    {"torch::add", "add", false},
    {"at::Tensor::add_", ".add_", true},
    {"at::TensorBase::mul", ".mul", false},
    {"torch::nn::functional::linear", "linear", false},
    {"operator+", "__add__", false},
    {"at::operator*", "__mul__", false},
    {"operator+=", "__iadd__", true},
    {"operator==", "__eq__", false},
    {"operator<=", "__le__", false},
    // The spec's own names pass unchanged.
    {".add_", ".add_", true},
    {".add", ".add", false},
    {"__add__", "__add__", false},
    {"__iadd__", "__iadd__", true},
    {"__itruediv__", "__itruediv__", true},
    {"__invert__", "__invert__", false},
    {"relu_", "relu_", true},
    {"prop T", "prop T", false},
};

TEST(OpNames, NormalizeAndInplace) {
  for (const NameRow& row : kNames) {
    SCOPED_TRACE(row.spelled);
    EXPECT_EQ(normalize_op_name(row.spelled), row.normal);
    EXPECT_EQ(is_inplace_name(row.spelled), row.inplace);
    EXPECT_EQ(classify_op(row.spelled).inplace, row.inplace);
  }
}

TEST(OpNames, AtenBranchOfClassifyOp) {
  // In-place variants are the registry's methods.
  OpInfo add_ = classify_op("aten::add_.Tensor");
  EXPECT_TRUE(add_.known);
  EXPECT_EQ(add_.name, ".add_");
  EXPECT_EQ(add_.op_class, OpClass::Linear);
  EXPECT_TRUE(add_.inplace);
  // Overload names are dropped.
  OpInfo mm = classify_op("aten::mm.out");
  EXPECT_TRUE(mm.known);
  EXPECT_EQ(mm.op_class, OpClass::Multilinear);
  EXPECT_FALSE(mm.inplace);
  // Renamed ATen ops find their spec entry.
  EXPECT_EQ(classify_op("aten::rsub.Scalar").name, "__rsub__");
  EXPECT_EQ(classify_op("aten::rsub.Scalar").op_class, OpClass::Linear);
  EXPECT_EQ(classify_op("aten::T").name, "prop T");
  EXPECT_EQ(classify_op("aten::scalar_tensor").shape,
            OpShape::DeterministicFactory);
  // Functions registered only as methods are found as methods.
  OpInfo view = classify_op("aten::view");
  EXPECT_TRUE(view.known);
  EXPECT_EQ(view.name, ".view");
  EXPECT_EQ(view.op_class, OpClass::Linear);
  // Unknown ATen ops: NONLINEAR, named by their spec spelling.
  OpInfo unknown = classify_op("aten::frobnicate_.out");
  EXPECT_FALSE(unknown.known);
  EXPECT_EQ(unknown.op_class, OpClass::Nonlinear);
  EXPECT_EQ(unknown.name, ".frobnicate_");
  EXPECT_TRUE(unknown.inplace);
  // Unknown C++ names keep the caller's spelling (it is what the user wrote).
  EXPECT_EQ(classify_op("torch::frobnicate").name, "torch::frobnicate");
}

TEST(OpNames, SchemaNamesOfAnyNamespace) {
  // The runtime checker's fallback sees every dispatcher op, not only aten.
  EXPECT_EQ(normalize_schema_name("c10d::allreduce_"), ".allreduce_");
  EXPECT_EQ(normalize_schema_name("prim::T"), "prop T");
  EXPECT_EQ(normalize_schema_name("aten::add.out"), "add");
  OpInfo custom = classify_schema_op("mylib::scale_.Tensor");
  EXPECT_FALSE(custom.known);
  EXPECT_EQ(custom.name, ".scale_");
  EXPECT_TRUE(custom.inplace);
  OpInfo expand = classify_schema_op("aten::expand");
  EXPECT_TRUE(expand.known);
  EXPECT_EQ(expand.name, ".expand");
  OpInfo sum = classify_schema_op("aten::sum.dim_IntList");
  EXPECT_TRUE(sum.known);
  EXPECT_EQ(sum.name, "sum");
  EXPECT_FALSE(sum.inplace);
}

// ---- all_to_all dims (spec §7.6 table) ------------------------------------

TEST(AllToAllDims, Spec7_6Table) {
  auto dims = [](PerAxisType src, PerAxisType dst, std::optional<long> split,
                 std::optional<long> concat) {
    CollectiveCall c = Call(C::AllToAll, src, dst);
    c.split_dim = split;
    c.concat_dim = concat;
    return all_to_all_dims(c);
  };
  EXPECT_EQ(dims(V, V, std::nullopt, std::nullopt), (AllToAllDims{0, 0}));
  EXPECT_EQ(dims(V, V, 2, 1), (AllToAllDims{2, 1}));
  EXPECT_EQ(dims(V, V, -1, std::nullopt), (AllToAllDims{-1, 0}));
  EXPECT_EQ(dims(S(2), S(1), std::nullopt, std::nullopt), (AllToAllDims{1, 2}));
  EXPECT_EQ(dims(S(1), V, std::nullopt, std::nullopt), (AllToAllDims{1, 0}));
  EXPECT_EQ(dims(S(1), V, std::nullopt, 2), (AllToAllDims{1, 2}));
  EXPECT_EQ(dims(V, S(1), std::nullopt, std::nullopt), (AllToAllDims{0, 1}));
  EXPECT_EQ(dims(V, S(1), 2, std::nullopt), (AllToAllDims{2, 1}));
}

// The two rules the runtime's collective tests once skipped as "known core
// bugs": pinned here so the core cannot regress without a failing test.
TEST(FormerlySkipped, ConvertVaryingToPartialIsLegalInExpertMode) {
  CollectiveCall c = Call(C::Convert, V, P);
  EXPECT_TRUE(FailsWith(check_arguments(c), ErrorKind::InvalidArgument,
                        {"expert_mode"}));
  c.expert_mode = true;
  EXPECT_TRUE(Succeeds(check_arguments(c)));
  c.src = S(0);
  EXPECT_TRUE(Succeeds(check_arguments(c)));
}

TEST(FormerlySkipped, AllToAllMixedDimsBackward) {
  auto b = backward_of(Call(C::AllToAll, V, S(1)));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].op, C::AllToAll);
  EXPECT_EQ(b[0].src, S(0));
  EXPECT_EQ(b[0].dst, S(1));
  b = backward_of(Call(C::AllToAll, S(1), V));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].src, S(1));
  EXPECT_EQ(b[0].dst, S(0));
}

// ---- alias lowering (spec §7.11, §7.12) -----------------------------------

TEST(LowerToPrimitive, AliasesAndRoutes) {
  auto shard = lower_to_primitive(Call(C::Shard, R, S(1)));
  ASSERT_TRUE(shard.has_value());
  EXPECT_EQ(shard->op, C::Convert);
  EXPECT_EQ(shard->src, R);
  EXPECT_EQ(shard->dst, S(1));
  EXPECT_TRUE(shard->expert_mode);

  CollectiveCall un = Call(C::Unshard, S(0), R);
  un.split_sizes = {1, 2};
  auto unshard = lower_to_primitive(un);
  ASSERT_TRUE(unshard.has_value());
  EXPECT_EQ(unshard->op, C::AllGather);
  EXPECT_EQ(unshard->split_sizes, (std::vector<long>{1, 2}));

  auto itr = lower_to_primitive(Call(C::InvariantToReplicate, I, R));
  ASSERT_TRUE(itr.has_value());
  EXPECT_EQ(itr->op, C::Convert);
  EXPECT_EQ(itr->src, I);
  EXPECT_EQ(itr->dst, R);

  CollectiveCall red = Call(C::Redistribute, P, S(1));
  red.has_op_dtype = true;
  auto routed = lower_to_primitive(red);
  ASSERT_TRUE(routed.has_value());
  EXPECT_EQ(routed->op, C::ReduceScatter);
  EXPECT_EQ(routed->scatter_dim, std::optional<long>(1));
  EXPECT_TRUE(routed->has_op_dtype);
  // A gated delegation is allowed: legality was checked on the user's call.
  auto r_to_i = lower_to_primitive(Call(C::Redistribute, R, I));
  ASSERT_TRUE(r_to_i.has_value());
  EXPECT_EQ(r_to_i->op, C::Convert);
  EXPECT_TRUE(r_to_i->expert_mode);

  // Primitives are their own lowering.
  auto ar = lower_to_primitive(Call(C::AllReduce, P, R));
  ASSERT_TRUE(ar.has_value());
  EXPECT_EQ(ar->op, C::AllReduce);

  // No-ops lower to nothing.
  EXPECT_EQ(lower_to_primitive(Call(C::Redistribute, S(0), V)), std::nullopt);
  EXPECT_EQ(lower_to_primitive(Call(C::Shard, V, S(0))), std::nullopt);
  EXPECT_EQ(lower_to_primitive(Call(C::Convert, R, R)), std::nullopt);
  EXPECT_EQ(lower_to_primitive(Call(C::Reinterpret, V, V)), std::nullopt);
}

// ---- mesh completeness (spec §4.3) ----------------------------------------

TEST(MeshComplete, NamesTheFirstMissingAxisInMeshOrder) {
  EXPECT_TRUE(Succeeds(check_mesh_complete(TT("{dp: R, tp: V}"), {"tp", "dp"},
                                           "x", "the current mesh")));
  EXPECT_TRUE(Succeeds(check_mesh_complete(TT("{ep: V}"), {}, "x", "m")));
  Status s = check_mesh_complete(TT("{dp: R}"), {"tp", "cp", "dp"}, "args[1]",
                                 "the current mesh {cp, dp, tp}");
  ASSERT_TRUE(FailsWith(s, ErrorKind::SpmdTypeError,
                        {"args[1] has no type for axis 'tp' of the current "
                         "mesh {cp, dp, tp}",
                         "annotate it on every mesh axis", "{tp = R}"}));
  EXPECT_EQ(s.error().axis, "tp");
  EXPECT_EQ(s.error().expected, "{cp, tp}");
  EXPECT_EQ(s.error().actual, "{dp: R}");
}

// ---- type values ----------------------------------------------------------

TEST(TypeValues, OutOfRangeKindsAreRejected) {
  const PerAxisType bad{static_cast<TypeKind>(7), 0};
  const PerAxisType worse{static_cast<TypeKind>(255), 3};
  EXPECT_FALSE(is_valid_type(bad));
  EXPECT_FALSE(is_valid_type(worse));
  for (PerAxisType t : {R, I, V, P, S(0), S(-2)}) EXPECT_TRUE(is_valid_type(t));
  for (C op :
       {C::Convert, C::Redistribute, C::AllReduce, C::AllGather,
        C::ReduceScatter, C::AllToAll, C::Reinterpret, C::Shard, C::Unshard}) {
    SCOPED_TRACE(OpName(op));
    CollectiveCall c = Call(op, bad, R);
    c.expert_mode = true;
    EXPECT_TRUE(FailsWith(check_arguments(c), ErrorKind::UsageError,
                          {std::string("src of ") + OpName(op) +
                               " is not a valid SPMD type (TypeKind value 7)",
                           "spmd::S(dim)"}));
    c = Call(op, V, worse);
    c.expert_mode = true;
    EXPECT_TRUE(FailsWith(check_arguments(c), ErrorKind::UsageError,
                          {"dst of", "TypeKind value 255"}));
  }
}

// ---- the options table ----------------------------------------------------

TEST(Options, TableIsInDeclarationOrderAndComplete) {
  const auto& table = collective_options();
  ASSERT_EQ(table.size(), static_cast<std::size_t>(kNumCollectiveOptions));
  const char* names[] = {
      "op_dtype",    "out_dtype",   "backward",          "inplace",
      "expert_mode", "gather_dim",  "scatter_dim",       "split_dim",
      "concat_dim",  "split_sizes", "input_split_sizes", "output_split_sizes"};
  for (int i = 0; i < kNumCollectiveOptions; ++i) {
    SCOPED_TRACE(names[i]);
    EXPECT_EQ(static_cast<int>(table[i].id), i);
    EXPECT_STREQ(table[i].name, names[i]);
    EXPECT_EQ(&option_info(table[i].id), &table[i]);
    EXPECT_EQ(find_option(names[i]), &table[i]);
    EXPECT_NE(std::string(table[i].meaning), "");
    EXPECT_NE(std::string(table[i].default_value), "");
  }
  EXPECT_EQ(find_option("gather_dims"), nullptr);
  EXPECT_EQ(find_option(""), nullptr);
}

TEST(Options, WhoAcceptsWhat) {
  EXPECT_EQ(accepted_options(C::AllReduce),
            "op_dtype, out_dtype, backward, inplace, expert_mode");
  EXPECT_EQ(accepted_options(C::AllGather),
            "op_dtype, out_dtype, backward, expert_mode, gather_dim, "
            "split_sizes");
  EXPECT_EQ(accepted_options(C::ReduceScatter),
            "op_dtype, out_dtype, backward, expert_mode, scatter_dim, "
            "split_sizes");
  EXPECT_EQ(accepted_options(C::AllToAll),
            "op_dtype, out_dtype, backward, expert_mode, split_dim, "
            "concat_dim, input_split_sizes, output_split_sizes");
  EXPECT_EQ(accepted_options(C::Convert),
            "op_dtype, out_dtype, backward, expert_mode, scatter_dim");
  EXPECT_EQ(accepted_options(C::Redistribute),
            "op_dtype, out_dtype, backward, expert_mode");
  EXPECT_EQ(accepted_options(C::Unshard),
            "op_dtype, out_dtype, backward, expert_mode, gather_dim, "
            "split_sizes");
}

TEST(Options, AGivenOptionTheOpDoesNotAcceptIsInvalid) {
  CollectiveCall c = Call(C::AllReduce, P, R);
  c.gather_dim = 1;
  EXPECT_TRUE(FailsWith(check_arguments(c), ErrorKind::InvalidArgument,
                        {"gather_dim is not an option of all_reduce",
                         "all_reduce accepts: op_dtype, out_dtype, backward, "
                         "inplace, expert_mode"}));
  c = Call(C::Redistribute, P, V);
  c.scatter_dim = 0;
  EXPECT_TRUE(FailsWith(check_arguments(c), ErrorKind::InvalidArgument,
                        {"scatter_dim is not an option of redistribute"}));
  c = Call(C::AllGather, S(0), R);
  c.inplace = true;
  EXPECT_TRUE(FailsWith(check_arguments(c), ErrorKind::InvalidArgument,
                        {"inplace is not an option of all_gather"}));
  c = Call(C::Convert, R, S(0));
  c.split_sizes = {1, 1};
  EXPECT_TRUE(FailsWith(check_arguments(c), ErrorKind::InvalidArgument,
                        {"split_sizes is not an option of convert"}));
  // Accepted options pass this check (the op's own rules still apply).
  c = Call(C::Convert, I, V);
  c.scatter_dim = 1;
  EXPECT_TRUE(Succeeds(check_arguments(c)));
  c = Call(C::Redistribute, P, R);
  c.has_op_dtype = c.has_out_dtype = c.expert_mode = true;
  EXPECT_TRUE(Succeeds(check_arguments(c)));
}

TEST(Options, SetOptionStoresReadValues) {
  CollectiveCall c = Call(C::AllGather, S(0), R);
  ASSERT_TRUE(Succeeds(set_option(c, O::GatherDim, OptionValue::of(0L))));
  ASSERT_TRUE(Succeeds(set_option(c, O::ExpertMode, OptionValue::of(true))));
  ASSERT_TRUE(Succeeds(
      set_option(c, O::SplitSizes, OptionValue::of(std::vector<long>{2, 1}))));
  ASSERT_TRUE(Succeeds(set_option(c, O::OutDtype, OptionValue::unread())));
  EXPECT_EQ(c.gather_dim, std::optional<long>(0));
  EXPECT_TRUE(c.expert_mode);
  EXPECT_EQ(c.split_sizes, (std::vector<long>{2, 1}));
  EXPECT_TRUE(c.has_out_dtype);
  EXPECT_FALSE(c.has_op_dtype);
  EXPECT_EQ(c.unread_options, 0u);
  for (O o : {O::GatherDim, O::ExpertMode, O::SplitSizes, O::OutDtype})
    EXPECT_TRUE(has_option(c, o));
  for (O o : {O::OpDtype, O::Backward, O::Inplace, O::ScatterDim})
    EXPECT_FALSE(has_option(c, o));
  EXPECT_TRUE(Succeeds(check_arguments(c)));

  EXPECT_TRUE(FailsWith(set_option(c, O::GatherDim, OptionValue::of(true)),
                        ErrorKind::UsageError,
                        {"option gather_dim takes a dim value"}));
  EXPECT_TRUE(FailsWith(set_option(c, O::Inplace, OptionValue::of(3L)),
                        ErrorKind::UsageError, {"inplace takes a bool"}));
  EXPECT_TRUE(FailsWith(set_option(c, O::SplitSizes, OptionValue::of(1L)),
                        ErrorKind::UsageError,
                        {"split_sizes takes a sizes value"}));
}

TEST(Options, UnreadValuesCountAsGivenWithoutInventingContents) {
  // The plugin sees `{.split_sizes = sizes}` but not `sizes`.
  CollectiveCall c = Call(C::AllGather, V, R);
  ASSERT_TRUE(Succeeds(set_option(c, O::SplitSizes, OptionValue::unread())));
  EXPECT_TRUE(c.split_sizes.empty());
  EXPECT_TRUE(has_option(c, O::SplitSizes));
  EXPECT_TRUE(FailsWith(check_arguments(c), ErrorKind::InvalidArgument,
                        {"split_sizes is only supported with src=S(i)"}));
  EXPECT_EQ(c.to_string(), "all_gather(src=V, dst=R, split_sizes=?)");

  c = Call(C::AllToAll, V, S(1));
  ASSERT_TRUE(
      Succeeds(set_option(c, O::InputSplitSizes, OptionValue::unread())));
  EXPECT_TRUE(FailsWith(check_arguments(c), ErrorKind::InvalidArgument,
                        {"only supported with src=S(0), dst=S(0)"}));

  // An unread dim: given, but the conflict check needs its value.
  c = Call(C::AllGather, S(0), R);
  ASSERT_TRUE(Succeeds(set_option(c, O::GatherDim, OptionValue::unread())));
  EXPECT_FALSE(c.gather_dim.has_value());
  EXPECT_TRUE(has_option(c, O::GatherDim));
  EXPECT_TRUE(Succeeds(check_arguments(c)));
  c.op = C::ReduceScatter;
  c.src = P;
  c.dst = S(0);
  EXPECT_TRUE(FailsWith(check_arguments(c), ErrorKind::InvalidArgument,
                        {"gather_dim is not an option of reduce_scatter"}));

  // An unread bool is taken as true: do not guess a violation.
  c = Call(C::Convert, R, I);
  ASSERT_TRUE(Succeeds(set_option(c, O::ExpertMode, OptionValue::unread())));
  EXPECT_TRUE(c.expert_mode);
  EXPECT_TRUE(Succeeds(check_arguments(c)));

  // backward options are only marked.
  c = Call(C::AllReduce, P, R);
  ASSERT_TRUE(Succeeds(set_option(c, O::Backward, OptionValue::unread())));
  EXPECT_TRUE(has_option(c, O::Backward));
  CollectiveCall plain = Call(C::AllReduce, P, R);
  EXPECT_FALSE(c == plain);
}

}  // namespace
}  // namespace spmd::core::testing

// Collectives and conversions (spec §7): the exhaustive (src, dst) legality
// table of every operation, the expert-mode gate (§7.9), the type transfer
// (§7.2), the backward (dual) operations (§7.3-§7.8, §7.13) and their
// consistency with backward_type, the redistribute routing table (§7.12),
// dims / split-size checks (§7.4-§7.6), dtype rules (§7.10).
#include <algorithm>

#include "core_test_util.h"

namespace spmd::core::testing {
namespace {

using C = Collective;

const PerAxisType kAllTypes[] = {R, I, V, P, S(0), S(1), S(-1)};
// Resolved shard dims for ndim = 2 (S(-1) -> S(1)), spec §2.3.
constexpr long kNdim = 2;

bool IsS(PerAxisType t) { return t.is_shard(); }
bool IsVS(PerAxisType t) { return t == V || IsS(t); }
bool IsRI(PerAxisType t) { return t == R || t == I; }
bool IsPV(PerAxisType t) { return t == P || t == V; }
PerAxisType Base(PerAxisType t) { return t.local(); }

// ---------------------------------------------------------------------------
// The legality tables of §7.3-§7.12, transcribed. nullopt = legal; otherwise
// the phrase the InvalidArgument must contain ("" = any message).

using Verdict = std::optional<std::string>;
const Verdict kLegal = std::nullopt;

Verdict AllReduceRule(PerAxisType src, PerAxisType dst) {  // §7.3
  if (!IsPV(src)) return std::string("must be P");         // src check first
  if (!IsRI(dst)) return std::string("must be R or I");
  return kLegal;
}

Verdict AllGatherRule(PerAxisType src, PerAxisType dst) {  // §7.4
  if (!IsVS(src)) return std::string("must be V or S(i)");
  if (!IsRI(dst)) return std::string("must be R or I");
  return kLegal;
}

Verdict ReduceScatterRule(PerAxisType src, PerAxisType dst) {  // §7.5
  if (IsRI(src)) return std::string("must be P");
  if (!IsPV(src)) return std::string("");  // "other src"
  if (!IsVS(dst)) return std::string("must be V or S(i)");
  return kLegal;
}

Verdict AllToAllRule(PerAxisType src, PerAxisType dst) {  // §7.6
  if (!IsVS(src) || !IsVS(dst)) return std::string("must be V or S(i)");
  return kLegal;
}

bool ConvertGated(PerAxisType src, PerAxisType dst) {  // §7.9
  PerAxisType s = Base(src), d = Base(dst);
  return (s == R && d == I) || (s == I && d == P) || (s == V && d == P);
}

Verdict ConvertRule(PerAxisType src, PerAxisType dst, bool expert) {  // §7.8
  if (ConvertGated(src, dst) && !expert) return std::string("expert_mode");
  PerAxisType s = Base(src), d = Base(dst);
  if (s == d) {
    if (IsS(src) && IsS(dst) && src.dim != dst.dim)
      return std::string("all_to_all");
    return kLegal;
  }
  if (s == V && (d == R || d == I)) return std::string("not supported");
  if (s == P && (d == R || d == I)) return std::string("all_reduce");
  if (s == P && d == V) return std::string("reduce_scatter");
  return kLegal;
}

bool ReinterpretGated(PerAxisType src, PerAxisType dst) {  // §7.9
  return (src == R && (dst == I || dst == P || dst == V)) ||
         (src == I && dst == R);
}

Verdict ReinterpretRule(PerAxisType src, PerAxisType dst,
                        bool expert) {  // §7.7
  if (IsS(src) || IsS(dst)) return std::string("does not support S(i)");
  if (src == dst) return kLegal;
  if (ReinterpretGated(src, dst) && !expert) return std::string("expert_mode");
  if (src == V && (dst == R || dst == I)) return std::string("not supported");
  if (src == P) return std::string("");
  return kLegal;
}

Verdict Expected(C op, PerAxisType src, PerAxisType dst, bool expert) {
  switch (op) {
    case C::AllReduce:
      return AllReduceRule(src, dst);
    case C::AllGather:
      return AllGatherRule(src, dst);
    case C::ReduceScatter:
      return ReduceScatterRule(src, dst);
    case C::AllToAll:
      return AllToAllRule(src, dst);
    case C::Convert:
      return ConvertRule(src, dst, expert);
    case C::Reinterpret:
      return ReinterpretRule(src, dst, expert);
    case C::Redistribute:
      return kLegal;  // §7.12: every cell is routed
    case C::Shard:    // §7.11: dst must be S(i), then convert (no expert mode)
      if (!IsS(dst)) return std::string("S(i)");
      return ConvertRule(src, dst, false);
    case C::Unshard:  // §7.11: src must be S(i), then all_gather
      if (!IsS(src)) return std::string("S(i)");
      return AllGatherRule(src, dst);
    default:
      return std::string("");
  }
}

// One test per (operation, src); the loop covers every dst, with and
// without expert_mode.
struct LegalityRow {
  C op;
  PerAxisType src;  // as written (S(-1) allowed)
};

std::vector<LegalityRow> LegalityRows() {
  std::vector<LegalityRow> rows;
  for (C op :
       {C::AllReduce, C::AllGather, C::ReduceScatter, C::AllToAll, C::Convert,
        C::Reinterpret, C::Redistribute, C::Shard, C::Unshard})
    for (PerAxisType src : kAllTypes) rows.push_back({op, src});
  return rows;
}

void PrintTo(const LegalityRow& r, std::ostream* os) {
  *os << OpName(r.op) << " src=" << TypeText(r.src);
}
class Legality : public ::testing::TestWithParam<LegalityRow> {};

TEST_P(Legality, SrcDstTable) {
  const LegalityRow& row = GetParam();
  for (PerAxisType dst : kAllTypes) {
    for (bool expert : {false, true}) {
      CollectiveCall call = Call(row.op, row.src, dst, expert);
      SCOPED_TRACE(CallText(call));
      // Spec: shards are resolved against x.ndim before any other check.
      Result<CollectiveCall> resolved = resolve(call, kNdim);
      ASSERT_TRUE(Succeeds(resolved));
      EXPECT_EQ(resolved.value().src,
                resolve_shard_dim(row.src, kNdim).value());
      EXPECT_EQ(resolved.value().dst, resolve_shard_dim(dst, kNdim).value());
      Verdict want =
          Expected(row.op, resolved.value().src, resolved.value().dst, expert);
      Status st = check_arguments(resolved.value());
      if (!want) {
        EXPECT_TRUE(Succeeds(st));
      } else {
        EXPECT_TRUE(FailsWith(st, ErrorKind::InvalidArgument, {*want}));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Spec7, Legality, ::testing::ValuesIn(LegalityRows()),
                         [](const auto& info) {
                           return Ident(std::string(OpName(info.param.op)) +
                                        "_src_" + TypeText(info.param.src));
                         });

TEST(Legality, InvariantToReplicateIsConvertIR) {
  EXPECT_TRUE(
      Succeeds(check_arguments(Call(C::InvariantToReplicate, I, R))));  // §7.11
}

// §7.3/§7.5: the R/I src error carries the hint towards reinterpret.
TEST(Legality, ReducingReplicatedDataHint) {
  for (C op : {C::AllReduce, C::ReduceScatter}) {
    for (PerAxisType src : {R, I}) {
      SCOPED_TRACE(CallText(Call(op, src, op == C::AllReduce ? R : V)));
      Status st = check_arguments(Call(op, src, op == C::AllReduce ? R : V));
      EXPECT_TRUE(FailsWith(st, ErrorKind::InvalidArgument,
                            {"must be P", "reinterpret"}));
    }
  }
}

// ---------------------------------------------------------------------------
// §7.9 expert mode: gated calls and the explicit not-gated list.

struct GateRow {
  C op;
  PerAxisType src, dst;
  const char* alternative;  // the gist: the usual alternative it names
};

const GateRow kGated[] = {
    {C::Reinterpret, R, I, "convert"},
    {C::Reinterpret, R, P, "convert"},
    {C::Reinterpret, I, R, "convert"},
    {C::Reinterpret, R, V, "convert"},
    {C::Convert, R, I, ""},
    {C::Convert, I, P, ""},
    {C::Convert, V, P, ""},
    {C::Convert, S(0), P, ""},
    {C::Convert, S(1), P, ""},
};

TEST(ExpertGate, GatedWithoutExpertMode) {
  for (const GateRow& g : kGated) {
    SCOPED_TRACE(CallText(Call(g.op, g.src, g.dst)));
    EXPECT_TRUE(FailsWith(check_arguments(Call(g.op, g.src, g.dst)),
                          ErrorKind::InvalidArgument,
                          {"expert_mode", g.alternative}));
    EXPECT_TRUE(Succeeds(check_arguments(Call(g.op, g.src, g.dst, true))));
  }
}

const std::pair<C, std::pair<PerAxisType, PerAxisType>> kNotGated[] = {
    {C::Convert, {I, R}},         {C::Convert, {R, V}},
    {C::Convert, {R, S(0)}},      {C::Convert, {I, V}},
    {C::Convert, {I, S(1)}},      {C::Convert, {R, P}},
    {C::Reinterpret, {V, P}},     {C::Reinterpret, {I, V}},
    {C::Reinterpret, {I, P}},     {C::AllReduce, {P, R}},
    {C::AllReduce, {P, I}},       {C::AllGather, {V, R}},
    {C::AllGather, {S(0), I}},    {C::ReduceScatter, {P, V}},
    {C::AllToAll, {S(0), S(1)}},  {C::Redistribute, {R, I}},
    {C::Redistribute, {I, P}},    {C::Redistribute, {V, P}},
    {C::Redistribute, {S(0), P}},
};

TEST(ExpertGate, NotGatedList) {
  for (const auto& [op, types] : kNotGated) {
    SCOPED_TRACE(CallText(Call(op, types.first, types.second)));
    EXPECT_TRUE(Succeeds(check_arguments(Call(op, types.first, types.second))));
  }
}

// ---------------------------------------------------------------------------
// §7.12 redistribute routing table, cell by cell.

struct Route {
  C op;
  PerAxisType src, dst;
  std::optional<long> scatter_dim;
};

struct RouteRow {
  PerAxisType src, dst;
  std::optional<Route> route;  // nullopt: no-op
};

const std::optional<Route> kNoop = std::nullopt;

const RouteRow kRoutes[] = {
    // src R
    {R, R, kNoop},
    {R, I, Route{C::Convert, R, I, {}}},
    {R, V, Route{C::Convert, R, V, {}}},
    {R, S(0), Route{C::Convert, R, S(0), {}}},
    {R, S(1), Route{C::Convert, R, S(1), {}}},
    {R, P, Route{C::Convert, R, P, {}}},
    // src I
    {I, R, Route{C::Convert, I, R, {}}},
    {I, I, kNoop},
    {I, V, Route{C::Convert, I, V, {}}},
    {I, S(1), Route{C::Convert, I, S(1), {}}},
    {I, P, Route{C::Convert, I, P, {}}},
    // src V
    {V, R, Route{C::AllGather, V, R, {}}},
    {V, I, Route{C::AllGather, V, I, {}}},
    {V, V, kNoop},
    {V, S(0), kNoop},
    {V, S(1), kNoop},
    {V, P, Route{C::Convert, V, P, {}}},
    // src S(i)
    {S(0), R, Route{C::AllGather, S(0), R, {}}},
    {S(1), I, Route{C::AllGather, S(1), I, {}}},
    {S(0), V, kNoop},
    {S(0), S(0), kNoop},
    {S(1), S(1), kNoop},
    {S(0), S(1), Route{C::AllToAll, S(0), S(1), {}}},
    {S(1), S(0), Route{C::AllToAll, S(1), S(0), {}}},
    {S(0), P, Route{C::Convert, S(0), P, {}}},
    // src P
    {P, R, Route{C::AllReduce, P, R, {}}},
    {P, I, Route{C::AllReduce, P, I, {}}},
    {P, V, Route{C::ReduceScatter, P, V, 0}},
    {P, S(0), Route{C::ReduceScatter, P, S(0), 0}},
    {P, S(1), Route{C::ReduceScatter, P, S(1), 1}},
    {P, P, kNoop},
};

void PrintTo(const RouteRow& r, std::ostream* os) {
  *os << "redistribute(" << TypeText(r.src) << "," << TypeText(r.dst) << ")";
}
class Routing : public ::testing::TestWithParam<RouteRow> {};

TEST_P(Routing, Spec7_12) {
  const RouteRow& row = GetParam();
  std::optional<CollectiveCall> got = route_redistribute(row.src, row.dst);
  CollectiveCall redistribute = Call(C::Redistribute, row.src, row.dst);
  if (!row.route) {
    EXPECT_FALSE(got.has_value()) << CallText(*got);
    EXPECT_TRUE(is_noop(redistribute));
    return;
  }
  EXPECT_FALSE(is_noop(redistribute));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->op, row.route->op) << CallText(*got);
  EXPECT_EQ(got->src, row.route->src) << CallText(*got);
  EXPECT_EQ(got->dst, row.route->dst) << CallText(*got);
  // redistribute always passes expert_mode=True when it delegates to convert.
  if (row.route->op == C::Convert) {
    EXPECT_TRUE(got->expert_mode);
  }
  if (row.route->scatter_dim) {
    EXPECT_EQ(got->scatter_dim.value_or(-99), *row.route->scatter_dim);
  }
  EXPECT_TRUE(Succeeds(check_arguments(*got))) << CallText(*got);
}

INSTANTIATE_TEST_SUITE_P(
    Spec7_12, Routing, ::testing::ValuesIn(kRoutes), [](const auto& info) {
      return Ident("redistribute_" + TypeText(info.param.src) + "->" +
                   TypeText(info.param.dst)) +
             (info.param.route
                  ? std::string("_via_") + OpName(info.param.route->op)
                  : std::string("_noop"));
    });

// ---------------------------------------------------------------------------
// §7.2 type transfer.

struct TransferRow {
  const char* what;
  CollectiveCall call;
  std::optional<const char*> input;  // nullopt: untyped
  const char* axis;
  bool strict;
  bool singleton;
  const char* want;  // nullptr: error
  std::vector<std::string> phrases;
};

TransferRow TOk(const char* what, CollectiveCall call, const char* input,
                const char* want, const char* axis = "tp") {
  return {what, call, input, axis, true, false, want, {}};
}
TransferRow TErr(const char* what, CollectiveCall call,
                 std::optional<const char*> input,
                 std::vector<std::string> phrases) {
  return {what, call, input, "tp", true, false, nullptr, std::move(phrases)};
}

std::vector<TransferRow> TransferRows() {
  std::vector<TransferRow> rows = {
      TOk("all_reduce_P_to_R", Call(C::AllReduce, P, R), "{tp: P}", "{tp: R}"),
      TOk("all_reduce_V_accepted_for_P", Call(C::AllReduce, P, R), "{tp: V}",
          "{tp: R}"),
      TOk("all_reduce_src_V", Call(C::AllReduce, V, I), "{tp: V}", "{tp: I}"),
      TOk("other_axes_untouched", Call(C::AllReduce, P, R),
          "{dp: R, tp: P, cp: V}", "{cp: V, dp: R, tp: R}"),
      TErr("all_reduce_src_V_on_P_input", Call(C::AllReduce, V, R), "{tp: P}",
           {"all_reduce", "expected input type V on axis tp, got P"}),
      TErr("all_gather_V_on_P_input", Call(C::AllGather, V, R), "{tp: P}",
           {"expected input type V on axis tp, got P"}),
      TOk("all_gather_shard_src_checks_V", Call(C::AllGather, S(0), R),
          "{tp: V}", "{tp: R}"),
      TErr("reduce_scatter_on_R_input", Call(C::ReduceScatter, P, V), "{tp: R}",
           {"expected input type P on axis tp, got R"}),
      TOk("reduce_scatter_V_accepted_for_P", Call(C::ReduceScatter, P, S(0)),
          "{tp: V}", "{tp: V}"),
      TOk("convert_R_to_shard_records_V", Call(C::Convert, R, S(0)), "{tp: R}",
          "{tp: V}"),
      TOk("convert_shard_to_P", Call(C::Convert, S(0), P, true), "{tp: V}",
          "{tp: P}"),
      TErr("convert_R_src_on_V_input", Call(C::Convert, R, V), "{tp: V}",
           {"expected input type R on axis tp, got V"}),
      TOk("redistribute_V_accepted_for_P", Call(C::Redistribute, P, R),
          "{tp: V}", "{tp: R}"),
      TOk("redistribute_noop_stamps_dst", Call(C::Redistribute, V, S(0)),
          "{tp: V}", "{tp: V}"),
      TErr("invariant_to_replicate_on_R", Call(C::InvariantToReplicate, I, R),
           "{tp: R}", {"expected input type I on axis tp, got R"}),
      TOk("invariant_to_replicate_on_I", Call(C::InvariantToReplicate, I, R),
          "{tp: I}", "{tp: R}"),
      TErr("reinterpret_V_src_on_R", Call(C::Reinterpret, V, P), "{tp: R}",
           {"expected input type V on axis tp, got R"}),
      TErr("P_not_accepted_for_V", Call(C::AllToAll, V, V), "{tp: P}",
           {"expected input type V on axis tp, got P"}),
      TErr("strict_missing_axis", Call(C::AllReduce, P, R), "{dp: P}",
           {"no type for axis", "tp"}),
      TErr("strict_untyped", Call(C::AllReduce, P, R), std::nullopt,
           {"no type for axis", "tp"}),
  };
  TransferRow permissive = {"permissive_missing_axis_unchanged",
                            Call(C::AllReduce, P, R),
                            "{dp: P}",
                            "tp",
                            false,
                            false,
                            "{dp: P}",
                            {}};
  TransferRow singleton = {"singleton_axis_skipped_even_strict",
                           Call(C::AllReduce, P, R),
                           "{dp: P}",
                           "one",
                           true,
                           true,
                           "{dp: P}",
                           {}};
  TransferRow permissive_empty = {"permissive_typed_empty_stays_empty",
                                  Call(C::AllGather, V, R),
                                  "{}",
                                  "tp",
                                  false,
                                  false,
                                  "{}",
                                  {}};
  rows.push_back(permissive);
  rows.push_back(singleton);
  rows.push_back(permissive_empty);
  return rows;
}

void PrintTo(const TransferRow& r, std::ostream* os) { *os << r.what; }
class Transfer : public ::testing::TestWithParam<TransferRow> {};

TEST_P(Transfer, Spec7_2) {
  const TransferRow& row = GetParam();
  std::optional<TensorType> input;
  if (row.input) input = TT(*row.input);
  Result<TensorType> r =
      transfer(row.call, input, row.axis, row.strict, row.singleton);
  if (row.want) {
    EXPECT_TRUE(Gives(r, row.want));
  } else {
    EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError, row.phrases));
  }
}

INSTANTIATE_TEST_SUITE_P(Spec7_2, Transfer, ::testing::ValuesIn(TransferRows()),
                         [](const auto& info) { return info.param.what; });

TEST(Transfer, PermissiveUntypedInputSucceeds) {
  EXPECT_TRUE(Succeeds(transfer(Call(C::AllReduce, P, R), std::nullopt, "tp",
                                /*strict=*/false)));
}

// ---------------------------------------------------------------------------
// Backward (dual) operations: §7.3-§7.8 tables and §7.13.

struct Dual {
  C op;
  PerAxisType src, dst;
  std::optional<bool> expert = std::nullopt;
  std::optional<long> gather_dim = std::nullopt;
  std::optional<long> scatter_dim = std::nullopt;
  std::optional<long> split_dim = std::nullopt;
  std::optional<long> concat_dim = std::nullopt;
  std::optional<std::vector<long>> split_sizes = std::nullopt;
  std::optional<std::vector<long>> input_split_sizes = std::nullopt;
  std::optional<std::vector<long>> output_split_sizes = std::nullopt;
};

struct BackwardRow {
  const char* what;
  CollectiveCall forward;
  std::vector<Dual> backward;
};

std::vector<BackwardRow> BackwardRows() {
  const std::vector<long> sizes = {3, 2, 2};
  CollectiveCall ag_uneven_R = Call(C::AllGather, S(0), R);
  ag_uneven_R.split_sizes = sizes;
  CollectiveCall ag_uneven_I = Call(C::AllGather, S(0), I);
  ag_uneven_I.split_sizes = sizes;
  CollectiveCall rs_uneven = Call(C::ReduceScatter, P, S(0));
  rs_uneven.split_sizes = sizes;
  CollectiveCall a2a_uneven = Call(C::AllToAll, S(0), S(0));
  a2a_uneven.input_split_sizes = {1, 2, 3};
  a2a_uneven.output_split_sizes = {3, 3, 3};
  CollectiveCall ag_dim = Call(C::AllGather, V, R);
  ag_dim.gather_dim = 1;
  CollectiveCall rs_dim = Call(C::ReduceScatter, P, V);
  rs_dim.scatter_dim = 1;
  CollectiveCall a2a_vv = Call(C::AllToAll, V, V);
  a2a_vv.split_dim = 1;
  a2a_vv.concat_dim = 0;

  Dual rs_sizes{C::ReduceScatter, P, S(0)};
  rs_sizes.split_sizes = sizes;
  Dual ag_sizes{C::AllGather, S(0), R};
  ag_sizes.split_sizes = sizes;
  // Only the op and sizes are specified for the local split (§7.4).
  Dual local_split{C::LocalSplit, I, S(0)};
  local_split.split_sizes = sizes;
  Dual rs_g{C::ReduceScatter, P, V};
  rs_g.scatter_dim = 1;
  Dual ag_g{C::AllGather, V, R};
  ag_g.gather_dim = 1;
  Dual a2a_swapped{C::AllToAll, V, V};
  a2a_swapped.split_dim = 0;
  a2a_swapped.concat_dim = 1;
  Dual a2a_sizes_swapped{C::AllToAll, S(0), S(0)};
  a2a_sizes_swapped.input_split_sizes = std::vector<long>{3, 3, 3};
  a2a_sizes_swapped.output_split_sizes = std::vector<long>{1, 2, 3};

  return {
      // §7.3
      {"all_reduce_P_R_self_dual",
       Call(C::AllReduce, P, R),
       {{C::AllReduce, P, R}}},
      {"all_reduce_P_I_is_convert_I_R",
       Call(C::AllReduce, P, I),
       {{C::Convert, I, R}}},
      // §7.4
      {"all_gather_V_R_is_reduce_scatter_P_V",
       Call(C::AllGather, V, R),
       {{C::ReduceScatter, P, V}}},
      {"all_gather_V_R_keeps_gather_dim", ag_dim, {rs_g}},
      {"all_gather_V_I_is_convert_I_V",
       Call(C::AllGather, V, I),
       {{C::Convert, I, V}}},
      {"all_gather_S0_R_is_reduce_scatter_P_S0",
       Call(C::AllGather, S(0), R),
       {{C::ReduceScatter, P, S(0)}}},
      {"all_gather_S1_I_is_convert_I_S1",
       Call(C::AllGather, S(1), I),
       {{C::Convert, I, S(1)}}},
      {"all_gather_uneven_R_keeps_split_sizes", ag_uneven_R, {rs_sizes}},
      {"all_gather_uneven_I_is_local_split", ag_uneven_I, {local_split}},
      // §7.5
      {"reduce_scatter_P_V_is_all_gather_V_R",
       Call(C::ReduceScatter, P, V),
       {{C::AllGather, V, R}}},
      {"reduce_scatter_keeps_scatter_dim", rs_dim, {ag_g}},
      {"reduce_scatter_P_S1_is_all_gather_S1_R",
       Call(C::ReduceScatter, P, S(1)),
       {{C::AllGather, S(1), R}}},
      {"reduce_scatter_uneven_keeps_split_sizes", rs_uneven, {ag_sizes}},
      // §7.6
      {"all_to_all_V_V_swaps_dims", a2a_vv, {a2a_swapped}},
      {"all_to_all_S0_S1_inverts",
       Call(C::AllToAll, S(0), S(1)),
       {{C::AllToAll, S(1), S(0)}}},
      {"all_to_all_uneven_swaps_split_sizes", a2a_uneven, {a2a_sizes_swapped}},
      // §7.7
      {"reinterpret_R_V_is_reinterpret_V_P",
       Call(C::Reinterpret, R, V, true),
       {{C::Reinterpret, V, P}}},
      {"reinterpret_V_P_is_expert_reinterpret_R_V",
       Call(C::Reinterpret, V, P),
       {{C::Reinterpret, R, V, true}}},
      {"reinterpret_R_P_self_dual",
       Call(C::Reinterpret, R, P, true),
       {{C::Reinterpret, R, P}}},
      {"reinterpret_R_I_is_convert_I_P",
       Call(C::Reinterpret, R, I, true),
       {{C::Convert, I, P}}},
      {"reinterpret_I_R_is_all_reduce_P_I",
       Call(C::Reinterpret, I, R, true),
       {{C::AllReduce, P, I}}},
      {"reinterpret_I_V_two_steps",
       Call(C::Reinterpret, I, V),
       {{C::Reinterpret, V, P}, {C::AllReduce, P, I}}},
      {"reinterpret_I_P_two_steps",
       Call(C::Reinterpret, I, P),
       {{C::Reinterpret, R, P}, {C::AllReduce, P, I}}},
      // §7.8
      {"convert_I_R_is_all_reduce_P_I",
       Call(C::Convert, I, R),
       {{C::AllReduce, P, I}}},
      {"convert_R_I_is_expert_convert_I_P",
       Call(C::Convert, R, I, true),
       {{C::Convert, I, P, true}}},
      {"convert_R_V_is_expert_convert_V_P",
       Call(C::Convert, R, V),
       {{C::Convert, V, P, true}}},
      {"convert_R_S0_is_expert_convert_S0_P",
       Call(C::Convert, R, S(0)),
       {{C::Convert, S(0), P, true}}},
      {"convert_I_V_is_all_gather_V_I",
       Call(C::Convert, I, V),
       {{C::AllGather, V, I}}},
      {"convert_I_S0_is_all_gather_S0_I",
       Call(C::Convert, I, S(0)),
       {{C::AllGather, S(0), I}}},
      {"convert_R_P_self_dual", Call(C::Convert, R, P), {{C::Convert, R, P}}},
      {"convert_I_P_is_expert_convert_R_I",
       Call(C::Convert, I, P, true),
       {{C::Convert, R, I, true}}},
      {"convert_V_P_is_convert_R_V",
       Call(C::Convert, V, P, true),
       {{C::Convert, R, V}}},
      {"convert_S0_P_is_convert_R_S0",
       Call(C::Convert, S(0), P, true),
       {{C::Convert, R, S(0)}}},
      // §7.11 aliases
      {"invariant_to_replicate_is_all_reduce_P_I",
       Call(C::InvariantToReplicate, I, R),
       {{C::AllReduce, P, I}}},
      {"shard_is_convert",
       Call(C::Shard, R, S(0)),
       {{C::Convert, S(0), P, true}}},
      {"unshard_is_all_gather",
       Call(C::Unshard, S(0), R),
       {{C::ReduceScatter, P, S(0)}}},
      // §7.12: redistribute's backward is its route's backward.
      {"redistribute_P_R_routes_all_reduce",
       Call(C::Redistribute, P, R),
       {{C::AllReduce, P, R}}},
      {"redistribute_V_R_routes_all_gather",
       Call(C::Redistribute, V, R),
       {{C::ReduceScatter, P, V}}},
      {"redistribute_R_I_routes_convert",
       Call(C::Redistribute, R, I),
       {{C::Convert, I, P, true}}},
      {"redistribute_S0_S1_routes_all_to_all",
       Call(C::Redistribute, S(0), S(1)),
       {{C::AllToAll, S(1), S(0)}}},
  };
}

::testing::AssertionResult MatchesDual(const CollectiveCall& got,
                                       const Dual& want) {
  auto fail = [&](const char* field) {
    return ::testing::AssertionFailure()
           << field << " differs: got " << CallText(got) << " ("
           << got.to_string() << "), want "
           << CallText(Call(want.op, want.src, want.dst));
  };
  if (got.op != want.op) return fail("op");
  if (want.op != C::LocalSplit) {
    if (got.src != want.src) return fail("src");
    if (got.dst != want.dst) return fail("dst");
  }
  if (want.expert && got.expert_mode != *want.expert)
    return fail("expert_mode");
  if (want.gather_dim && got.gather_dim != want.gather_dim)
    return fail("gather_dim");
  if (want.scatter_dim && got.scatter_dim != want.scatter_dim)
    return fail("scatter_dim");
  if (want.split_dim && got.split_dim != want.split_dim)
    return fail("split_dim");
  if (want.concat_dim && got.concat_dim != want.concat_dim)
    return fail("concat_dim");
  if (want.split_sizes && got.split_sizes != *want.split_sizes)
    return fail("split_sizes");
  if (want.input_split_sizes &&
      got.input_split_sizes != *want.input_split_sizes)
    return fail("input_split_sizes");
  if (want.output_split_sizes &&
      got.output_split_sizes != *want.output_split_sizes)
    return fail("output_split_sizes");
  return ::testing::AssertionSuccess();
}

void PrintTo(const BackwardRow& r, std::ostream* os) { *os << r.what; }
class Backward : public ::testing::TestWithParam<BackwardRow> {};

TEST_P(Backward, DualOperations) {
  const BackwardRow& row = GetParam();
  ASSERT_TRUE(Succeeds(check_arguments(row.forward)));
  std::vector<CollectiveCall> got = backward_of(row.forward);
  ASSERT_EQ(got.size(), row.backward.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("step " + std::to_string(i));
    EXPECT_TRUE(MatchesDual(got[i], row.backward[i]));
  }
}

INSTANTIATE_TEST_SUITE_P(Spec7_13, Backward,
                         ::testing::ValuesIn(BackwardRows()),
                         [](const auto& info) { return info.param.what; });

// §7.13 forward/backward pairs: the backward of the backward is the forward.
const std::pair<C, std::pair<PerAxisType, PerAxisType>> kPairs[] = {
    {C::Convert, {R, I}},   {C::Reinterpret, {R, V}},
    {C::Convert, {R, V}},   {C::Reinterpret, {R, P}},
    {C::Convert, {R, P}},   {C::Convert, {I, R}},
    {C::Convert, {I, V}},   {C::Convert, {I, P}},
    {C::AllGather, {V, R}}, {C::AllGather, {V, I}},
    {C::AllToAll, {V, V}},  {C::Reinterpret, {V, P}},
    {C::Convert, {V, P}},   {C::AllReduce, {P, R}},
    {C::AllReduce, {P, I}}, {C::ReduceScatter, {P, V}},
};

TEST(Backward, BackwardOfBackwardIsForward) {
  for (const auto& [op, types] : kPairs) {
    CollectiveCall fwd = Call(op, types.first, types.second, true);
    SCOPED_TRACE(CallText(fwd));
    std::vector<CollectiveCall> bwd = backward_of(fwd);
    ASSERT_EQ(bwd.size(), 1u);
    std::vector<CollectiveCall> bwd2 = backward_of(bwd[0]);
    ASSERT_EQ(bwd2.size(), 1u) << CallText(bwd[0]);
    EXPECT_EQ(bwd2[0].op, fwd.op) << CallText(bwd2[0]);
    EXPECT_EQ(bwd2[0].src, fwd.src) << CallText(bwd2[0]);
    EXPECT_EQ(bwd2[0].dst, fwd.dst) << CallText(bwd2[0]);
  }
}

// §7.13 consistency rule: forward X -> Y implies the backward chain maps
// backward_type(Y) -> backward_type(X), for every legal call. Excluded: the
// V-src forms of all_reduce / reduce_scatter, whose backward the spec gives as
// that of the P-src form (§7.3, §7.5); their R/V gradient is data-compatible
// but not the literal backward_type.
bool InConsistencyDomain(C op, PerAxisType src, PerAxisType dst) {
  if (op == C::InvariantToReplicate) return src == I && dst == R;
  if ((op == C::AllReduce || op == C::ReduceScatter) && src == V) return false;
  if (src == S(-1) || dst == S(-1)) return false;  // resolved calls only
  return !Expected(op, src, dst, true).has_value();
}

class Consistency : public ::testing::TestWithParam<C> {};

TEST_P(Consistency, BackwardMapsBackwardTypes) {
  int checked = 0;
  for (PerAxisType src : kAllTypes) {
    for (PerAxisType dst : kAllTypes) {
      if (!InConsistencyDomain(GetParam(), src, dst)) continue;
      CollectiveCall fwd = Call(GetParam(), src, dst, true);
      SCOPED_TRACE(CallText(fwd));
      ++checked;
      ASSERT_TRUE(Succeeds(check_arguments(fwd)));
      PerAxisType t = backward_type(dst.local());
      for (const CollectiveCall& step : backward_of(fwd)) {
        SCOPED_TRACE("dual " + CallText(step));
        ASSERT_EQ(t, step.src.local()) << "gradient type " << TypeText(t)
                                       << " does not match the dual's src";
        t = step.dst.local();
      }
      EXPECT_EQ(t, backward_type(src.local()))
          << "backward chain ends in " << TypeText(t);
    }
  }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Spec7_13, Consistency,
    ::testing::Values(C::AllReduce, C::AllGather, C::ReduceScatter, C::AllToAll,
                      C::Convert, C::Reinterpret, C::Redistribute, C::Shard,
                      C::Unshard, C::InvariantToReplicate),
    [](const auto& info) { return std::string(OpName(info.param)); });

// ---------------------------------------------------------------------------
// Dims and split sizes (§7.4-§7.6), inplace with dtypes (§7.3).

struct ArgRow {
  const char* what;
  CollectiveCall call;
  const char* phrase;  // nullptr: legal
};

std::vector<ArgRow> ArgRows() {
  auto c = [](C op, PerAxisType s, PerAxisType d) { return Call(op, s, d); };
  std::vector<ArgRow> rows;
  auto add = [&](const char* what, CollectiveCall call, const char* phrase) {
    rows.push_back({what, std::move(call), phrase});
  };
  CollectiveCall x;
  // all_gather
  x = c(C::AllGather, V, R);
  x.split_sizes = {1, 1, 1};
  add("all_gather_split_sizes_with_V", x, "only supported with src=S(i)");
  x = c(C::AllGather, S(0), R);
  x.split_sizes = {3, 2, 2};
  add("all_gather_split_sizes_with_S0", x, nullptr);
  x = c(C::AllGather, S(1), R);
  x.gather_dim = 0;
  add("all_gather_gather_dim_conflicts_with_S1", x, "conflict");
  x = c(C::AllGather, S(1), R);
  x.gather_dim = 1;
  add("all_gather_gather_dim_equal_to_S1", x, nullptr);
  x = c(C::AllGather, V, R);
  x.gather_dim = 2;
  add("all_gather_gather_dim_with_V", x, nullptr);
  x = c(C::AllGather, R, R);
  x.split_sizes = {1, 1, 1};
  add("all_gather_src_checked_before_split_sizes", x, "must be V or S(i)");
  x = c(C::AllGather, S(1), P);
  x.gather_dim = 0;
  add("all_gather_dim_conflict_before_dst", x, "conflict");
  x = c(C::AllGather, V, P);
  x.split_sizes = {1, 1, 1};
  add("all_gather_split_sizes_before_dst", x, "only supported with src=S(i)");
  // reduce_scatter: src, dst, split sizes, dim conflict.
  x = c(C::ReduceScatter, P, V);
  x.split_sizes = {1, 1, 1};
  add("reduce_scatter_split_sizes_with_V", x, "only supported with dst=S(i)");
  x = c(C::ReduceScatter, P, S(0));
  x.split_sizes = {3, 2, 2};
  add("reduce_scatter_split_sizes_with_S0", x, nullptr);
  x = c(C::ReduceScatter, P, S(1));
  x.scatter_dim = 0;
  add("reduce_scatter_scatter_dim_conflicts_with_S1", x, "conflict");
  x = c(C::ReduceScatter, P, S(1));
  x.scatter_dim = 1;
  add("reduce_scatter_scatter_dim_equal_to_S1", x, nullptr);
  x = c(C::ReduceScatter, R, R);
  add("reduce_scatter_src_before_dst", x, "must be P");
  x = c(C::ReduceScatter, P, R);
  x.split_sizes = {1, 1, 1};
  add("reduce_scatter_dst_before_split_sizes", x, "must be V or S(i)");
  x = c(C::ReduceScatter, P, V);
  x.split_sizes = {1, 1, 1};
  x.scatter_dim = 1;
  add("reduce_scatter_split_sizes_before_dim", x,
      "only supported with dst=S(i)");
  // all_to_all dims.
  x = c(C::AllToAll, S(0), S(1));
  x.split_dim = 0;
  add("all_to_all_split_dim_must_be_dst_dim", x, "conflict");
  x = c(C::AllToAll, S(0), S(1));
  x.concat_dim = 1;
  add("all_to_all_concat_dim_must_be_src_dim", x, "conflict");
  x = c(C::AllToAll, S(0), S(1));
  x.split_dim = 1;
  x.concat_dim = 0;
  add("all_to_all_matching_dims", x, nullptr);
  x = c(C::AllToAll, S(1), V);
  x.split_dim = 0;
  add("all_to_all_S_V_split_dim_must_be_src_dim", x, "conflict");
  x = c(C::AllToAll, S(1), V);
  x.split_dim = 1;
  x.concat_dim = 0;
  add("all_to_all_S_V_free_concat_dim", x, nullptr);
  x = c(C::AllToAll, V, S(1));
  x.concat_dim = 0;
  add("all_to_all_V_S_concat_dim_must_be_dst_dim", x, "conflict");
  x = c(C::AllToAll, V, S(1));
  x.split_dim = 1;
  x.concat_dim = 1;
  add("all_to_all_V_S_free_split_dim", x, nullptr);
  x = c(C::AllToAll, V, V);
  x.split_dim = 1;
  x.concat_dim = 2;
  add("all_to_all_V_V_any_dims", x, nullptr);
  // uneven all_to_all: both effective dims must be 0 (§7.6, §15.11).
  x = c(C::AllToAll, S(0), S(0));
  x.input_split_sizes = {1, 2, 3};
  x.output_split_sizes = {2, 2, 2};
  add("all_to_all_uneven_S0_S0", x, nullptr);
  x = c(C::AllToAll, V, V);
  x.input_split_sizes = {1, 2, 3};
  add("all_to_all_uneven_V_V_default_dims", x, nullptr);
  x = c(C::AllToAll, S(0), S(1));
  x.input_split_sizes = {1, 2, 3};
  add("all_to_all_uneven_needs_dims_0", x,
      "only supported with src=S(0), dst=S(0)");
  x = c(C::AllToAll, V, V);
  x.output_split_sizes = {1, 2, 3};
  x.split_dim = 1;
  add("all_to_all_uneven_V_V_split_dim_1", x,
      "only supported with src=S(0), dst=S(0)");
  // all_reduce inplace forbids dtypes.
  x = c(C::AllReduce, P, I);
  x.inplace = true;
  add("all_reduce_inplace", x, nullptr);
  x = c(C::AllReduce, P, I);
  x.inplace = true;
  x.has_op_dtype = true;
  add("all_reduce_inplace_with_op_dtype", x, "");
  x = c(C::AllReduce, P, R);
  x.inplace = true;
  x.has_out_dtype = true;
  add("all_reduce_inplace_with_out_dtype", x, "");
  x = c(C::AllReduce, P, R);
  x.has_op_dtype = true;
  x.has_out_dtype = true;
  add("all_reduce_dtypes_without_inplace", x, nullptr);
  return rows;
}

void PrintTo(const ArgRow& r, std::ostream* os) { *os << r.what; }
class Arguments : public ::testing::TestWithParam<ArgRow> {};

TEST_P(Arguments, DimsAndSplitSizes) {
  const ArgRow& row = GetParam();
  Status st = check_arguments(row.call);
  if (!row.phrase) {
    EXPECT_TRUE(Succeeds(st));
  } else {
    EXPECT_TRUE(FailsWith(st, ErrorKind::InvalidArgument, {row.phrase}));
  }
}

INSTANTIATE_TEST_SUITE_P(Spec7_4to7_6, Arguments,
                         ::testing::ValuesIn(ArgRows()),
                         [](const auto& info) { return info.param.what; });

// ---------------------------------------------------------------------------
// resolve(), defaults, names, no-ops.

TEST(Resolve, NegativeShardDims) {
  Result<CollectiveCall> r = resolve(Call(C::AllGather, S(-1), R), 2);
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r.value().src, S(1));
  EXPECT_EQ(r.value().dst, R);
  r = resolve(Call(C::AllToAll, S(-2), S(-1)), 3);
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r.value().src, S(1));
  EXPECT_EQ(r.value().dst, S(2));
  EXPECT_TRUE(FailsWith(resolve(Call(C::Convert, R, S(2)), 2),
                        ErrorKind::SpmdTypeError,
                        {"S(2) is out of bounds for tensor with ndim=2"}));
  EXPECT_TRUE(FailsWith(resolve(Call(C::AllGather, S(0), R), 0),
                        ErrorKind::SpmdTypeError, {"out of bounds"}));
  EXPECT_TRUE(FailsWith(resolve(Call(C::ReduceScatter, P, S(-3)), 2),
                        ErrorKind::SpmdTypeError, {"out of bounds"}));
}

TEST(ImpliedTypes, OnlyInvariantToReplicateTakesNoSrcDst) {
  // The C++ signatures take src and dst explicitly (the spec's Python
  // defaults of §7.1 do not exist); invariant_to_replicate implies (I, R).
  for (C op :
       {C::AllReduce, C::AllGather, C::ReduceScatter, C::AllToAll, C::Convert,
        C::Reinterpret, C::Redistribute, C::Shard, C::Unshard}) {
    SCOPED_TRACE(OpName(op));
    EXPECT_EQ(implied_types(op), std::nullopt);
  }
  auto itr = implied_types(C::InvariantToReplicate);
  ASSERT_TRUE(itr.has_value());
  EXPECT_EQ(itr->first, I);
  EXPECT_EQ(itr->second, R);
}

TEST(Names, ParseAndPrint) {
  for (C op : {C::AllReduce, C::AllGather, C::ReduceScatter, C::AllToAll,
               C::Convert, C::Reinterpret, C::Redistribute, C::Shard,
               C::Unshard, C::InvariantToReplicate}) {
    SCOPED_TRACE(OpName(op));
    EXPECT_STREQ(to_string(op), OpName(op));
    EXPECT_EQ(parse_collective(OpName(op)), std::optional<C>(op));
    EXPECT_EQ(parse_collective(std::string("spmd::") + OpName(op)),
              std::optional<C>(op));
  }
  EXPECT_EQ(parse_collective("all_reduce_"), std::nullopt);
  EXPECT_EQ(parse_collective("broadcast"), std::nullopt);
  EXPECT_EQ(parse_collective(""), std::nullopt);
}

TEST(CallToString, NamesOpAndTypes) {
  std::string s = Call(C::AllGather, S(0), R).to_string();
  EXPECT_TRUE(Contains(s, "all_gather"));
  EXPECT_TRUE(Contains(s, "src=S(0)"));
  EXPECT_TRUE(Contains(s, "dst=R"));
}

TEST(CallEquality, ComparesOptions) {
  CollectiveCall a = Call(C::AllGather, V, R), b = a;
  EXPECT_TRUE(a == b);
  b.gather_dim = 1;
  EXPECT_FALSE(a == b);
  b = a;
  b.dst = I;
  EXPECT_FALSE(a == b);
}

TEST(Noop, Spec7_7_and_7_8) {
  // convert: every same-base pair except S(i)->S(j) returns x unchanged.
  EXPECT_TRUE(is_noop(Call(C::Convert, R, R)));
  EXPECT_TRUE(is_noop(Call(C::Convert, P, P)));
  EXPECT_TRUE(is_noop(Call(C::Convert, V, S(0))));
  EXPECT_TRUE(is_noop(Call(C::Convert, S(1), V)));
  EXPECT_TRUE(is_noop(Call(C::Convert, S(1), S(1))));
  EXPECT_FALSE(is_noop(Call(C::Convert, R, V)));
  EXPECT_FALSE(is_noop(Call(C::Convert, I, R)));
  // reinterpret: src == dst.
  for (PerAxisType t : {R, I, V, P}) {
    SCOPED_TRACE(TypeText(t));
    EXPECT_TRUE(is_noop(Call(C::Reinterpret, t, t)));
  }
  EXPECT_FALSE(is_noop(Call(C::Reinterpret, V, P)));
  // collectives always communicate.
  EXPECT_FALSE(is_noop(Call(C::AllReduce, P, R)));
  EXPECT_FALSE(is_noop(Call(C::AllToAll, V, V)));
  EXPECT_FALSE(is_noop(Call(C::AllGather, V, I)));
}

// ---------------------------------------------------------------------------
// §7.10 dtypes.

TEST(Dtypes, IsReducing) {
  const std::pair<CollectiveCall, bool> rows[] = {
      {Call(C::AllReduce, P, R), true},
      {Call(C::AllReduce, P, I), true},
      {Call(C::ReduceScatter, P, V), true},
      {Call(C::ReduceScatter, P, S(0)), true},
      {Call(C::Convert, R, V), true},
      {Call(C::Convert, I, V), true},
      {Call(C::Convert, R, S(0)), true},
      {Call(C::Convert, I, S(1)), true},
      {Call(C::Shard, R, S(0)), true},
      {Call(C::AllGather, V, R), false},
      {Call(C::AllGather, S(0), I), false},
      {Call(C::Unshard, S(0), R), false},
      {Call(C::AllToAll, V, V), false},
      {Call(C::Reinterpret, V, P), false},
      {Call(C::Reinterpret, I, V), false},
      {Call(C::Reinterpret, R, P, true), false},
      {Call(C::Convert, R, P), false},
      {Call(C::Convert, V, P, true), false},
      {Call(C::Convert, I, R), false},
      {Call(C::Convert, R, I, true), false},
      {Call(C::InvariantToReplicate, I, R), false},
  };
  for (const auto& [call, want] : rows) {
    SCOPED_TRACE(CallText(call));
    EXPECT_EQ(is_reducing(call), want);
  }
}

TEST(Dtypes, BackwardReducesGuard) {
  const std::pair<CollectiveCall, bool> rows[] = {
      {Call(C::AllReduce, P, R), true},
      {Call(C::AllGather, V, R), true},
      {Call(C::AllGather, S(0), R), true},
      {Call(C::Unshard, S(0), R), true},
      {Call(C::Convert, I, R), true},
      {Call(C::InvariantToReplicate, I, R), true},
      {Call(C::Reinterpret, I, R, true), true},
      {Call(C::AllReduce, P, I), false},
      {Call(C::ReduceScatter, P, V), false},
      {Call(C::AllToAll, V, V), false},
      {Call(C::Convert, I, V), false},
      {Call(C::Reinterpret, I, V), false},  // §15.6/§7.10: not guarded
      {Call(C::Reinterpret, I, P), false},
      {Call(C::AllGather, V, I), false},
  };
  for (const auto& [call, want] : rows) {
    SCOPED_TRACE(CallText(call));
    EXPECT_EQ(backward_reduces(call), want);
  }
}

TEST(Dtypes, PlanNeitherOpOnlyBoth) {
  for (CollectiveCall call :
       {Call(C::AllReduce, P, R), Call(C::AllGather, V, I)}) {
    SCOPED_TRACE(CallText(call));
    DtypePlan p = plan_dtypes(call, 32, 32);
    EXPECT_EQ(p.op, DtypeChoice::Input);
    EXPECT_EQ(p.out, DtypeChoice::Input);
    call.has_op_dtype = true;
    p = plan_dtypes(call, 32, 32);
    EXPECT_EQ(p.op, DtypeChoice::Op);
    EXPECT_EQ(p.out, DtypeChoice::Op);
    call.has_out_dtype = true;
    p = plan_dtypes(call, 32, 16);
    EXPECT_EQ(p.op, DtypeChoice::Op);
    EXPECT_EQ(p.out, DtypeChoice::Out);
  }
}

TEST(Dtypes, PlanOutOnly) {
  // Reducing op: operate in d_in, cast the result (Y006, Y013).
  for (CollectiveCall call :
       {Call(C::AllReduce, P, I), Call(C::ReduceScatter, P, V),
        Call(C::Convert, R, S(0))}) {
    SCOPED_TRACE(CallText(call));
    call.has_out_dtype = true;
    DtypePlan p = plan_dtypes(call, 32, 16);
    EXPECT_EQ(p.op, DtypeChoice::Input);
    EXPECT_EQ(p.out, DtypeChoice::Out);
  }
  // Non-reducing: operate in the narrower of d_in and out (Y007).
  for (CollectiveCall call :
       {Call(C::AllGather, S(0), I), Call(C::AllToAll, V, V),
        Call(C::Reinterpret, V, P)}) {
    SCOPED_TRACE(CallText(call));
    call.has_out_dtype = true;
    DtypePlan p = plan_dtypes(call, 32, 16);  // out narrower
    EXPECT_EQ(p.op, DtypeChoice::Out);
    EXPECT_EQ(p.out, DtypeChoice::Out);
    p = plan_dtypes(call, 16, 32);  // input narrower
    EXPECT_EQ(p.op, DtypeChoice::Input);
    EXPECT_EQ(p.out, DtypeChoice::Out);
  }
}

}  // namespace
}  // namespace spmd::core::testing

// Collectives in global mode, local_axes and local_map boundaries (spec
// §12.3-§12.5).
#include <spmd/core/global_collectives.h>

#include <algorithm>
#include <set>

namespace spmd::core {
namespace {

TypeError error(ErrorKind kind, std::string message, std::string axis = {},
                std::string fix = {}) {
  TypeError e;
  e.kind = kind;
  e.message = std::move(message);
  e.axis = std::move(axis);
  e.fix = std::move(fix);
  return e;
}

std::string S_text(long d) { return "S(" + std::to_string(d) + ")"; }

// How the collective changes the tensor's rank (spec §2.2: V stacks/unbinds
// along a dim, S(i) keeps the rank): +1 gathers a new dim, -1 removes one.
int rank_delta(const CollectiveCall& c) {
  if (c.op == Collective::Reinterpret) return 0;  // data untouched
  auto is_rep = [](PerAxisType t) {
    return t.kind == TypeKind::Replicate || t.kind == TypeKind::Invariant;
  };
  bool src_v = c.src.kind == TypeKind::Varying;
  bool dst_v = c.dst.kind == TypeKind::Varying;
  if (src_v && is_rep(c.dst)) return +1;
  if (dst_v && (is_rep(c.src) || c.src.kind == TypeKind::Partial)) return -1;
  return 0;
}

long stack_dim(const CollectiveCall& c) {
  if (c.op == Collective::AllGather && c.gather_dim) return *c.gather_dim;
  if (c.op == Collective::ReduceScatter && c.scatter_dim) return *c.scatter_dim;
  return 0;
}

}  // namespace

Status check_innermost(std::string_view op, std::string_view axis,
                       const SpecEntry& entry, long dim) {
  return check_innermost_group(op, axis, {std::string(axis)}, entry, dim);
}

Status check_innermost_group(std::string_view op, std::string_view axis,
                             const std::vector<std::string>& group,
                             const SpecEntry& entry, long dim) {
  SpecEntry on_dim;  // the group's axes that shard this dim, outer to inner
  for (const auto& a : group)
    if (std::find(entry.begin(), entry.end(), a) != entry.end())
      on_dim.push_back(a);
  if (on_dim.empty() ||
      std::equal(on_dim.rbegin(), on_dim.rend(), entry.rbegin()))
    return Ok{};
  std::string tuple = "(";
  for (std::size_t k = 0; k < entry.size(); ++k)
    tuple += (k ? ", " : "") + entry[k];
  tuple += ")";
  const std::string& inner = entry.back();
  const bool one = group.size() == 1;
  std::string what = one ? "it is not the innermost axis"
                         : "its axes are not the innermost axes, in order,";
  return error(ErrorKind::RedistributeError,
               std::string(op) + " on axis " + std::string(axis) +
                   " is not allowed because " + what +
                   " in its PartitionSpec group " + tuple + " (dim " +
                   std::to_string(dim) + "); only the innermost axis (" +
                   inner + ") can be redistributed directly",
               one ? std::string(axis) : on_dim.front(),
               "first move " + inner + " off the dim (e.g. all_gather on " +
                   inner + "), or use local_map");
}

DimMatch compare_shard_dims(long a, long b, std::optional<long> rank) {
  if (rank) {
    auto resolve = [&](long d) { return d < 0 ? d + *rank : d; };
    return resolve(a) == resolve(b) ? DimMatch::Same : DimMatch::Different;
  }
  if ((a < 0) != (b < 0)) return DimMatch::Unknown;
  return a == b ? DimMatch::Same : DimMatch::Different;
}

namespace {

// A src = S(i) given without a gather or split dim.
bool plain_shard_src(const CollectiveCall& call) {
  return call.src.is_shard() && !call.gather_dim && !call.split_dim;
}

std::string gather_fix(std::string_view axis, long d) {
  return "spmd::all_gather(x, " + std::string(axis) + ", " + S_text(d) + ", R)";
}

// "reinterpret as P of" / "all_reduce with src = P on", as a message starts.
std::string pending_sum_use(const CollectiveCall& call) {
  if (call.op == Collective::Reinterpret) return "reinterpret as P of";
  return std::string(to_string(call.op)) + " with src = P on";
}

}  // namespace

bool src_names_other_dim(const CollectiveCall& call, long shard,
                         std::optional<long> rank) {
  return plain_shard_src(call) &&
         compare_shard_dims(call.src.dim, shard, rank) == DimMatch::Different;
}

std::optional<TypeError> src_shard_rank_dependent(const CollectiveCall& call,
                                                  long shard,
                                                  std::optional<long> rank) {
  if (!plain_shard_src(call) ||
      compare_shard_dims(call.src.dim, shard, rank) != DimMatch::Unknown)
    return std::nullopt;
  TypeError e;
  e.message = "src " + S_text(call.src.dim) + " and its shard " +
              S_text(shard) +
              " are one dim only for some ranks, and its rank is unknown";
  return e;
}

bool wants_pending_sum(const CollectiveCall& call) {
  return call.src.kind == TypeKind::Partial ||
         (call.op == Collective::Reinterpret &&
          call.dst.kind == TypeKind::Partial);
}

Status check_sharded_input(const CollectiveCall& call, std::string_view axis,
                           long shard, std::optional<long> rank) {
  if (call.expert_mode) return Ok{};
  const std::string a(axis);
  const std::string d = std::to_string(shard);
  TypeError e;
  if (src_names_other_dim(call, shard, rank)) {
    const std::string s = std::to_string(call.src.dim);
    e = error(
        ErrorKind::SpmdTypeError,
        std::string(to_string(call.op)) + " expects its input sharded on dim " +
            s + " on axis " + a + " (src = " + S_text(call.src.dim) +
            "), but it is sharded on dim " + d + " (" + S_text(shard) + ")",
        a,
        "gather along dim " + d + ", where it is sharded (" +
            gather_fix(axis, shard) + "), or use src = " + S_text(shard));
    e.expected = S_text(call.src.dim);
  } else if (wants_pending_sum(call)) {
    e = error(ErrorKind::SpmdTypeError,
              pending_sum_use(call) + " a tensor sharded on dim " + d +
                  " on axis " + a + " (" + S_text(shard) +
                  "): a shard is not a pending sum",
              a,
              "gather along dim " + d + " (" + gather_fix(axis, shard) +
                  "); a sum of partial products needs the contraction dim "
                  "sharded on both operands");
    e.expected = "P";
  } else {
    return Ok{};
  }
  e.actual = S_text(shard);
  return e;
}

Status check_unmasked_rows_input(const CollectiveCall& call,
                                 std::string_view axis) {
  if (call.expert_mode || !wants_pending_sum(call)) return Ok{};
  const std::string a(axis);
  TypeError e = error(
      ErrorKind::SpmdTypeError,
      pending_sum_use(call) +
          " rows looked up in a table sharded by rows on axis " + a +
          " (S(0)) whose rows for indices outside this rank's shard are not "
          "zeroed: the sum over " +
          a + " would add every rank's row, not only the owner's",
      a,
      "zero them first, e.g. rows.masked_fill(outside.unsqueeze(-1), 0.0) "
      "where outside marks the indices this rank does not hold, or multiply "
      "by a 0/1 mask of the indices it holds that this function computes "
      "by comparisons (rows * (~outside).unsqueeze(-1)); a mask passed in "
      "as a parameter is not known to be 0/1");
  e.expected = "P";
  e.actual = "V";
  return e;
}

Status check_asserted_shard_dim(std::string_view axis, long have, long asserted,
                                std::optional<long> rank) {
  if (compare_shard_dims(have, asserted, rank) != DimMatch::Different)
    return Ok{};
  TypeError e = error(ErrorKind::SpmdTypeError,
                      "it is sharded on dim " + std::to_string(have) +
                          ", not " + std::to_string(asserted),
                      std::string(axis));
  e.expected = S_text(asserted);
  e.actual = S_text(have);
  return e;
}

Status check_asserted_partial(std::string_view axis, long have) {
  const std::string a(axis);
  const std::string d = std::to_string(have);
  TypeError e =
      error(ErrorKind::SpmdTypeError,
            "it is sharded on dim " + d + ": a shard is not a pending sum", a,
            "assert what it is (" + a + " = " + S_text(have) +
                "), or gather it along dim " + d + " first (" +
                gather_fix(axis, have) +
                "); a value is P only where its producer makes it "
                "one, e.g. a contraction over a dim sharded on "
                "both operands");
  e.expected = "P";
  e.actual = S_text(have);
  return e;
}

bool shard_dim_needed(const CollectiveCall& call, ShardLossReason why) {
  if (call.expert_mode) return false;
  if (call.src.is_shard()) return true;
  if (call.src.kind != TypeKind::Partial) return false;
  return why != ShardLossReason::DeclaredV;
}

TypeError shard_loss(ShardLossReason why, std::string_view op,
                     std::string_view axis, std::size_t operand, long dim) {
  const std::string arg = "args[" + std::to_string(operand) + "]";
  const std::string o(op), a(axis);
  switch (why) {
    case ShardLossReason::OperandShardUnknown:
      return error(ErrorKind::SpmdTypeError,
                   arg + " is V on this axis with no known shard dim", a);
    case ShardLossReason::OperandRankUnknown:
      return error(ErrorKind::SpmdTypeError,
                   arg + " is " + S_text(dim) +
                       " but its rank is unknown, so " + o +
                       " cannot place the shard",
                   a,
                   "annotate the operand's rank, e.g. [[spmd::type(" + a +
                       " = " + S_text(dim) + ", spmd::rank(3))]]");
    case ShardLossReason::OpRejected:
      return error(ErrorKind::SpmdTypeError, "the op is rejected on this axis",
                   a);
    case ShardLossReason::ResultRankUnknown:
      return error(ErrorKind::SpmdTypeError, "the result's rank is unknown", a);
    case ShardLossReason::RuleNeedsRank:
      return error(ErrorKind::SpmdTypeError,
                   arg + " has no known rank, which the sharding rule of " + o +
                       " needs",
                   a,
                   "annotate its rank, e.g. [[spmd::type(" + a +
                       " = ..., spmd::rank(3))]]");
    case ShardLossReason::OpDidNotSay:
      return error(ErrorKind::SpmdTypeError,
                   "the op that made it did not say where", a);
    case ShardLossReason::DeclaredV:
      return error(ErrorKind::SpmdTypeError, "its type says V, not S(i)", a);
    case ShardLossReason::RuleUndecided:
      break;
  }
  return error(ErrorKind::SpmdTypeError,
               "the core's sharding rule for " + o +
                   " could not decide (a size or dim argument is not a "
                   "constant)",
               a);
}

namespace {

// §12.4: a collective axis made of local and global axes has no policy.
Status check_axis_policies(const std::string& op, std::string_view axis,
                           const std::vector<std::string>& axes,
                           const GlobalContext& ctx) {
  if (!ctx.global) return Ok{};
  std::vector<std::string> g, l;
  for (const auto& a : axes) (ctx.is_global(a) ? g : l).push_back(a);
  if (g.empty() || l.empty()) return Ok{};
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& a : v) s += (s.empty() ? "" : ", ") + a;
    return s;
  };
  return error(ErrorKind::SpmdTypeError,
               op + ": collective axis " + std::string(axis) +
                   " spans mesh axes with mixed typechecking policies: "
                   "local axes (" +
                   join(l) + ") and global axes (" + join(g) + ")",
               std::string(axis),
               "pass a collective axis whose component axes are all "
               "local or all global");
}

// §7.2: the local transfer, axis by axis.
Result<TensorType> transfer_local_map(
    const CollectiveCall& call, const std::optional<GlobalType>& input,
    std::string_view axis, const std::vector<std::string>& resolved_axes,
    const GlobalContext& ctx, bool axis_is_singleton) {
  std::optional<TensorType> local_in;
  if (input) local_in = input->local;
  // A global axis's shard dim, for the messages (S(k), not V).
  auto shard_of = [&](std::string_view a) -> std::optional<long> {
    if (!input || !input->spec || !ctx.global || !ctx.is_global(a))
      return std::nullopt;
    return input->spec->dim_of(a);
  };
  if (resolved_axes.empty())
    return transfer(call, local_in, axis, ctx.local.strict, axis_is_singleton,
                    shard_of(axis));
  TensorType local_out = local_in.value_or(TensorType{});
  for (const auto& a : resolved_axes) {
    // [axis] itself keeps the collective's singleton flag (a size-1 axis has
    // no entry in the type to transfer); sub-axes of a flattened axis do not.
    auto r = transfer(call, local_out, a, ctx.local.strict,
                      axis_is_singleton && a == axis, shard_of(a));
    if (!r) return r.error();
    local_out = *r;
  }
  return local_out;
}

// src = S(i) must be the input's shard `in_shard` on axis `a`.
Status check_src_is_input_shard(const CollectiveCall& call,
                                const std::string& op, const std::string& a,
                                const GlobalType& input, long in_shard,
                                const Shape& shape) {
  std::optional<long> want;
  if (shape.rank_known()) {
    auto r = resolve_shard_dim(call.src, shape.rank());
    if (!r) {
      TypeError e = r.error();
      e.axis = a;
      return e;
    }
    want = r->dim;
  } else if (call.src.dim >= 0) {
    want = call.src.dim;
  }
  if (!want || *want == in_shard) return Ok{};
  TypeError e = error(ErrorKind::SpmdTypeError,
                      op + ": expected input shard " + S_text(*want) +
                          " on axis " + a + ", got " + S_text(in_shard) +
                          " (the input is " + input.spec->to_string() + ")",
                      a,
                      "use src=" + S_text(in_shard) + " (" + op +
                          " along dim " + std::to_string(in_shard) +
                          ", where the input is sharded), "
                          "or move the shard first with all_to_all");
  e.expected = S_text(*want);
  e.actual = S_text(in_shard);
  return e;
}

// Issue #11: a known shard `in_shard` of axis `a` is not a pending sum.
Status check_shard_not_pending_sum(const CollectiveCall& call,
                                   const std::string& a,
                                   const GlobalType& input, long in_shard) {
  bool wants_partial = (call.src.kind == TypeKind::Partial &&
                        call.op != Collective::Reinterpret) ||
                       (call.op == Collective::Reinterpret &&
                        call.src.kind == TypeKind::Varying &&
                        call.dst.kind == TypeKind::Partial);
  if (!wants_partial || call.expert_mode) return Ok{};
  // The call as written (src and dst as given) and the rule (§12.6): a known
  // shard is not a pending sum, neither for src=P nor as reinterpret's V->P.
  const std::string rule =
      call.op == Collective::Reinterpret
          ? "global mode does not reinterpret a known shard as a pending sum "
            "(V -> P), outside expert_mode"
          : "global mode does not accept a known shard where src=" +
                to_string(call.src) + " expects a pending sum";
  TypeError e = error(
      ErrorKind::SpmdTypeError,
      call.to_string() + ": the input is sharded on axis " + a + " (" +
          S_text(in_shard) + ", " + input.spec->to_string() +
          "), not a pending sum: " + rule,
      a,
      call.op == Collective::AllReduce
          ? "to collect the shards use spmd::all_gather(x, " + a + ", " +
                S_text(in_shard) +
                ", R); if the value really is a partial sum, its producer "
                "should make it P (a contraction over the sharded dim does)"
          : "to collect the shards use all_gather with src=" +
                S_text(in_shard) +
                "; reinterpreting a shard as a partial sum needs "
                "expert_mode");
  e.expected = "P";
  e.actual = S_text(in_shard);
  return e;
}

// §12.4's input checks on one global axis `a` of the input.
Status check_global_input_axis(const CollectiveCall& call,
                               const std::string& op, const std::string& a,
                               std::string_view axis,
                               const std::vector<std::string>& axes,
                               const GlobalType& input, const Shape& shape,
                               const GlobalContext& ctx) {
  PerAxisType in_t = *input.local.get(a);
  std::optional<long> in_shard;
  if (input.spec) {
    if (auto d = input.spec->dim_of(a)) {
      auto inner =
          check_innermost_group(op, axis, axes, input.spec->entry(*d), *d);
      if (!inner) return inner.error();
      in_shard = *d;
    }
  }
  bool unknown_shard = input.unknown_shards.count(a) != 0;
  if (in_t.kind == TypeKind::Varying && !in_shard && !unknown_shard) {
    return error(ErrorKind::SpmdTypeError,
                 op + ": axis " + a +
                     " is global but the input has V without a "
                     "corresponding S(i) in its PartitionSpec",
                 a, "use assert_type() to give the input an S(i) on " + a);
  }
  if (!in_shard) return Ok{};
  if (call.src.is_shard()) {
    auto src = check_src_is_input_shard(call, op, a, input, *in_shard, shape);
    if (!src) return src;
  }
  if (ctx.shard_is_not_partial && in_t.kind == TypeKind::Varying)
    return check_shard_not_pending_sum(call, a, input, *in_shard);
  return Ok{};
}

// The output without a known rank: the spec is lost, the shards of the
// collective's axes (for dst S(d)) and of the other axes become unknown.
GlobalType unranked_output(const CollectiveCall& call, const GlobalType& input,
                           const std::vector<std::string>& axes,
                           const GlobalContext& ctx, GlobalType out) {
  out.spec.reset();
  for (const auto& a : axes)
    if (ctx.is_global(a)) {
      out.unknown_shards.erase(a);
      if (call.dst.is_shard()) out.unknown_shards.insert(a);
    }
  if (input.spec)
    for (const auto& a : input.spec->axes())
      if (std::find(axes.begin(), axes.end(), a) == axes.end())
        out.unknown_shards.insert(a);
  return out;
}

// The output spec: drop the axes, fix the rank (a stacked dim added or
// removed), add dst S(d) innermost.
Result<PartitionSpec> output_spec(const CollectiveCall& call,
                                  const GlobalType& input,
                                  std::string_view axis,
                                  const std::vector<std::string>& axes,
                                  long in_rank, const GlobalContext& ctx) {
  const std::string op = to_string(call.op);
  int delta = rank_delta(call);
  long out_rank = in_rank + delta;
  PartitionSpec spec = input.spec ? *input.spec : PartitionSpec::none(in_rank);
  for (const auto& a : axes)
    if (ctx.is_global(a)) spec = spec.without(a);
  std::vector<SpecEntry> entries = spec.entries();
  if (delta == +1) {
    long g = stack_dim(call);
    if (g < 0) g += out_rank;
    g = std::clamp(g, 0L, static_cast<long>(entries.size()));
    entries.insert(entries.begin() + g, SpecEntry{});
  } else if (delta == -1 && !entries.empty()) {
    long d = stack_dim(call);
    if (d < 0) d += in_rank;
    d = std::clamp(d, 0L, static_cast<long>(entries.size()) - 1);
    if (!entries[d].empty())
      return error(ErrorKind::SpmdTypeError,
                   op + " removes dim " + std::to_string(d) + ", which axis " +
                       entries[d].back() + " shards",
                   entries[d].back(), "gather that axis first");
    entries.erase(entries.begin() + d);
  }
  spec = PartitionSpec(entries);
  if (call.dst.is_shard()) {
    auto r = resolve_shard_dim(call.dst, out_rank);
    if (!r) {
      TypeError e = r.error();
      e.axis = std::string(axis);
      return e;
    }
    for (const auto& a : axes)
      if (ctx.is_global(a)) spec = spec.with_innermost(r->dim, a);
  }
  return spec;
}

}  // namespace

Result<GlobalType> transfer_global(
    const CollectiveCall& call, const std::optional<GlobalType>& input,
    std::string_view axis, const std::vector<std::string>& resolved_axes,
    const Shape& shape, const GlobalContext& ctx, bool axis_is_singleton) {
  const std::string op = to_string(call.op);
  std::vector<std::string> axes = resolved_axes;
  if (axes.empty()) axes.push_back(std::string(axis));
  auto policies = check_axis_policies(op, axis, axes, ctx);
  if (!policies) return policies.error();
  auto local = transfer_local_map(call, input, axis, resolved_axes, ctx,
                                  axis_is_singleton);
  if (!local) return local.error();
  GlobalType out;
  out.local = *local;
  if (!input) return out;
  out.spec = input->spec;
  out.unknown_shards = input->unknown_shards;
  out.unmasked_rows = input->unmasked_rows;
  // A local axis keeps local semantics; the spec of global axes is kept.
  if (!ctx.global) return out;
  for (const auto& a : axes) {
    if (!ctx.is_global(a) || !input->local.has(a)) continue;
    if (input->unmasked_rows.count(a)) {
      // Not a pending sum until the rows are zeroed (infer_global).
      auto rows = check_unmasked_rows_input(call, a);
      if (!rows) return rows.error();
    }
    auto checked =
        check_global_input_axis(call, op, a, axis, axes, *input, shape, ctx);
    if (!checked) return checked.error();
  }
  if (!shape.rank_known())
    return unranked_output(call, *input, axes, ctx, std::move(out));
  auto spec = output_spec(call, *input, axis, axes, shape.rank(), ctx);
  if (!spec) return spec.error();
  for (const auto& a : axes) {
    out.unknown_shards.erase(a);
    out.unmasked_rows.erase(a);
  }
  out.spec = *spec;
  return out;
}

Status check_local_axes(const std::vector<std::string>& mesh_axes,
                        const std::vector<std::string>& local_axes) {
  std::set<std::string> seen;
  for (const auto& a : local_axes) {
    if (std::find(mesh_axes.begin(), mesh_axes.end(), a) == mesh_axes.end())
      return error(ErrorKind::InvalidArgument,
                   "local_axes contains a name not present in this mesh: " + a,
                   a, "name axes of the mesh passed to set_current_mesh");
    if (!seen.insert(a).second)
      return error(
          ErrorKind::InvalidArgument,
          "local_axes must not contain duplicate axes; " + a + " appears twice",
          a);
  }
  for (std::size_t k = 0; k < local_axes.size(); ++k) {
    if (!seen.count(mesh_axes[k])) {
      std::string mesh, local;
      for (const auto& a : mesh_axes) mesh += (mesh.empty() ? "" : ", ") + a;
      for (const auto& a : local_axes) local += (local.empty() ? "" : ", ") + a;
      return error(
          ErrorKind::InvalidArgument,
          "local_axes must come before all global axes in "
          "outer-to-inner mesh order; got local_axes=(" +
              local + ") for mesh=(" + mesh + ")",
          mesh_axes[k],
          "list an outer prefix of the mesh (" + mesh_axes[0] + ", ...)");
    }
  }
  return Ok{};
}

Result<bool> axis_is_global(const GlobalContext& ctx, std::string_view axis) {
  if (!ctx.global) return false;
  if (ctx.local_axes.empty()) return true;
  const auto& mesh = ctx.local.mesh_axes;
  if (!mesh || std::find(mesh->begin(), mesh->end(), axis) == mesh->end())
    return error(ErrorKind::SpmdTypeError,
                 "axis " + std::string(axis) +
                     " is not in the current mesh, so its local/global "
                     "typechecking policy is undefined",
                 std::string(axis));
  return ctx.is_global(axis);
}

GlobalContext local_region(const GlobalContext& ctx) {
  GlobalContext c = ctx;
  c.global = false;
  return c;
}

Result<std::vector<std::optional<GlobalType>>> check_boundary(
    const std::vector<BoundaryValue>& values,
    const std::vector<BoundaryType>& types, std::string_view what,
    std::string_view fn, bool in_types_is_infer) {
  std::string prefix = "local_map[" + std::string(fn) + "]: ";
  std::vector<std::optional<GlobalType>> out;
  if (in_types_is_infer) {
    for (const auto& v : values) out.push_back(v.type);
    return out;
  }
  if (values.size() != types.size())
    return error(
        ErrorKind::SpmdTypeError,
        prefix + std::string(what) + "_types structure does not match the " +
            std::string(what) + "s: " + std::to_string(types.size()) +
            " leaves for " + std::to_string(values.size()) + " values");
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto& v = values[i];
    const auto& t = types[i];
    std::string leaf = std::string(what) + " " + std::to_string(i);
    if (t.kind == BoundaryType::Kind::Infer)
      return error(ErrorKind::SpmdTypeError,
                   prefix + std::string(what) +
                       "_types contains Infer at a leaf (" + leaf +
                       "); Infer is only allowed as the bare in_types");
    if (t.kind == BoundaryType::Kind::NonTensor) {
      if (v.is_tensor)
        return error(ErrorKind::SpmdTypeError,
                     prefix + leaf + " is a tensor but its " +
                         std::string(what) +
                         "_types leaf is None (non-tensor expected)");
      out.emplace_back();
      continue;
    }
    if (!v.is_tensor)
      return error(ErrorKind::SpmdTypeError,
                   prefix + leaf + " is not a tensor but its " +
                       std::string(what) + "_types leaf is a type");
    auto asserted = make_global(t.entries, t.spec, v.shape);
    if (!asserted) {
      TypeError e = asserted.error();
      e.message = prefix + leaf + ": " + e.message;
      return e;
    }
    auto r = assert_global(v.type, *asserted);
    if (!r) {
      TypeError e = r.error();
      e.message = prefix + leaf + ": " + e.message;
      return e;
    }
    out.emplace_back(*r);
  }
  return out;
}

Result<std::vector<std::optional<GlobalType>>> stamp_outputs(
    const std::vector<BoundaryValue>& body_results,
    const std::vector<BoundaryType>& out_types, std::string_view fn) {
  std::vector<BoundaryValue> local = body_results;
  for (auto& v : local)
    if (v.type) {
      v.type->spec.reset();  // the body ran in local mode
      v.type->unknown_shards.clear();
    }
  return check_boundary(local, out_types, "output", fn);
}

Status check_no_typecheck_boundary(bool has_in_types, bool has_out_types) {
  if (has_in_types && !has_out_types)
    return error(ErrorKind::UsageError,
                 "no_typecheck: out_types is required for typed no_typecheck "
                 "(in_types given without out_types)",
                 {}, "pass out_types=..., or call no_typecheck() bare");
  return Ok{};
}

}  // namespace spmd::core

// Collective and conversion rules (spec §7): argument legality, the
// expert-mode gate, type transfer, backward duals, redistribute routing and
// dtype planning.
#include <spmd/core/collective_options.h>
#include <spmd/core/collectives.h>

#include <algorithm>

namespace spmd::core {

using spmd::types::I;
using spmd::types::P;
using spmd::types::R;
using spmd::types::S;
using spmd::types::V;

const char* to_string(Collective c) {
  switch (c) {
    case Collective::AllReduce:
      return "all_reduce";
    case Collective::AllGather:
      return "all_gather";
    case Collective::ReduceScatter:
      return "reduce_scatter";
    case Collective::AllToAll:
      return "all_to_all";
    case Collective::Convert:
      return "convert";
    case Collective::Reinterpret:
      return "reinterpret";
    case Collective::Redistribute:
      return "redistribute";
    case Collective::Shard:
      return "shard";
    case Collective::Unshard:
      return "unshard";
    case Collective::InvariantToReplicate:
      return "invariant_to_replicate";
    case Collective::LocalSplit:
      return "local_split";
  }
  return "?";
}

std::optional<Collective> parse_collective(std::string_view name) {
  std::size_t last = name.rfind("::");
  if (last != std::string_view::npos) name = name.substr(last + 2);
  static constexpr Collective all[] = {
      Collective::AllReduce,     Collective::AllGather,
      Collective::ReduceScatter, Collective::AllToAll,
      Collective::Convert,       Collective::Reinterpret,
      Collective::Redistribute,  Collective::Shard,
      Collective::Unshard,       Collective::InvariantToReplicate};
  for (Collective c : all)
    if (name == to_string(c)) return c;
  return std::nullopt;
}

namespace {

std::string sizes_to_string(const std::vector<long>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

TypeKind base(PerAxisType t) { return t.local().kind; }
bool is(PerAxisType t, TypeKind k) { return t.kind == k; }
bool is_v_or_s(PerAxisType t) {
  return t.kind == TypeKind::Varying || t.kind == TypeKind::Shard;
}
bool is_r_or_i(PerAxisType t) {
  return t.kind == TypeKind::Replicate || t.kind == TypeKind::Invariant;
}

TypeError invalid(const CollectiveCall& call, std::string message,
                  std::string fix = {}) {
  TypeError e;
  e.kind = ErrorKind::InvalidArgument;
  e.message = std::string(to_string(call.op)) +
              "(src=" + core::to_string(call.src) +
              ", dst=" + core::to_string(call.dst) + "): " + std::move(message);
  e.fix = std::move(fix);
  e.actual = core::to_string(call.src) + " -> " + core::to_string(call.dst);
  return e;
}

constexpr const char* kReplicatedReductionHint =
    "reducing replicated data is usually a bug (every rank would add the "
    "same value); to scale deliberately use spmd::reinterpret(x, axis, R, P, "
    "{.expert_mode = true})";

Status check_all_reduce(const CollectiveCall& c) {
  if (!(is(c.src, TypeKind::Partial) || is(c.src, TypeKind::Varying))) {
    return invalid(
        c, "src must be P (or V, read as P), got " + core::to_string(c.src),
        is_r_or_i(c.src) ? kReplicatedReductionHint : "");
  }
  if (!is_r_or_i(c.dst))
    return invalid(c, "dst must be R or I, got " + core::to_string(c.dst),
                   "use reduce_scatter for a V or S(i) result");
  if (c.inplace && (c.has_op_dtype || c.has_out_dtype))
    return invalid(c,
                   "inplace=true cannot be combined with op_dtype or "
                   "out_dtype");
  return Ok{};
}

Status check_all_gather(const CollectiveCall& c) {
  if (!is_v_or_s(c.src))
    return invalid(c, "src must be V or S(i), got " + core::to_string(c.src));
  if (has_option(c, CollectiveOption::SplitSizes) && !c.src.is_shard())
    return invalid(c, "split_sizes is only supported with src=S(i)");
  if (c.src.is_shard() && c.gather_dim && c.src.dim >= 0 &&
      *c.gather_dim >= 0 && *c.gather_dim != c.src.dim)
    return invalid(c,
                   "gather_dim=" + std::to_string(*c.gather_dim) +
                       " conflicts with src=" + core::to_string(c.src),
                   "drop gather_dim: src=S(i) gathers along dim i");
  if (!is_r_or_i(c.dst))
    return invalid(c, "dst must be R or I, got " + core::to_string(c.dst));
  return Ok{};
}

Status check_reduce_scatter(const CollectiveCall& c) {
  if (!(is(c.src, TypeKind::Partial) || is(c.src, TypeKind::Varying)))
    return invalid(
        c, "src must be P (or V, read as P), got " + core::to_string(c.src),
        is_r_or_i(c.src) ? kReplicatedReductionHint : "");
  if (!is_v_or_s(c.dst))
    return invalid(c, "dst must be V or S(i), got " + core::to_string(c.dst),
                   "use all_reduce for an R or I result");
  if (has_option(c, CollectiveOption::SplitSizes) && !c.dst.is_shard())
    return invalid(c, "split_sizes is only supported with dst=S(i)");
  if (c.dst.is_shard() && c.scatter_dim && c.dst.dim >= 0 &&
      *c.scatter_dim >= 0 && *c.scatter_dim != c.dst.dim)
    return invalid(c,
                   "scatter_dim=" + std::to_string(*c.scatter_dim) +
                       " conflicts with dst=" + core::to_string(c.dst),
                   "drop scatter_dim: dst=S(i) scatters along dim i");
  return Ok{};
}

/// A given dim conflicts with the one the shard types imply.
bool conflicts(const std::optional<long>& given, long implied) {
  return given && *given >= 0 && implied >= 0 && *given != implied;
}

Status check_all_to_all(const CollectiveCall& c) {
  if (!is_v_or_s(c.src))
    return invalid(c, "src must be V or S(i), got " + core::to_string(c.src));
  if (!is_v_or_s(c.dst))
    return invalid(c, "dst must be V or S(i), got " + core::to_string(c.dst));
  if (c.src.is_shard() || c.dst.is_shard()) {
    auto [split, concat] = all_to_all_dims(c);
    if (conflicts(c.split_dim, split))
      return invalid(c, "split_dim=" + std::to_string(*c.split_dim) +
                            " conflicts with the split dim " +
                            std::to_string(split) + " implied by the shards");
    if (conflicts(c.concat_dim, concat))
      return invalid(c, "concat_dim=" + std::to_string(*c.concat_dim) +
                            " conflicts with the concat dim " +
                            std::to_string(concat) + " implied by the shards");
  }
  if (has_option(c, CollectiveOption::InputSplitSizes) ||
      has_option(c, CollectiveOption::OutputSplitSizes)) {
    auto [split, concat] = all_to_all_dims(c);
    if (split != 0 || concat != 0)
      return invalid(c,
                     "uneven split sizes are only supported with "
                     "src=S(0), dst=S(0)");
  }
  return Ok{};
}

/// The expert-mode gate of spec §7.9: the gist for a gated pair, or null.
const char* expert_gist(Collective op, PerAxisType src, PerAxisType dst) {
  TypeKind s = base(src), d = base(dst);
  if (op == Collective::Reinterpret) {
    if (s == TypeKind::Replicate && d == TypeKind::Invariant)
      return "reinterpret(R, I) is rarely wanted in forward code; it is the "
             "backward of convert(I, P). Prefer convert(R, I)";
    if (s == TypeKind::Replicate && d == TypeKind::Partial)
      return "reinterpret(R, P) multiplies the meaning by the axis size; use "
             "convert(R, P) to keep the value";
    if (s == TypeKind::Invariant && d == TypeKind::Replicate)
      return "use convert(I, R), the primary I <-> R API";
    if (s == TypeKind::Replicate && d == TypeKind::Varying)
      return "reinterpret(R, V) makes n copies of the value; to shard, "
             "convert to V or to S(i)";
  }
  if (op == Collective::Convert) {
    if (s == TypeKind::Replicate && d == TypeKind::Invariant)
      return "convert(R, I) treats replicate as invariant; it exists as the "
             "backward of convert(I, P)";
    if (s == TypeKind::Invariant && d == TypeKind::Partial)
      return "convert(I, P) zeros all non-rank-0 copies; it exists as the "
             "backward of convert(R, I)";
    if (s == TypeKind::Varying && d == TypeKind::Partial)
      return src.is_shard()
                 ? "convert(S(i), P) zero-pads into a partial; it exists as "
                   "the backward of convert(R, S(i))"
                 : "convert(V, P) zero-pads into a partial; it exists as the "
                   "backward of convert(R, V)";
  }
  return nullptr;
}

Status check_expert(const CollectiveCall& c) {
  if (c.expert_mode) return Ok{};
  if (const char* gist = expert_gist(c.op, c.src, c.dst))
    return invalid(c, std::string("requires expert_mode=true: ") + gist,
                   "pass {.expert_mode = true} if this is really intended");
  return Ok{};
}

Status check_reinterpret(const CollectiveCall& c) {
  if (c.src.is_shard() || c.dst.is_shard())
    return invalid(c, "reinterpret does not support S(i)",
                   "use V, or convert to change the shard layout");
  if (c.src == c.dst) return Ok{};
  if (auto s = check_expert(c); !s.ok()) return s;
  TypeKind s = c.src.kind, d = c.dst.kind;
  if (s == TypeKind::Varying &&
      (d == TypeKind::Replicate || d == TypeKind::Invariant))
    return invalid(c,
                   "not supported: reinterpret cannot assert that varying "
                   "data is equal on every rank",
                   "use all_gather to make it R or I");
  if (s == TypeKind::Partial)
    return invalid(c,
                   "not supported: reinterpreting a partial sum is "
                   "ill-defined",
                   "all_reduce (or reduce_scatter) it first");
  return Ok{};
}

Status check_convert(const CollectiveCall& c) {
  if (auto s = check_expert(c); !s.ok()) return s;
  TypeKind s = base(c.src), d = base(c.dst);
  if (s == d) {
    if (c.src.is_shard() && c.dst.is_shard() && c.src.dim != c.dst.dim)
      return invalid(c,
                     "convert cannot change the shard dimension without "
                     "communication",
                     "use all_to_all(x, axis, " + core::to_string(c.src) +
                         ", " + core::to_string(c.dst) + ")");
    return Ok{};
  }
  if (s == TypeKind::Varying && d != TypeKind::Partial)
    return invalid(c,
                   "not supported: convert cannot make varying data "
                   "identical on every rank without communication",
                   "use all_gather");
  if (s == TypeKind::Partial) {
    if (d == TypeKind::Varying)
      return invalid(c, "not supported: a partial sum needs communication",
                     "use reduce_scatter");
    return invalid(c, "not supported: a partial sum needs communication",
                   "use all_reduce");
  }
  return Ok{};
}

Status check_shard(const CollectiveCall& c) {
  if (!c.dst.is_shard())
    return invalid(c, "shard: dst must be S(i), got " + core::to_string(c.dst),
                   "use convert for other destinations");
  CollectiveCall as_convert = c;
  as_convert.op = Collective::Convert;
  as_convert.expert_mode = false;
  return check_convert(as_convert);
}

Status check_unshard(const CollectiveCall& c) {
  if (!c.src.is_shard())
    return invalid(c,
                   "unshard: src must be S(i), got " + core::to_string(c.src),
                   "use all_gather for src=V");
  CollectiveCall as_gather = c;
  as_gather.op = Collective::AllGather;
  return check_all_gather(as_gather);
}

CollectiveCall make(Collective op, PerAxisType src, PerAxisType dst,
                    bool expert = false) {
  CollectiveCall c;
  c.op = op;
  c.src = src;
  c.dst = dst;
  c.expert_mode = expert;
  return c;
}

}  // namespace

std::string CollectiveCall::to_string() const {
  std::string s = std::string(core::to_string(op)) +
                  "(src=" + core::to_string(src) +
                  ", dst=" + core::to_string(dst);
  if (expert_mode) s += ", expert_mode=true";
  if (inplace) s += ", inplace=true";
  if (gather_dim) s += ", gather_dim=" + std::to_string(*gather_dim);
  if (scatter_dim) s += ", scatter_dim=" + std::to_string(*scatter_dim);
  if (split_dim) s += ", split_dim=" + std::to_string(*split_dim);
  if (concat_dim) s += ", concat_dim=" + std::to_string(*concat_dim);
  if (!split_sizes.empty())
    s += ", split_sizes=" + sizes_to_string(split_sizes);
  if (!input_split_sizes.empty())
    s += ", input_split_sizes=" + sizes_to_string(input_split_sizes);
  if (!output_split_sizes.empty())
    s += ", output_split_sizes=" + sizes_to_string(output_split_sizes);
  for (const CollectiveOptionInfo& info : collective_options())
    if (unread_options & (1u << static_cast<unsigned>(info.id)))
      s += std::string(", ") + info.name + "=?";
  return s + ")";
}

bool operator==(const CollectiveCall& a, const CollectiveCall& b) {
  return a.op == b.op && a.src == b.src && a.dst == b.dst &&
         a.expert_mode == b.expert_mode && a.inplace == b.inplace &&
         a.has_op_dtype == b.has_op_dtype &&
         a.has_out_dtype == b.has_out_dtype && a.gather_dim == b.gather_dim &&
         a.scatter_dim == b.scatter_dim && a.split_dim == b.split_dim &&
         a.concat_dim == b.concat_dim && a.split_sizes == b.split_sizes &&
         a.input_split_sizes == b.input_split_sizes &&
         a.output_split_sizes == b.output_split_sizes &&
         a.unread_options == b.unread_options;
}

std::optional<std::pair<PerAxisType, PerAxisType>> implied_types(Collective c) {
  if (c == Collective::InvariantToReplicate) return std::pair{I, R};
  return std::nullopt;
}

bool is_valid_type(PerAxisType t) {
  switch (t.kind) {
    case TypeKind::Replicate:
    case TypeKind::Invariant:
    case TypeKind::Varying:
    case TypeKind::Partial:
    case TypeKind::Shard:
      return true;
  }
  return false;
}

AllToAllDims all_to_all_dims(const CollectiveCall& c) {
  long split = c.split_dim.value_or(0), concat = c.concat_dim.value_or(0);
  if (c.src.is_shard() && c.dst.is_shard()) return {c.dst.dim, c.src.dim};
  if (c.src.is_shard()) split = c.src.dim;
  if (c.dst.is_shard()) concat = c.dst.dim;
  return {split, concat};
}

Result<CollectiveCall> resolve(const CollectiveCall& call, long ndim) {
  CollectiveCall out = call;
  auto src = resolve_shard_dim(call.src, ndim);
  if (!src.ok()) return src.error();
  auto dst = resolve_shard_dim(call.dst, ndim);
  if (!dst.ok()) return dst.error();
  out.src = src.value();
  out.dst = dst.value();
  return out;
}

namespace {

/// src and dst are R, I, V, P or S(i) (a value cast from an out-of-range
/// integer is refused before any rule looks at it).
Status check_type_values(const CollectiveCall& call) {
  for (const auto& [role, t] :
       {std::pair{"src", call.src}, {"dst", call.dst}}) {
    if (is_valid_type(t)) continue;
    TypeError e;
    e.kind = ErrorKind::UsageError;
    e.actual = "kind " + std::to_string(static_cast<int>(t.kind));
    e.expected = "R, I, V, P or S(i)";
    e.message = std::string(role) + " of " + to_string(call.op) +
                " is not a valid SPMD type (TypeKind value " +
                std::to_string(static_cast<int>(t.kind)) + ")";
    e.fix =
        "pass one of spmd::R, spmd::I, spmd::V, spmd::P or spmd::S(dim); do "
        "not build a PerAxisType from an integer";
    return e;
  }
  return Ok{};
}

/// Every given option is one the op accepts (collective_options.h).
Status check_option_acceptance(const CollectiveCall& call) {
  if (call.op == Collective::LocalSplit) return Ok{};  // internal dual
  for (const CollectiveOptionInfo& info : collective_options()) {
    if (info.accepts(call.op) || !has_option(call, info.id)) continue;
    TypeError e;
    e.kind = ErrorKind::InvalidArgument;
    e.actual = info.name;
    e.message = std::string(info.name) + " is not an option of " +
                to_string(call.op) + " (it is ignored there)";
    e.fix = std::string("remove it; ") + to_string(call.op) +
            " accepts: " + accepted_options(call.op);
    return e;
  }
  return Ok{};
}

}  // namespace

Status check_arguments(const CollectiveCall& call) {
  if (auto s = check_type_values(call); !s.ok()) return s;
  if (auto s = check_option_acceptance(call); !s.ok()) return s;
  switch (call.op) {
    case Collective::AllReduce:
      return check_all_reduce(call);
    case Collective::AllGather:
      return check_all_gather(call);
    case Collective::ReduceScatter:
      return check_reduce_scatter(call);
    case Collective::AllToAll:
      return check_all_to_all(call);
    case Collective::Convert:
      return check_convert(call);
    case Collective::Reinterpret:
      return check_reinterpret(call);
    case Collective::Redistribute:
      return Ok{};  // every cell is routed
    case Collective::Shard:
      return check_shard(call);
    case Collective::Unshard:
      return check_unshard(call);
    case Collective::InvariantToReplicate:
      if (!(is(call.src, TypeKind::Invariant) &&
            is(call.dst, TypeKind::Replicate)))
        return invalid(call, "invariant_to_replicate is convert(I, R)");
      return Ok{};
    case Collective::LocalSplit:
      return Ok{};
  }
  return Ok{};
}

std::optional<CollectiveCall> lower_to_primitive(const CollectiveCall& call) {
  CollectiveCall c = call;
  switch (call.op) {
    case Collective::Shard:
      c.op = Collective::Convert;
      break;
    case Collective::Unshard:
      c.op = Collective::AllGather;
      break;
    case Collective::InvariantToReplicate:
      c.op = Collective::Convert;
      c.src = I;
      c.dst = R;
      break;
    case Collective::Redistribute: {
      auto routed = route_redistribute(call.src, call.dst);
      if (!routed) return std::nullopt;
      c = *routed;
      c.has_op_dtype = call.has_op_dtype;
      c.has_out_dtype = call.has_out_dtype;
      break;
    }
    default:
      break;
  }
  c.expert_mode = true;
  if (is_noop(c)) return std::nullopt;
  return c;
}

bool is_noop(const CollectiveCall& call) {
  switch (call.op) {
    case Collective::Reinterpret:
      return call.src == call.dst;
    case Collective::Convert:
    case Collective::Shard:
      return base(call.src) == base(call.dst) &&
             !(call.src.is_shard() && call.dst.is_shard() &&
               call.src.dim != call.dst.dim);
    case Collective::Redistribute:
      return !route_redistribute(call.src, call.dst).has_value();
    default:
      return false;
  }
}

Result<TensorType> transfer(const CollectiveCall& call,
                            const std::optional<TensorType>& input,
                            std::string_view axis, bool strict,
                            bool axis_is_singleton,
                            std::optional<long> input_shard) {
  const std::string op = to_string(call.op);
  const PerAxisType lsrc = call.src.local(), ldst = call.dst.local();
  std::optional<PerAxisType> actual;
  if (input) actual = input->get(axis);
  if (!actual) {
    if (axis_is_singleton || !strict) return input.value_or(TensorType{});
    TypeError e;
    e.kind = ErrorKind::SpmdTypeError;
    e.axis = std::string(axis);
    e.expected = core::to_string(lsrc);
    e.actual = input ? input->to_string() : "untyped";
    e.message = op + ": tensor has no type for axis " + std::string(axis) +
                " (its type is " + e.actual + ")";
    e.fix = "Use assert_type() or an [[spmd::type(" + std::string(axis) +
            " = " + core::to_string(lsrc) +
            ")]] annotation to give it a type on " + std::string(axis);
    return e;
  }
  const bool v_for_p =
      lsrc.kind == TypeKind::Partial && actual->kind == TypeKind::Varying;
  if (*actual != lsrc && !v_for_p) {
    // A V whose shard dim is known is named by it: S(k), as written.
    if (input_shard && actual->kind == TypeKind::Varying)
      actual = PerAxisType{TypeKind::Shard, static_cast<int>(*input_shard)};
    TypeError e;
    e.kind = ErrorKind::SpmdTypeError;
    e.axis = std::string(axis);
    e.expected = core::to_string(lsrc);
    e.actual = core::to_string(*actual);
    e.message = op + ": expected input type " + e.expected + " on axis " +
                std::string(axis) + ", got " + e.actual;
    CollectiveCall as_actual = call;
    as_actual.src = *actual;
    if (check_arguments(as_actual).ok()) {
      // The call would be legal for the actual type: src is probably a typo.
      e.fix = "The tensor is " + e.actual + " on " + std::string(axis) +
              " here: pass src=" + e.actual + " to " + op +
              ", or change the tensor's type upstream";
    } else if (auto route = route_redistribute(*actual, lsrc)) {
      e.fix = "The tensor is " + e.actual + " here; to make it " + e.expected +
              " first use spmd::" + to_string(route->op) + "(x, " +
              std::string(axis) + ", " + core::to_string(route->src) + ", " +
              core::to_string(route->dst) + ")";
      if (route->expert_mode) e.fix += " (expert_mode)";
    }
    return e;
  }
  TensorType out = *input;
  out.set(std::string(axis), ldst);
  return out;
}

std::optional<CollectiveCall> route_redistribute(PerAxisType src,
                                                 PerAxisType dst) {
  TypeKind s = base(src), d = base(dst);
  switch (s) {
    case TypeKind::Replicate:
    case TypeKind::Invariant:
      if (s == d) return std::nullopt;
      return make(Collective::Convert, src, dst, /*expert=*/true);
    case TypeKind::Varying:
    case TypeKind::Shard:
      if (d == TypeKind::Replicate || d == TypeKind::Invariant)
        return make(Collective::AllGather, src, dst);
      if (d == TypeKind::Partial)
        return make(Collective::Convert, src, dst, /*expert=*/true);
      if (src.is_shard() && dst.is_shard() && src.dim != dst.dim)
        return make(Collective::AllToAll, src, dst);
      return std::nullopt;  // V->V, V<->S(i), S(i)->S(i)
    case TypeKind::Partial: {
      if (d == TypeKind::Partial) return std::nullopt;
      if (d == TypeKind::Replicate || d == TypeKind::Invariant)
        return make(Collective::AllReduce, src, dst);
      CollectiveCall c = make(Collective::ReduceScatter, src, dst);
      c.scatter_dim = dst.is_shard() ? dst.dim : 0;
      return c;
    }
  }
  return std::nullopt;
}

// Long on purpose: the forward/backward pairs of spec §7.13 as one switch,
// a case per collective and a line per pair, read side by side with the table.
std::vector<CollectiveCall> backward_of(const CollectiveCall& call) {
  const PerAxisType src = call.src, dst = call.dst;
  const TypeKind s = base(src), d = base(dst);
  std::vector<CollectiveCall> steps;
  // V read as P by a reduction: its backward ends with the dual of
  // reinterpret(V, P), i.e. reinterpret(R, V).
  auto then_v_for_p = [&] {
    if (s == TypeKind::Varying)
      steps.push_back(make(Collective::Reinterpret, R, V, true));
  };
  switch (call.op) {
    case Collective::AllReduce:
      if (d == TypeKind::Replicate)
        steps.push_back(make(Collective::AllReduce, P, R));
      else
        steps.push_back(make(Collective::Convert, I, R));
      then_v_for_p();
      break;
    case Collective::AllGather:
    case Collective::Unshard:
      if (!src.is_shard()) {
        if (d == TypeKind::Replicate) {
          CollectiveCall c = make(Collective::ReduceScatter, P, V);
          c.scatter_dim = call.gather_dim.value_or(0);
          steps.push_back(c);
        } else {
          CollectiveCall c = make(Collective::Convert, I, V);
          // Non-default stacking dim: the convert selects along it.
          if (call.gather_dim && *call.gather_dim != 0)
            c.scatter_dim = call.gather_dim;
          steps.push_back(c);
        }
      } else if (d == TypeKind::Replicate) {
        CollectiveCall c = make(Collective::ReduceScatter, P, src);
        c.split_sizes = call.split_sizes;
        steps.push_back(c);
      } else if (!call.split_sizes.empty()) {
        CollectiveCall c = make(Collective::LocalSplit, I, src);
        c.split_sizes = call.split_sizes;
        steps.push_back(c);
      } else {
        steps.push_back(make(Collective::Convert, I, src));
      }
      break;
    case Collective::ReduceScatter:
      if (!dst.is_shard()) {
        CollectiveCall c = make(Collective::AllGather, V, R);
        c.gather_dim = call.scatter_dim.value_or(0);
        steps.push_back(c);
      } else {
        CollectiveCall c = make(Collective::AllGather, dst, R);
        c.split_sizes = call.split_sizes;
        steps.push_back(c);
      }
      then_v_for_p();
      break;
    case Collective::AllToAll: {
      CollectiveCall c;
      if (!call.input_split_sizes.empty() || !call.output_split_sizes.empty()) {
        c = make(Collective::AllToAll, S(0), S(0));
        c.input_split_sizes = call.output_split_sizes;
        c.output_split_sizes = call.input_split_sizes;
      } else if (!src.is_shard() && !dst.is_shard()) {
        c = make(Collective::AllToAll, V, V);
        c.split_dim = call.concat_dim.value_or(0);
        c.concat_dim = call.split_dim.value_or(0);
      } else {
        auto [split, concat] = all_to_all_dims(call);
        c = make(Collective::AllToAll, S(static_cast<int>(split)),
                 S(static_cast<int>(concat)));
      }
      steps.push_back(c);
      break;
    }
    case Collective::Convert:
    case Collective::Shard:
    case Collective::InvariantToReplicate:
      if (s == d) break;  // no-op forward: identity backward
      if (s == TypeKind::Invariant && d == TypeKind::Replicate)
        steps.push_back(make(Collective::AllReduce, P, I));
      else if (s == TypeKind::Replicate && d == TypeKind::Invariant)
        steps.push_back(make(Collective::Convert, I, P, true));
      else if (s == TypeKind::Replicate && d == TypeKind::Varying)
        steps.push_back(make(Collective::Convert, dst, P, true));
      else if (s == TypeKind::Invariant && d == TypeKind::Varying) {
        CollectiveCall c = make(Collective::AllGather, dst, I);
        // convert(I, V) unbinding a non-default dim stacks back along it.
        if (!dst.is_shard() && call.scatter_dim && *call.scatter_dim != 0)
          c.gather_dim = call.scatter_dim;
        steps.push_back(c);
      } else if (s == TypeKind::Replicate && d == TypeKind::Partial)
        steps.push_back(make(Collective::Convert, R, P, true));
      else if (s == TypeKind::Invariant && d == TypeKind::Partial)
        steps.push_back(make(Collective::Convert, R, I, true));
      else if (s == TypeKind::Varying && d == TypeKind::Partial)
        steps.push_back(make(Collective::Convert, R, src, true));
      break;
    case Collective::Reinterpret:
      if (src == dst) break;
      if (s == TypeKind::Replicate && d == TypeKind::Varying)
        steps.push_back(make(Collective::Reinterpret, V, P, true));
      else if (s == TypeKind::Varying && d == TypeKind::Partial)
        steps.push_back(make(Collective::Reinterpret, R, V, true));
      else if (s == TypeKind::Replicate && d == TypeKind::Partial)
        steps.push_back(make(Collective::Reinterpret, R, P, true));
      else if (s == TypeKind::Replicate && d == TypeKind::Invariant)
        steps.push_back(make(Collective::Convert, I, P, true));
      else if (s == TypeKind::Invariant && d == TypeKind::Replicate)
        steps.push_back(make(Collective::AllReduce, P, I));
      else if (s == TypeKind::Invariant && d == TypeKind::Varying) {
        steps.push_back(make(Collective::Reinterpret, V, P, true));
        steps.push_back(make(Collective::AllReduce, P, I));
      } else if (s == TypeKind::Invariant && d == TypeKind::Partial) {
        steps.push_back(make(Collective::Reinterpret, R, P, true));
        steps.push_back(make(Collective::AllReduce, P, I));
      }
      break;
    case Collective::Redistribute:
      if (auto route = route_redistribute(src, dst))
        steps = backward_of(*route);
      break;
    case Collective::LocalSplit: {
      CollectiveCall c = make(Collective::AllGather, dst, I);
      c.split_sizes = call.split_sizes;
      steps.push_back(c);
      break;
    }
  }
  // Duals are issued internally: they carry expert_mode exactly when the
  // gate of §7.9 would otherwise refuse them.
  for (CollectiveCall& c : steps)
    c.expert_mode = expert_gist(c.op, c.src, c.dst) != nullptr;
  return steps;
}

bool is_reducing(const CollectiveCall& call) {
  switch (call.op) {
    case Collective::AllReduce:
    case Collective::ReduceScatter:
      return true;
    case Collective::Convert:
    case Collective::Shard:
      return is_r_or_i(call.src) && is_v_or_s(call.dst);
    case Collective::Redistribute: {
      auto route = route_redistribute(call.src, call.dst);
      return route && is_reducing(*route);
    }
    default:
      return false;
  }
}

bool backward_reduces(const CollectiveCall& call) {
  switch (call.op) {
    case Collective::AllReduce:
    case Collective::AllGather:
    case Collective::Unshard:
      return base(call.dst) == TypeKind::Replicate;
    case Collective::Convert:
    case Collective::Reinterpret:
      return base(call.src) == TypeKind::Invariant &&
             base(call.dst) == TypeKind::Replicate;
    case Collective::InvariantToReplicate:
      return true;
    case Collective::Redistribute: {
      auto route = route_redistribute(call.src, call.dst);
      return route && backward_reduces(*route);
    }
    default:
      return false;
  }
}

DtypePlan plan_dtypes(const CollectiveCall& call, int input_bits,
                      int out_bits) {
  DtypePlan plan{DtypeChoice::Input, DtypeChoice::Input};
  if (call.has_op_dtype) {
    plan.op = DtypeChoice::Op;
    plan.out = call.has_out_dtype ? DtypeChoice::Out : DtypeChoice::Op;
  } else if (call.has_out_dtype) {
    plan.out = DtypeChoice::Out;
    if (is_reducing(call))
      plan.op = DtypeChoice::Input;
    else
      plan.op = out_bits < input_bits ? DtypeChoice::Out : DtypeChoice::Input;
  }
  return plan;
}

}  // namespace spmd::core

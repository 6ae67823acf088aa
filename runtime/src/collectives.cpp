// collectives.cpp - the differentiable SPMD collectives of spec §7.
//
// Every public collective follows the same path:
//   1. build a core::CollectiveCall, resolve negative shard dims, check the
//      arguments with the core rules (legality, expert gate, dims);
//   2. resolve the axis through the current mesh to a process group;
//   3. lower aliases and redistribute (routing table, §7.12) to a primitive
//      (core::lower_to_primitive);
//   4. run the primitive as one autograd node (CollectiveFunction) whose
//      backward runs core::backward_of(primitive) - the dual - through the
//      same path, so double backward works too;
//   5. hand input and output to the runtime checker's hook (§5.2 step 8).
//
// Data movement (n ranks on the axis, this rank r): V stacks / unbinds on a
// dim (default 0), S(i) concatenates / splits on dim i, uneven S(i) via split
// sizes. Every rank must call the same collectives in the same order on a
// group (c10d's invariant); a peer that does not arrive within the World's
// timeout gives spmd::CollectiveError naming the collective and the axis.
//
// The kernels of each family live in collectives_*.cpp
// (collectives_internal.h).
#include <ATen/ATen.h>
#include <spmd/collectives.h>
#include <spmd/core/collectives.h>
#include <spmd/detail/collective_hook.h>
#include <spmd/errors.h>
#include <spmd/mesh.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <numeric>
#include <sstream>

#include "collectives_internal.h"
#include "torch_compat.h"

namespace spmd {
namespace {

using at::Tensor;
using core::Collective;
using core::CollectiveCall;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using namespace collective_impl;

Tensor run_kernel(const Tensor& x_op, bool owned, const Plan& p) {
  std::vector<int64_t> extents;
  if (p.n > 1 && communicates(p.call.op)) {
    const int64_t wanted = inline_candidate(x_op, p);
    if (wanted >= 0) {
      // One round trip when x fits the room: the check's message carries
      // every rank's data. Otherwise (or on the fake backend, which runs no
      // check) the kernel communicates as usual.
      Tensor rows;
      extents = preflight(x_op, p, wanted, &rows);
      if (rows.defined()) return from_rows(x_op, rows, p);
    } else {
      extents = preflight(x_op, p);
    }
  }
  check_split_sizes(p);
  switch (p.call.op) {
    case Collective::AllReduce:
      return all_reduce_kernel(x_op, owned, p);
    case Collective::AllGather:
      return all_gather_kernel(x_op, p, extents);
    case Collective::ReduceScatter:
      return reduce_scatter_kernel(x_op, p);
    case Collective::AllToAll:
      return all_to_all_kernel(x_op, p);
    case Collective::Convert:
      return convert_kernel(x_op, p);
    case Collective::Reinterpret:
      return x_op;
    case Collective::LocalSplit:
      return local_split_kernel(x_op, p);
    default:
      throw UsageError(std::string("internal: ") + core::to_string(p.call.op) +
                       " is not a primitive");
  }
}

int bits(c10::ScalarType t) {
  return static_cast<int>(c10::elementSize(t)) * 8;
}

// Forward dtypes of spec §7.10: {op dtype, out dtype}.
std::pair<c10::ScalarType, c10::ScalarType> resolve_dtypes(
    const CollectiveCall& call, c10::ScalarType in,
    std::optional<c10::ScalarType> op, std::optional<c10::ScalarType> out) {
  if (!op && !out) return {in, in};  // core::plan_dtypes: Input, Input
  CollectiveCall c = call;
  c.has_op_dtype = op.has_value();
  c.has_out_dtype = out.has_value();
  core::DtypePlan plan =
      core::plan_dtypes(c, bits(in), out ? bits(*out) : bits(in));
  auto pick = [&](core::DtypeChoice choice) {
    switch (choice) {
      case core::DtypeChoice::Input:
        return in;
      case core::DtypeChoice::Op:
        return op.value_or(in);
      case core::DtypeChoice::Out:
        return out.value_or(in);
    }
    return in;
  };
  return {pick(plan.op), pick(plan.out)};
}

// The forward of a primitive on data: the op dtype, the kernel, the out
// dtype. Runs inside CollectiveFunction::forward, or directly when no graph
// is recorded (see apply_plan).
Tensor forward_data(const Tensor& x, Plan& plan) {
  // The ATen ops a collective runs internally (clone, stack, zeros, ...)
  // are not user ops: keep them away from the runtime checker's fallback.
  c10::impl::ExcludeDispatchKeyGuard no_typing(compat::kCheckerModeKey);
  plan.in_dtype = x.scalar_type();
  auto [op, out] =
      resolve_dtypes(plan.call, x.scalar_type(), plan.op_dtype, plan.out_dtype);
  Tensor x_op = x.scalar_type() == op ? x : x.to(op);
  Tensor y = run_kernel(x_op, !x_op.is_same(x), plan);
  if (y.scalar_type() != out) y = y.to(out);
  // Identity on data (reinterpret, convert(I, R), ...): return an alias
  // that is not the input itself (the checker's hook types the result
  // without retyping the input) and not a view, so the result can later be
  // modified in place (autograd forbids in-place ops on views created in a
  // custom Function).
  if (y.is_same(x) && !plan.call.inplace) y = x.detach();
  return y;
}

Tensor apply_primitive(const Tensor& x, c10::intrusive_ptr<Plan> plan);

// Primitives whose kernel returns its input (run_kernel): reinterpret, and
// convert between R and I.
bool identity_on_data(const CollectiveCall& c) {
  auto ri = [](PerAxisType t) {
    return t.kind == TypeKind::Replicate || t.kind == TypeKind::Invariant;
  };
  return c.op == Collective::Reinterpret ||
         (c.op == Collective::Convert && ri(c.src) && ri(c.dst));
}

// One autograd node per primitive call; backward is the dual (spec §7.13).
class CollectiveFunction
    : public torch::autograd::Function<CollectiveFunction> {
 public:
  static Tensor forward(AutogradContext* ctx, Tensor x,
                        c10::intrusive_ptr<Plan> plan) {
    Tensor y = forward_data(x, *plan);
    if (plan->call.inplace) ctx->mark_dirty({x});
    ctx->saved_data["plan"] = at::IValue::make_capsule(std::move(plan));
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    c10::impl::ExcludeDispatchKeyGuard no_typing(compat::kCheckerModeKey);
    auto plan = c10::static_intrusive_pointer_cast<Plan>(
        ctx->saved_data["plan"].toCapsule());
    const auto in_dtype = plan->in_dtype;
    Tensor g = grads[0];
    if (!g.defined()) return {Tensor(), Tensor()};
    std::vector<CollectiveCall> steps = core::backward_of(plan->call);
    for (size_t k = 0; k < steps.size(); ++k) {
      // A dual that is the identity on data (the dual of all_reduce(P, I)
      // is convert(I, R); of reinterpret(V, P), reinterpret(R, V)) in the
      // gradient's dtype, where no graph is recorded: forward_data would
      // return an alias of g. g itself serves, without building a plan.
      const bool last = k + 1 == steps.size();
      if (identity_on_data(steps[k]) && !at::GradMode::is_enabled() &&
          !plan->backward.op_dtype &&
          (!last ||
           plan->backward.out_dtype.value_or(in_dtype) == g.scalar_type()))
        continue;
      auto dual = c10::make_intrusive<Plan>(*plan);
      dual->call = std::move(steps[k]);
      dual->user_op = dual->call.op;
      dual->backward_of = plan;
      dual->op_dtype = plan->backward.op_dtype;
      // The gradient comes back in the input's dtype unless told otherwise.
      dual->out_dtype =
          last ? std::optional(plan->backward.out_dtype.value_or(in_dtype))
               : std::nullopt;
      dual->backward = plan->backward.backward_options
                           ? *plan->backward.backward_options
                           : BackwardOptions{};
      g = apply_primitive(g, std::move(dual));
    }
    return {g, Tensor()};
  }
};

// Runs a primitive: as one autograd node when a graph is recorded (grad
// mode on and x requires grad), else directly on the data. Without a graph
// the node would record nothing: the optimizer step's all-reduces under
// NoGradGuard and the duals that backward runs (grad mode is off in a
// backward without create_graph) skip building and destroying it, as a
// hand-written c10d program does.
Tensor apply_plan(const Tensor& x, c10::intrusive_ptr<Plan> plan) {
  if (at::GradMode::is_enabled() && x.requires_grad())
    return CollectiveFunction::apply(x, std::move(plan));
  // As inside a custom Function's forward: no graph for the internal ops.
  at::AutoGradMode no_grad(false);
  return forward_data(x, *plan);
}

Tensor apply_primitive(const Tensor& x, c10::intrusive_ptr<Plan> plan) {
  if (core::is_noop(plan->call) && !plan->out_dtype && !plan->op_dtype)
    return x;
  if (core::is_noop(plan->call))
    return x.to(plan->out_dtype.value_or(x.scalar_type()));
  return apply_plan(x, std::move(plan));
}

CollectiveCall make_call(Collective op, PerAxisType src, PerAxisType dst,
                         const CollectiveOptions& o) {
  CollectiveCall c;
  c.op = op;
  c.src = src;
  c.dst = dst;
  c.expert_mode = o.expert_mode;
  c.inplace = o.inplace;
  c.has_op_dtype = o.op_dtype.has_value();
  c.has_out_dtype = o.out_dtype.has_value();
  if (o.gather_dim) c.gather_dim = static_cast<long>(*o.gather_dim);
  if (o.scatter_dim) c.scatter_dim = static_cast<long>(*o.scatter_dim);
  if (o.split_dim) c.split_dim = static_cast<long>(*o.split_dim);
  if (o.concat_dim) c.concat_dim = static_cast<long>(*o.concat_dim);
  c.split_sizes.assign(o.split_sizes.begin(), o.split_sizes.end());
  c.input_split_sizes.assign(o.input_split_sizes.begin(),
                             o.input_split_sizes.end());
  c.output_split_sizes.assign(o.output_split_sizes.begin(),
                              o.output_split_sizes.end());
  return c;
}

// `name` as a shared string: the one of this thread's last call when equal
// (one mesh at a time, usually), so that a call copies no string.
std::shared_ptr<const std::string> shared_name(const std::string& name) {
  thread_local std::shared_ptr<const std::string> last;
  if (!last || *last != name) last = std::make_shared<const std::string>(name);
  return last;
}

bool is_composed_reinterpret(const CollectiveCall& c) {
  return c.op == Collective::Reinterpret && c.src == types::I &&
         (c.dst == types::V || c.dst == types::P);
}

Tensor run(Collective op, const Tensor& x, const Axis& axis, PerAxisType src,
           PerAxisType dst, const CollectiveOptions& options) {
  if (!x.defined())
    throw UsageError(std::string(core::to_string(op)) +
                     ": the input tensor is undefined");
  CollectiveCall call = make_call(op, src, dst, options);
  // reinterpret rejects S(i) before anything else (§7.7); the other ops
  // resolve negative shard dims against x.ndim first.
  // (Nothing to resolve without a shard dim.)
  if (op != Collective::Reinterpret && (src.is_shard() || dst.is_shard()))
    call = value_or_throw(core::resolve(call, x.dim()));
  value_or_throw(core::check_arguments(call));
  if (is_composed_reinterpret(call) && options.backward.backward_options)
    throw NotImplementedError(
        std::string("reinterpret(") + core::to_string(call.src) + ", " +
        core::to_string(call.dst) +
        ") is a composition of two operations and does not support nested "
        "backward_options (double-backward options)");

  if (axis.name == nullptr || *axis.name == '\0')
    throw UsageError(std::string(core::to_string(op)) +
                     ": the axis has no name (spmd::Axis{nullptr} or an "
                     "empty name); declare mesh axes with SPMD_AXIS(tp) and "
                     "pass one, e.g. spmd::all_reduce(x, tp, P, R)");
  const MeshAxisGroup& group = resolve_axis(axis.name);
  if (x.layout() != at::kStrided) {
    std::ostringstream layout;
    layout << x.layout();
    throw InvalidArgument(
        std::string(core::to_string(op)) + " on axis '" + group.name +
        "': the input is a " + layout.str() +
        " tensor, but collectives communicate dense (strided) tensors; "
        "convert it first, e.g. x.to_dense()");
  }
  Tensor y;
  if (auto prim = core::lower_to_primitive(call)) {
    auto plan = c10::make_intrusive<Plan>();
    plan->call = std::move(*prim);
    plan->user_op = op;
    plan->check = group.check_collectives;
    plan->axis = group.name;
    plan->mesh = shared_name(group.mesh);
    plan->n = group.size;
    plan->r = group.local_rank;
    plan->pg = group.group;
    plan->timeout = group.timeout;
    plan->op_dtype = options.op_dtype;
    plan->out_dtype = options.out_dtype;
    plan->backward = options.backward;

    // Reduced-precision guard (§7.10): a backward that reduces in less than
    // 32 bits must be asked for explicitly.
    if (x.requires_grad() && at::GradMode::is_enabled() &&
        core::backward_reduces(plan->call) && !options.backward.op_dtype) {
      auto [op_t, out_t] = resolve_dtypes(plan->call, x.scalar_type(),
                                          options.op_dtype, options.out_dtype);
      const int narrowest =
          std::min({bits(op_t), bits(out_t), bits(x.scalar_type())});
      if (narrowest < 32) {
        throw InvalidArgument(
            call.to_string() + " on axis '" + group.name +
            "': its backward reduces, and this call runs in " +
            std::to_string(narrowest) +
            "-bit precision; pass the backward reduction dtype explicitly, "
            "e.g. options.backward.op_dtype = at::kFloat (or the same "
            "reduced dtype to accept the precision loss)");
      }
    }
    const bool inplace = plan->call.inplace;
    y = apply_plan(x, std::move(plan));
    // In place: the result is x itself (autograd may hand back an alias).
    if (inplace) y = x;
  } else {
    c10::impl::ExcludeDispatchKeyGuard no_typing(compat::kCheckerModeKey);
    y = options.out_dtype ? x.to(*options.out_dtype) : x;
  }
  if (auto* hook = detail::current_collective_hook())
    hook->on_collective(call, group.name, group.size == 1, x, y);
  return y;
}

}  // namespace

at::Tensor all_reduce(const at::Tensor& x, const Axis& axis, PerAxisType src,
                      PerAxisType dst, const CollectiveOptions& options,
                      SourceLocation loc) {
  detail::CallSiteScope site("all_reduce", loc);
  return run(Collective::AllReduce, x, axis, src, dst, options);
}
at::Tensor all_gather(const at::Tensor& x, const Axis& axis, PerAxisType src,
                      PerAxisType dst, const CollectiveOptions& options,
                      SourceLocation loc) {
  detail::CallSiteScope site("all_gather", loc);
  return run(Collective::AllGather, x, axis, src, dst, options);
}
at::Tensor reduce_scatter(const at::Tensor& x, const Axis& axis,
                          PerAxisType src, PerAxisType dst,
                          const CollectiveOptions& options,
                          SourceLocation loc) {
  detail::CallSiteScope site("reduce_scatter", loc);
  return run(Collective::ReduceScatter, x, axis, src, dst, options);
}
at::Tensor all_to_all(const at::Tensor& x, const Axis& axis, PerAxisType src,
                      PerAxisType dst, const CollectiveOptions& options,
                      SourceLocation loc) {
  detail::CallSiteScope site("all_to_all", loc);
  return run(Collective::AllToAll, x, axis, src, dst, options);
}
at::Tensor convert(const at::Tensor& x, const Axis& axis, PerAxisType src,
                   PerAxisType dst, const CollectiveOptions& options,
                   SourceLocation loc) {
  detail::CallSiteScope site("convert", loc);
  return run(Collective::Convert, x, axis, src, dst, options);
}
at::Tensor reinterpret(const at::Tensor& x, const Axis& axis, PerAxisType src,
                       PerAxisType dst, const CollectiveOptions& options,
                       SourceLocation loc) {
  detail::CallSiteScope site("reinterpret", loc);
  return run(Collective::Reinterpret, x, axis, src, dst, options);
}
at::Tensor redistribute(const at::Tensor& x, const Axis& axis, PerAxisType src,
                        PerAxisType dst, const CollectiveOptions& options,
                        SourceLocation loc) {
  detail::CallSiteScope site("redistribute", loc);
  return run(Collective::Redistribute, x, axis, src, dst, options);
}
at::Tensor shard(const at::Tensor& x, const Axis& axis, PerAxisType src,
                 PerAxisType dst, const CollectiveOptions& options,
                 SourceLocation loc) {
  detail::CallSiteScope site("shard", loc);
  return run(Collective::Shard, x, axis, src, dst, options);
}
at::Tensor unshard(const at::Tensor& x, const Axis& axis, PerAxisType src,
                   PerAxisType dst, const CollectiveOptions& options,
                   SourceLocation loc) {
  detail::CallSiteScope site("unshard", loc);
  return run(Collective::Unshard, x, axis, src, dst, options);
}
at::Tensor invariant_to_replicate(const at::Tensor& x, const Axis& axis,
                                  const CollectiveOptions& options,
                                  SourceLocation loc) {
  detail::CallSiteScope site("invariant_to_replicate", loc);
  const auto [src, dst] =
      *core::implied_types(Collective::InvariantToReplicate);
  return run(Collective::InvariantToReplicate, x, axis, src, dst, options);
}

}  // namespace spmd

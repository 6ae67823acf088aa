// global.cpp - the runtime checker's global SPMD mode (spec §12): ops typed
// with core::infer_global on the operands' global types and real local
// shapes, collectives with core::transfer_global, typed local regions and
// local_map boundaries. The rules are the core's; this file only reads the
// ATen call (tensor operands, dims, sizes, equation, ...) into their inputs.
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <spmd/core/mesh_region.h>
#include <spmd/errors.h>

#include <algorithm>
#include <iostream>

#include "internal.h"

namespace spmd::checker::internal {
namespace {

std::optional<long> int_of(const c10::IValue& v) {
  if (v.isInt()) return v.toInt();
  if (v.isSymInt()) return v.toSymInt().guard_int(__FILE__, __LINE__);
  return std::nullopt;
}

// An int, an int list or None (nullopt).
std::optional<std::vector<long>> ints_of(const c10::IValue& v) {
  if (auto i = int_of(v)) return std::vector<long>{*i};
  if (v.isList()) {
    std::vector<long> out;
    for (const c10::IValue& item : v.toListRef()) {
      auto i = int_of(item);
      if (!i) return std::nullopt;
      out.push_back(*i);
    }
    return out;
  }
  return std::nullopt;
}

// The structural arguments of an ATen call, read by schema argument name
// (ATen names them consistently: dim, dims, dim0/dim1, start_dim/end_dim,
// keepdim, size/shape/sizes/repeats, equation, reduction, normalized_shape).
core::ShardingArgs sharding_args(const c10::FunctionSchema& schema,
                                 const c10::IValue* args, std::size_t n,
                                 const std::string& name) {
  core::ShardingArgs a;
  const auto& params = schema.arguments();
  at::Tensor self;
  std::optional<long> start, end, length;
  long step = 1;
  bool start_none = true, end_none = true;
  for (std::size_t i = 0; i < n && i < params.size(); ++i) {
    const std::string& p = params[i].name();
    const c10::IValue& v = args[i];
    if (!self.defined() && v.isTensor()) self = v.toTensor();
    if (p == "dim" || p == "dims") {
      if (auto l = ints_of(v)) {
        a.dims = *l;
        a.has_dims = !l->empty();
      }
    } else if (p == "dim0" || p == "dim1" || p == "source" ||
               p == "destination" || p == "start_dim" || p == "end_dim") {
      if (auto l = ints_of(v)) {
        for (long d : *l) a.dims.push_back(d);
        a.has_dims = true;
      }
    } else if (p == "keepdim" && v.isBool()) {
      a.keepdim = v.toBool();
    } else if (p == "size" || p == "shape" || p == "sizes" || p == "repeats") {
      if (auto l = ints_of(v); l && !v.isInt())
        a.sizes.assign(l->begin(), l->end());
    } else if (p == "equation" && v.isString()) {
      a.equation = v.toStringRef();
    } else if (p == "reduction" && v.isInt()) {
      long r = v.toInt();
      a.reduction = r == 0 ? "none" : r == 2 ? "sum" : "mean";
    } else if (p == "normalized_shape") {
      if (auto l = ints_of(v)) a.normalized_ndim = static_cast<long>(l->size());
    } else if (p == "start") {
      start = int_of(v);
      start_none = v.isNone();
    } else if (p == "end") {
      end = int_of(v);
      end_none = v.isNone();
    } else if (p == "length") {
      length = int_of(v);
    } else if (p == "step") {
      if (auto s = int_of(v)) step = *s;
    } else if (p == "indices" && name == "index" && v.isList()) {
      for (const c10::IValue& item : v.toListRef())
        a.index.push_back({item.isTensor() ? core::IndexItem::Kind::Tensor
                                           : core::IndexItem::Kind::FullSlice});
    }
  }
  // narrow / slice over the whole dim are no-ops, allowed on a shard.
  if ((name == "narrow" || name == "slice") && self.defined() &&
      !a.dims.empty()) {
    long d = a.dims[0] < 0 ? a.dims[0] + self.dim() : a.dims[0];
    if (d >= 0 && d < self.dim()) {
      long size = self.size(d);
      if (name == "narrow")
        a.full_range = start == 0 && length == size;
      else
        a.full_range = (start_none || start == 0) &&
                       (end_none || (end && *end >= size)) && step == 1;
    }
  }
  return a;
}

// The op name the core's rules see: the ATen name, except for the ATen ops
// whose spec name differs from their schema name.
std::string rule_name(const OpEntry& e) {
  std::string canon = core::canonical_op_name(e.qualified);
  if (canon == "cross_entropy_loss") return "cross_entropy";
  if (canon == "nll_loss_nd" || canon == "nll_loss2d") return "nll_loss";
  return e.qualified;
}

struct Operands {
  std::vector<core::GlobalOperand> list;
  // Tensors the op mutates (in-place self, out=): tensor, type before,
  // requires_grad.
  struct Mutated {
    at::Tensor tensor;
    std::optional<core::GlobalType> before;
    bool requires_grad;
  };
  std::vector<Mutated> mutated;
};

// The cross-mesh lift of spec §6.2 for a global type: an operand typed on
// another mesh of the World is re-expressed on the current mesh's axes with
// its PartitionSpec remapped (§10.3 step 5). Left as it is when it has no
// foreign axis or its map cannot be lifted (the local rule then reports
// why); a map that lifts with a spec that does not is an SpmdTypeError.
std::optional<core::GlobalType> lift_global(std::optional<core::GlobalType> g,
                                            const OpEntry& e, std::size_t i,
                                            const Ctx& ctx) {
  if (!g || !ctx.inference.axis_table || !ctx.inference.mesh_axes) return g;
  const std::vector<std::string>& mesh = *ctx.inference.mesh_axes;
  bool foreign = false;
  for (const auto& entry : g->local.map())
    foreign |= std::find(mesh.begin(), mesh.end(), entry.first) == mesh.end();
  if (!foreign) return g;
  core::Result<core::GlobalType> r = core::reinterpret_mesh_global(
      *g, std::nullopt, mesh, *ctx.inference.axis_table);
  if (r.ok()) return r.value();
  if (core::reinterpret_mesh(g->local, mesh, *ctx.inference.axis_table).ok()) {
    core::TypeError err = r.error();
    err.message = e.qualified + ": args[" + std::to_string(i) +
                  "] cannot be auto-reinterpreted to the current mesh. " +
                  err.message;
    throw_with_context(err, mesh_suffix(ctx));
  }
  return g;
}

void add_tensor(const OpEntry& e, std::size_t i, const at::Tensor& t,
                const Ctx& ctx, Operands& out) {
  if (!t.defined()) return;
  if (t.unsafeGetTensorImpl()->is_wrapped_number()) {
    if (e.tensor_position[i])
      out.list.push_back(core::GlobalOperand::weak_scalar(int(i)));
    return;
  }
  std::optional<core::GlobalType> g = global_of(t);
  const ArgRole role = e.roles[i];
  if (role == ArgRole::Attributes) return;
  if (role != ArgRole::Input) out.mutated.push_back({t, g, t.requires_grad()});
  if (role != ArgRole::Out)
    out.list.push_back(core::GlobalOperand::tensor(
        lift_global(g, e, i, ctx), core::Shape::of(t.sizes().vec()), int(i)));
}

std::optional<double> number_of(const c10::IValue& v) {
  if (v.isDouble()) return v.toDouble();
  if (v.isInt()) return static_cast<double>(v.toInt());
  if (v.isBool()) return v.toBool() ? 1.0 : 0.0;
  return std::nullopt;
}

// What the values of `t` are, for the unmasked-rows rule (core/masks.h): a
// bool tensor, a tensor of zeros and ones (read from its values), or
// nothing known. Real values replace the static rules of mask_result.
core::MaskKind mask_kind_of(const at::Tensor& t) {
  if (t.scalar_type() == at::kBool) return core::MaskKind::Bool;
  if (t.is_complex() || t.numel() == 0) return core::MaskKind::None;
  c10::impl::ExcludeDispatchKeyGuard no_typing(kModeKey);
  bool zero_one = at::logical_or(t == 0, t == 1).all().item<bool>();
  return zero_one ? core::MaskKind::ZeroOne : core::MaskKind::None;
}

// The masks and the fill value that core::zero_fills reads, filled only
// when an operand holds unmasked rows (a vocab-parallel lookup not yet
// zeroed; reading values costs an op): every tensor's mask kind, the
// numbers' values, and the Scalar value of masked_fill / where, which is
// not an operand of the type rules.
void add_mask_operands(const OpEntry& e, const c10::IValue* args,
                       const std::string& canon, Operands& out) {
  bool any = false;
  for (const auto& o : out.list)
    any = any || (o.type && !o.type->unmasked_rows.empty());
  if (!any) return;
  std::vector<core::GlobalOperand> list;
  std::size_t k = 0;
  for (std::size_t i = 0; i < e.num_args; ++i) {
    const c10::IValue& v = args[i];
    // The operands collect() made for argument i, in order.
    while (k < out.list.size() && out.list[k].position == int(i)) {
      core::GlobalOperand o = out.list[k++];
      if (o.kind == core::Operand::Kind::Tensor && v.isTensor())
        o.mask = mask_kind_of(v.toTensor());
      if (o.kind != core::Operand::Kind::Tensor) {
        if (v.isTensor()) {
          c10::impl::ExcludeDispatchKeyGuard no_typing(kModeKey);
          o.constant = v.toTensor().item<double>();
        } else {
          o.constant = number_of(v);
        }
      }
      list.push_back(std::move(o));
    }
    if ((canon == "masked_fill" || canon == "where") && !v.isTensor() &&
        !e.tensor_position[i] && number_of(v)) {
      core::GlobalOperand s = core::GlobalOperand::weak_scalar(int(i));
      s.constant = number_of(v);
      list.push_back(std::move(s));
    }
  }
  for (; k < out.list.size(); ++k) list.push_back(out.list[k]);
  out.list = std::move(list);
}

Operands collect(const OpEntry& e, const c10::IValue* args, const Ctx& ctx) {
  Operands out;
  for_each_operand(
      e, args,
      [&](std::size_t i, const at::Tensor& t) {
        add_tensor(e, i, t, ctx, out);
      },
      [&](std::size_t i) {
        out.list.push_back(core::GlobalOperand::weak_scalar(int(i)));
      });
  add_mask_operands(e, args, core::canonical_op_name(e.qualified), out);
  return out;
}

// The result's type for one output tensor: a spec whose rank disagrees with
// the tensor's (an op whose outputs have different ranks) is not guessed:
// its axes become unknown shards.
core::GlobalType fit_to(const core::GlobalType& g, const at::Tensor& t) {
  if (!g.spec || g.spec->rank() == t.dim()) return g;
  core::GlobalType out = g;
  for (const std::string& a : g.spec->axes()) out.unknown_shards.insert(a);
  out.spec.reset();
  return out;
}

// Strict mode: real shapes are known here, so a result shard that is unknown
// although no operand's was means the core has no rule for this op and these
// shards; strict mode does not guess.
std::optional<core::TypeError> unknown_result_shard(const OpEntry& e,
                                                    const core::GlobalResult& r,
                                                    const Operands& ops) {
  for (const std::string& a : r.type.unknown_shards) {
    if (r.type.unmasked_rows.count(a)) continue;  // known: unmasked rows
    bool was_unknown = false;
    for (const auto& o : ops.list)
      was_unknown = was_unknown || (o.type && o.type->unknown_shards.count(a));
    if (was_unknown) continue;
    core::TypeError u;
    u.kind = core::ErrorKind::SpmdTypeError;
    u.axis = a;
    u.message = e.qualified + ": the shard of the result on axis " + a +
                " is unknown: the core has no sharding rule for this op "
                "and these operands";
    for (const std::string& note : r.notes) u.message += " (" + note + ")";
    u.fix =
        "run the op in a local region (checker::LocalRegionGuard or "
        "checker::local_map) and assert the result's type, or gather "
        "the input on " +
        a + " first; permissive mode keeps the shard unknown";
    return u;
  }
  return std::nullopt;
}

// Types the op's results: every returned tensor gets `out` (fitted to its
// rank) unless it is a mutated operand, which gets its own type.
void stamp_results(torch::jit::Stack* stack, const OpEntry& e,
                   const core::GlobalType& out, const Operands& ops,
                   const std::vector<core::GlobalType>& mutated_after) {
  const std::size_t n = std::min(e.num_returns, stack->size());
  for (auto it = stack->end() - n; it != stack->end(); ++it) {
    if (it->isTensor()) {
      const at::Tensor& t = it->toTensor();
      bool is_mutated = false;
      for (std::size_t i = 0; i < ops.mutated.size(); ++i)
        is_mutated = is_mutated || ops.mutated[i].tensor.is_same(t);
      if (!is_mutated) stamp_global(t, fit_to(out, t));
    } else if (it->isTensorList()) {
      for (const at::Tensor& t : it->toTensorList().vec())
        stamp_global(t, fit_to(out, t));
    }
  }
  for (std::size_t i = 0; i < ops.mutated.size(); ++i)
    stamp_global(ops.mutated[i].tensor, mutated_after[i]);
}

void trace_global(const OpEntry& e, const Operands& ops,
                  const core::GlobalResult& r) {
  std::string s = "spmd-check trace (global): " + e.qualified + "(";
  bool first = true;
  for (const auto& o : ops.list) {
    if (o.kind != core::Operand::Kind::Tensor) continue;
    s += first ? "" : ", ";
    first = false;
    s += o.type ? o.type->to_string() : "untyped";
  }
  const std::string where = spmd::detail::last_call_site();
  std::cerr << s << ") -> " << r.type.to_string()
            << (where.empty() ? "" : "  [" + where + "]") << "\n";
  for (const std::string& note : r.notes)
    std::cerr << "  note: " << note << "\n";
}

}  // namespace

std::string type_string(const at::Tensor& t) {
  TypeRef ty = type_of(t);
  if (ty == nullptr) return "untyped";
  ShardRef s = is_global_mode() ? shards_of(t) : nullptr;
  if (s == nullptr) return ty->to_string();
  core::GlobalType g{*ty, s->spec, s->unknown, s->unmasked};
  return g.to_string();
}

void typecheck_global(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                      torch::jit::Stack* stack, const OpEntry& e,
                      const Ctx& ctx, ThreadState& st) {
  const c10::IValue* args = stack->data() + (stack->size() - e.num_args);
  Operands ops = collect(e, args, ctx);
  const std::string name = rule_name(e);
  core::ShardingArgs sargs = sharding_args(op.schema(), args, e.num_args,
                                           core::canonical_op_name(name));
  core::Result<core::GlobalResult> r =
      core::infer_global(name, ops.list, sargs, ctx.global);

  // In-place / out= targets (spec §6.11): the local map follows the local
  // rule; the shard information is the op's result (infer_global has
  // already dropped the shards of axes that are not V, §12.1).
  std::vector<core::GlobalType> mutated_after;
  std::optional<core::TypeError> error;
  if (!r.ok()) error = r.error();
  if (!error && st.strict) error = unknown_result_shard(e, r.value(), ops);
  for (std::size_t i = 0; !error && i < ops.mutated.size(); ++i) {
    const auto& m = ops.mutated[i];
    core::Result<TensorType> after = core::apply_inplace(
        e.info.name,
        m.before ? std::optional<TensorType>(m.before->local) : std::nullopt,
        r.value().type.local, m.requires_grad);
    if (!after.ok()) {
      error = after.error();
      break;
    }
    core::GlobalType g = r.value().type;
    g.local = after.value();
    mutated_after.push_back(fit_to(g, m.tensor));
  }
  if (error) {
    std::vector<c10::IValue> saved(args, args + e.num_args);
    std::string context = op_context(op.schema(), saved, ctx);
    run_untyped(op, ks, stack);
    throw_with_context(*error, context);
  }

  run_untyped(op, ks, stack);
  stamp_results(stack, e, r.value().type, ops, mutated_after);
  if (st.trace) trace_global(e, ops, r.value());
}

bool collective_global(const Ctx& ctx, const core::CollectiveCall& call,
                       std::string_view axis, bool axis_is_singleton,
                       const at::Tensor& input, const at::Tensor& output) {
  if (!ctx.is_global) return false;
  std::optional<core::GlobalType> in = global_of(input);
  // A flattened collective axis (dp_cp) acts on the tensor's sub-axes.
  std::vector<std::string> resolved{std::string(axis)};
  if (in && ctx.inference.axis_table)
    if (auto subs = core::resolve_collective_axes(axis, in->local,
                                                  *ctx.inference.axis_table))
      resolved = *subs;
  core::Result<core::GlobalType> r = core::transfer_global(
      call, in, axis, resolved, core::Shape::of(input.sizes().vec()),
      ctx.global, axis_is_singleton);
  if (!r.ok()) {
    std::string context =
        "  In " + call.to_string() + "(\n    x: " + describe_tensor(input) +
        ",\n    axis: " + std::string(axis) + ",\n  )" + mesh_suffix(ctx);
    throw_with_context(r.error(), context);
  }
  // Permissive on an untyped input: the output stays untyped (§7.2 item 4).
  if (!in && r.value().local.empty()) return true;
  stamp_global(output, fit_to(r.value(), output));
  return true;
}

}  // namespace spmd::checker::internal

namespace spmd::checker {

using namespace internal;

core::PartitionSpec partition_spec(
    std::initializer_list<std::vector<Axis>> entries) {
  std::vector<core::RawSpecEntry> raw;
  for (const auto& e : entries) {
    if (e.empty()) {
      raw.emplace_back();
      continue;
    }
    std::vector<std::string> names;
    for (const Axis& a : e) names.emplace_back(a.name);
    raw.emplace_back(std::move(names));
  }
  std::shared_ptr<const MeshView> mesh;
  if (ThreadState* st = active_state()) mesh = current_ctx(*st).mesh;
  core::Result<core::PartitionSpec> r = core::PartitionSpec::normalize(
      raw, [&](std::string_view a) { return mesh && mesh->is_singleton(a); });
  if (!r.ok()) throw_with_context(r.error(), "");
  return r.value();
}

core::BoundaryType boundary(std::initializer_list<AxisType> type) {
  core::BoundaryType b;
  for (const AxisType& a : type) b.entries.emplace_back(a.axis, a.type);
  return b;
}

core::BoundaryType boundary(std::initializer_list<AxisType> type,
                            const core::PartitionSpec& spec) {
  core::BoundaryType b = boundary(type);
  b.spec = spec;
  return b;
}

core::BoundaryType boundary(const core::PartitionSpec& spec) {
  core::BoundaryType b;
  b.kind = core::BoundaryType::Kind::Spec;
  b.spec = spec;
  return b;
}

namespace {

std::vector<core::BoundaryValue> boundary_values(
    const std::vector<at::Tensor>& ts, bool drop_specs) {
  std::vector<core::BoundaryValue> out;
  for (const at::Tensor& t : ts) {
    core::BoundaryValue v;
    v.is_tensor = t.defined();
    if (v.is_tensor) {
      v.type = global_of(t);
      if (drop_specs && v.type) {
        v.type->spec.reset();
        v.type->unknown_shards.clear();
      }
      v.shape = core::Shape::of(t.sizes().vec());
    }
    out.push_back(std::move(v));
  }
  return out;
}

void stamp_all(const std::vector<at::Tensor>& ts,
               const std::vector<std::optional<core::GlobalType>>& types) {
  for (std::size_t i = 0; i < ts.size() && i < types.size(); ++i)
    if (ts[i].defined() && types[i]) stamp_global(ts[i], *types[i]);
}

}  // namespace

std::vector<at::Tensor> local_map(
    const std::function<
        std::vector<at::Tensor>(const std::vector<at::Tensor>&)>& body,
    const std::vector<at::Tensor>& inputs,
    const std::optional<std::vector<core::BoundaryType>>& in_types,
    const std::vector<core::BoundaryType>& out_types, std::string_view name) {
  if (active_state() == nullptr) return body(inputs);
  std::vector<core::BoundaryType> in_leaves;
  if (in_types)
    for (std::size_t k = 0; k < in_types->size(); ++k)
      in_leaves.push_back(resolve_boundary_names(
          (*in_types)[k], k < inputs.size() ? inputs[k] : at::Tensor(),
          "local_map[" + std::string(name) + "] in_types[" + std::to_string(k) +
              "]"));
  auto in = core::check_boundary(boundary_values(inputs, false), in_leaves,
                                 "input", name, !in_types.has_value());
  if (!in.ok()) throw_with_context(in.error(), "");
  stamp_all(inputs, in.value());
  std::vector<at::Tensor> results;
  {
    LocalRegionGuard region;
    results = body(inputs);
  }
  std::vector<core::BoundaryType> out_leaves;
  for (std::size_t k = 0; k < out_types.size(); ++k)
    out_leaves.push_back(resolve_boundary_names(
        out_types[k], k < results.size() ? results[k] : at::Tensor(),
        "local_map[" + std::string(name) + "] out_types[" + std::to_string(k) +
            "]"));
  auto out =
      core::stamp_outputs(boundary_values(results, true), out_leaves, name);
  if (!out.ok()) throw_with_context(out.error(), "");
  stamp_all(results, out.value());
  return results;
}

}  // namespace spmd::checker

// boundaries.cpp - the non-template half of <spmd/boundaries.h>: the edges
// of a typed unchecked region (spec §12.3), the map forms of mutate_type
// (§8.2) and typed scalars (§11).
#include <ATen/ATen.h>
#include <spmd/boundaries.h>
#include <spmd/core/annotation_rules.h>
#include <spmd/errors.h>

#include <algorithm>

#include "internal.h"

namespace spmd {
namespace {

using checker::internal::active_state;
using checker::internal::Ctx;
using checker::internal::current_ctx;
using checker::internal::ThreadState;
using core::TensorType;

std::string count(std::size_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

// (axis, type) pairs of a map, singleton axes of the current mesh dropped,
// S(i) recorded as V (mutate_type and Scalar compare local types).
std::vector<std::pair<std::string, PerAxisType>> local_entries(
    std::initializer_list<AxisType> type, const Ctx* ctx) {
  std::vector<std::pair<std::string, PerAxisType>> out;
  for (const AxisType& a : type) {
    if (a.axis == nullptr)
      throw_error(core::ErrorKind::UsageError, "an axis has no name");
    if (ctx != nullptr && ctx->mesh && ctx->mesh->is_singleton(a.axis))
      continue;
    out.emplace_back(a.axis, a.type.local());
  }
  return out;
}

}  // namespace

namespace detail {

void check_boundary_inputs(const BoundaryTypes& types,
                           const std::vector<const at::Tensor*>& args) {
  if (!types.out_types)
    throw_error(
        core::ErrorKind::UsageError,
        "no_typecheck: in_types without out_types: the results of the "
        "unchecked region would be untyped",
        "give out_types (one type per tensor result), or use "
        "checker::NoTypecheckGuard for a region whose results need no type");
  if (!types.in_types) return;  // Infer: the inputs are not checked
  const std::vector<LeafType>& leaves = *types.in_types;
  if (leaves.size() != args.size())
    throw_error(core::ErrorKind::SpmdTypeError,
                "no_typecheck: in_types has " + count(leaves.size(), "leaf") +
                    " but the body takes " + count(args.size(), "argument"),
                "give one leaf per argument (std::nullopt for a non-tensor)");
  for (std::size_t k = 0; k < args.size(); ++k) {
    const std::string where =
        "no_typecheck in_types[" + std::to_string(k) + "]";
    if (args[k] == nullptr) {
      if (leaves[k])
        throw_error(core::ErrorKind::SpmdTypeError,
                    where + ": a type for an argument that is not a tensor",
                    "use std::nullopt for it");
      continue;
    }
    if (!leaves[k])
      throw_error(core::ErrorKind::SpmdTypeError,
                  where + ": std::nullopt for a tensor argument",
                  "give the tensor's type");
    checker::internal::assert_entries(*args[k], *leaves[k], where);
  }
}

void stamp_boundary_outputs(const BoundaryTypes& types,
                            const std::vector<at::Tensor>& outputs,
                            const std::vector<const at::Tensor*>& inputs) {
  const std::vector<LeafType>& leaves = *types.out_types;
  if (leaves.size() != outputs.size())
    throw_error(core::ErrorKind::SpmdTypeError,
                "no_typecheck: out_types has " + count(leaves.size(), "leaf") +
                    " but the body returned " + count(outputs.size(), "tensor"),
                "give one leaf per tensor result");
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const std::string where =
        "no_typecheck out_types[" + std::to_string(k) + "]";
    if (!leaves[k])
      throw_error(core::ErrorKind::SpmdTypeError,
                  where + ": std::nullopt for a tensor result",
                  "give its type");
    bool is_input = false;
    for (const at::Tensor* in : inputs)
      if (in != nullptr && in->defined() && outputs[k].defined() &&
          in->unsafeGetTensorImpl() == outputs[k].unsafeGetTensorImpl())
        is_input = true;
    // A fresh result is stamped; an input passed through is checked.
    if (!is_input) checker::clear_type(outputs[k]);
    checker::internal::assert_entries(outputs[k], *leaves[k], where);
  }
}

}  // namespace detail

const at::Tensor& mutate_type(const at::Tensor& x, PerAxisType src,
                              std::initializer_list<AxisType> dst,
                              SourceLocation loc) {
  ThreadState* st = active_state();
  if (st == nullptr) return x;
  detail::CallSiteScope site("mutate_type", loc);
  std::vector<std::tuple<std::string, PerAxisType, PerAxisType>> ups;
  for (const auto& [axis, d] : local_entries(dst, &current_ctx(*st)))
    ups.emplace_back(axis, src.local(), d);
  return checker::internal::mutate_axes(x, ups);
}

const at::Tensor& mutate_type(const at::Tensor& x,
                              std::initializer_list<AxisType> src,
                              PerAxisType dst, SourceLocation loc) {
  ThreadState* st = active_state();
  if (st == nullptr) return x;
  detail::CallSiteScope site("mutate_type", loc);
  std::vector<std::tuple<std::string, PerAxisType, PerAxisType>> ups;
  for (const auto& [axis, s] : local_entries(src, &current_ctx(*st)))
    ups.emplace_back(axis, s, dst.local());
  return checker::internal::mutate_axes(x, ups);
}

const at::Tensor& mutate_type(const at::Tensor& x,
                              std::initializer_list<AxisType> src,
                              std::initializer_list<AxisType> dst,
                              SourceLocation loc) {
  ThreadState* st = active_state();
  if (st == nullptr) return x;
  detail::CallSiteScope site("mutate_type", loc);
  const Ctx& ctx = current_ctx(*st);
  auto s = local_entries(src, &ctx);
  auto d = local_entries(dst, &ctx);
  auto keys = [](const auto& v) {
    std::vector<std::string> k;
    for (const auto& e : v) k.push_back(e.first);
    std::sort(k.begin(), k.end());
    return k;
  };
  if (keys(s) != keys(d))
    throw_error(core::ErrorKind::SpmdTypeError,
                "mutate_type: src and dst must name the same axes",
                "give both maps the same axes, or use the single-axis form");
  std::vector<std::tuple<std::string, PerAxisType, PerAxisType>> ups;
  for (const auto& [axis, st_] : s)
    for (const auto& [axis2, dt] : d)
      if (axis == axis2) ups.emplace_back(axis, st_, dt);
  return checker::internal::mutate_axes(x, ups);
}

const at::Tensor& assert_local_type_like(
    const at::Tensor& t, const at::Tensor& src,
    std::initializer_list<AxisType> overrides, SourceLocation loc) {
  if (checker::internal::active_state() == nullptr) return t;
  spmd::detail::CallSiteScope site("assert_local_type_like", loc);
  return checker::internal::assert_like(t, src, overrides, /*with_spec=*/false);
}

// ---------------------------------------------------------------- Scalar --

Scalar::Scalar(double value, std::initializer_list<AxisType> type)
    : value_(value) {
  ThreadState* st = active_state();
  for (const AxisType& a : type)
    if (a.type.is_shard())
      throw_error(core::ErrorKind::UsageError,
                  "Scalar: S(i) is not a scalar type (a number has no dims)",
                  "use V");
  for (const auto& [axis, t] :
       local_entries(type, st ? &current_ctx(*st) : nullptr)) {
    if (type_.has(axis))
      throw_error(core::ErrorKind::UsageError,
                  "Scalar: axis '" + axis + "' is given twice");
    type_.set(axis, t);
  }
}

at::Tensor Scalar::tensor() const {
  at::Tensor t;
  {
    checker::NoTypecheckGuard untyped;
    t = at::scalar_tensor(value_, at::kFloat);
  }
  if (active_state() != nullptr)
    checker::internal::stamp(t, checker::internal::intern(type_));
  return t;
}

Scalar Scalar::with(double v) const {
  // Outside a session a result is a plain value (spec §11).
  return active_state() != nullptr ? Scalar(v, type_) : Scalar(v, TensorType());
}

Scalar Scalar::combine(const Scalar& a, const Scalar& b, double v,
                       const char* op) {
  if (active_state() == nullptr) return Scalar(v, TensorType());
  if (a.type_.axes() != b.type_.axes())
    throw_error(core::ErrorKind::UsageError,
                std::string("Scalar ") + op +
                    " Scalar: the maps must name the same axes (" +
                    a.type_.to_string() + " vs " + b.type_.to_string() + ")");
  TensorType out;
  for (const auto& [axis, ta] : a.type_.map()) {
    PerAxisType tb = *b.type_.get(axis);
    if (ta == tb) {
      out.set(axis, ta);
    } else if ((ta == R && tb == V) || (ta == V && tb == R)) {
      out.set(axis, V);
    } else {
      throw_error(core::ErrorKind::UsageError,
                  std::string("Scalar ") + op +
                      " Scalar: " + core::to_string(ta) + " and " +
                      core::to_string(tb) + " on axis " + axis +
                      " do not combine (spec §11: equal types, or R with V)");
    }
  }
  return Scalar(v, out);
}

Scalar operator+(const Scalar& a, const Scalar& b) {
  return Scalar::combine(a, b, a.value_ + b.value_, "+");
}
Scalar operator-(const Scalar& a, const Scalar& b) {
  return Scalar::combine(a, b, a.value_ - b.value_, "-");
}
Scalar operator*(const Scalar& a, const Scalar& b) {
  return Scalar::combine(a, b, a.value_ * b.value_, "*");
}
Scalar operator/(const Scalar& a, const Scalar& b) {
  return Scalar::combine(a, b, a.value_ / b.value_, "/");
}

}  // namespace spmd

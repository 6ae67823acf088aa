// spmd/boundaries.h - typed boundaries and annotation helpers of the runtime
// checker: a typed unchecked region (no_typecheck with in_types / out_types,
// spec §12.3), the map forms of mutate_type (§8.2) and typed scalars with
// the scalar arithmetic of §11.
#ifndef SPMD_BOUNDARIES_H
#define SPMD_BOUNDARIES_H

#include <ATen/core/Tensor.h>
#include <spmd/annotations.h>
#include <spmd/checker.h>
#include <spmd/core/tensor_type.h>

#include <initializer_list>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace spmd {

// Every form of mutate_type and assert_type_like as spmd::...
using checker::assert_type_like;
using checker::mutate_type;

/// One leaf of in_types / out_types: the type of a tensor (S(i) allowed), or
/// std::nullopt for an argument or result that is not a tensor.
using LeafType = std::optional<std::vector<AxisType>>;

/// The types at the edges of a typed unchecked region (spec §12.3).
struct BoundaryTypes {
  /// One leaf per argument of the body; unset = Infer (inputs unchecked).
  std::optional<std::vector<LeafType>> in_types;
  /// One leaf per tensor the body returns (a Tensor, a vector of tensors or
  /// a tuple, flattened); required.
  std::optional<std::vector<LeafType>> out_types;
};

namespace detail {
/// Checks the body's arguments against in_types (assert_type semantics).
/// `is_tensor[k]` says whether argument k is a tensor. Errors: UsageError
/// without out_types; SpmdTypeError for a count mismatch, a tensor whose
/// leaf is nullopt or a non-tensor whose leaf is a type, or a type mismatch.
void check_boundary_inputs(const BoundaryTypes& types,
                           const std::vector<const at::Tensor*>& args);
/// Stamps the body's results with out_types (a result that is one of the
/// inputs is checked instead). Errors: SpmdTypeError for a count mismatch.
void stamp_boundary_outputs(const BoundaryTypes& types,
                            const std::vector<at::Tensor>& outputs,
                            const std::vector<const at::Tensor*>& inputs);

inline const at::Tensor* tensor_ptr(const at::Tensor& t) { return &t; }
template <typename X>
const at::Tensor* tensor_ptr(const X&) {
  return nullptr;
}
inline void flatten(std::vector<at::Tensor>& out, const at::Tensor& t) {
  out.push_back(t);
}
inline void flatten(std::vector<at::Tensor>& out,
                    const std::vector<at::Tensor>& v) {
  out.insert(out.end(), v.begin(), v.end());
}
template <typename... Xs>
void flatten(std::vector<at::Tensor>& out, const std::tuple<Xs...>& t) {
  std::apply([&](const auto&... x) { (flatten(out, x), ...); }, t);
}
}  // namespace detail

/// Runs `body(args...)` with checking paused, between typed edges (the
/// reference's no_typecheck(in_types=..., out_types=...)): the arguments are
/// checked against `types.in_types` first, the results are stamped with
/// `types.out_types` after. Without a guard it is `body(args...)`.
/// Errors: UsageError when out_types is missing (spec §12.3: a region
/// without out_types would leave its results untyped); SpmdTypeError for
/// mismatched structure or types.
template <typename F, typename... Args>
auto no_typecheck(const BoundaryTypes& types, F&& body, Args&&... args) {
  if (!checker::is_type_checking())
    return std::forward<F>(body)(std::forward<Args>(args)...);
  std::vector<const at::Tensor*> in{detail::tensor_ptr(args)...};
  detail::check_boundary_inputs(types, in);
  auto result = [&] {
    checker::NoTypecheckGuard paused;
    return std::forward<F>(body)(args...);
  }();
  std::vector<at::Tensor> outs;
  detail::flatten(outs, result);
  detail::stamp_boundary_outputs(types, outs, in);
  return result;
}

/// mutate_type with a map of destinations (spec §8.2): every axis of `dst`
/// must currently be `src` and becomes its entry. Singleton axes are
/// skipped; S(i) is compared and stored as V. Errors: SpmdTypeError for a
/// missing axis or another current type; `x` is unchanged on error.
const at::Tensor& mutate_type(const at::Tensor& x, PerAxisType src,
                              std::initializer_list<AxisType> dst,
                              SourceLocation loc = SourceLocation::current());
/// mutate_type with a map of expected sources: every axis of `src` must
/// currently have its entry and becomes `dst`.
const at::Tensor& mutate_type(const at::Tensor& x,
                              std::initializer_list<AxisType> src,
                              PerAxisType dst,
                              SourceLocation loc = SourceLocation::current());
/// mutate_type with two maps: they must name the same axes (else
/// SpmdTypeError); each axis goes from its src entry to its dst entry.
const at::Tensor& mutate_type(const at::Tensor& x,
                              std::initializer_list<AxisType> src,
                              std::initializer_list<AxisType> dst,
                              SourceLocation loc = SourceLocation::current());

/// assert_type_like without the PartitionSpec (spec §8.2
/// assert_local_type_like); in local mode the same as assert_type_like.
const at::Tensor& assert_local_type_like(
    const at::Tensor& t, const at::Tensor& src,
    std::initializer_list<AxisType> overrides = {},
    SourceLocation loc = SourceLocation::current());

/// A number with an explicit type map: the reference's Scalar(value, type)
/// (spec §11). Arithmetic with another Scalar follows §11 inside a session
/// (same axes; equal types stay, {R, V} gives V, anything else is a
/// UsageError); with a plain number it keeps the map. As an operand of a
/// tensor op, tensor() gives a 0-d tensor carrying the map. Outside a
/// session the map is dropped from results (they are plain values).
class Scalar {
 public:
  /// Errors: UsageError for an S(i) entry or an axis given twice.
  Scalar(double value, std::initializer_list<AxisType> type);
  template <typename N, typename = std::enable_if_t<std::is_integral_v<N> &&
                                                    !std::is_same_v<N, bool>>>
  Scalar(N value, std::initializer_list<AxisType> type)
      : Scalar(static_cast<double>(value), type) {}
  /// A bool is not a numeric scalar (spec §11): rejected at compile time.
  Scalar(bool, std::initializer_list<AxisType>) = delete;
  double value() const { return value_; }
  /// The type map (singleton axes of the current mesh dropped).
  const core::TensorType& type() const { return type_; }
  /// A 0-d f32 tensor holding the value, typed with the map under a guard.
  at::Tensor tensor() const;

  friend Scalar operator+(const Scalar& a, const Scalar& b);
  friend Scalar operator-(const Scalar& a, const Scalar& b);
  friend Scalar operator*(const Scalar& a, const Scalar& b);
  friend Scalar operator/(const Scalar& a, const Scalar& b);
  friend Scalar operator+(const Scalar& a, double b) {
    return a.with(a.value_ + b);
  }
  friend Scalar operator+(double a, const Scalar& b) {
    return b.with(a + b.value_);
  }
  friend Scalar operator-(const Scalar& a, double b) {
    return a.with(a.value_ - b);
  }
  friend Scalar operator-(double a, const Scalar& b) {
    return b.with(a - b.value_);
  }
  friend Scalar operator*(const Scalar& a, double b) {
    return a.with(a.value_ * b);
  }
  friend Scalar operator*(double a, const Scalar& b) {
    return b.with(a * b.value_);
  }
  friend Scalar operator/(const Scalar& a, double b) {
    return a.with(a.value_ / b);
  }
  friend Scalar operator/(double a, const Scalar& b) {
    return b.with(a / b.value_);
  }
  Scalar operator-() const { return with(-value_); }
  /// Comparisons compare values and give plain booleans (spec §11).
  friend bool operator<(const Scalar& a, const Scalar& b) {
    return a.value_ < b.value_;
  }
  friend bool operator==(const Scalar& a, const Scalar& b) {
    return a.value_ == b.value_;
  }
  explicit operator double() const { return value_; }

 private:
  Scalar(double value, core::TensorType type)
      : value_(value), type_(std::move(type)) {}
  Scalar with(double v) const;
  static Scalar combine(const Scalar& a, const Scalar& b, double v,
                        const char* op);
  double value_;
  core::TensorType type_;
};

}  // namespace spmd

#endif  // SPMD_BOUNDARIES_H

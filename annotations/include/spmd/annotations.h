// spmd/annotations.h - the SPMD type vocabulary for C++ tensor code.
//
// Dependency-free C++17. Declares the per-mesh-axis types R, I, V, P and
// S(dim) (spec §2), named mesh axes (`SPMD_AXIS(dp)`), and the `axis = type`
// expressions used inside `[[spmd::type(...)]]` attributes and in
// `spmd::assert_type(x, {dp = R})`. The SPMD_* attribute macros expand to the
// attribute only when the spmd-check Clang plugin is loaded, so annotated code
// compiles warning-free with GCC, plain Clang and inside clangd.
#ifndef SPMD_ANNOTATIONS_H
#define SPMD_ANNOTATIONS_H

namespace spmd {

/// The kind of a per-axis type (spec §2.1, §2.2). `Shard` is S(dim): a
/// refinement of V that only changes the data movement of collectives.
enum class TypeKind : unsigned char {
  Replicate,  ///< R: identical on every rank; gradient is P.
  Invariant,  ///< I: identical on every rank; gradient is I.
  Varying,    ///< V: may differ per rank; gradient is V.
  Partial,    ///< P: pending sum over the axis; gradient is R.
  Shard,      ///< S(dim): varying, sharded on tensor dim `dim` (may be < 0).
};

/// A per-mesh-axis SPMD type: R, I, V, P or S(dim) (spec §2).
/// `dim` is meaningful only for `TypeKind::Shard`; negative dims are resolved
/// against the tensor's ndim at the point of use (spec §2.3).
struct PerAxisType {
  TypeKind kind = TypeKind::Replicate;
  int dim = 0;

  constexpr bool is_shard() const { return kind == TypeKind::Shard; }
  /// The type recorded in a type map: S(i) is recorded as V (spec §2.2).
  constexpr PerAxisType local() const {
    return is_shard() ? PerAxisType{TypeKind::Varying, 0} : *this;
  }
  friend constexpr bool operator==(PerAxisType a, PerAxisType b) {
    return a.kind == b.kind && (a.kind != TypeKind::Shard || a.dim == b.dim);
  }
  friend constexpr bool operator!=(PerAxisType a, PerAxisType b) {
    return !(a == b);
  }
};

/// The per-axis type constants. `using namespace spmd::types;` brings R, I,
/// V, P and S into scope; they are also reachable as spmd::R etc.
namespace types {
inline constexpr PerAxisType R{TypeKind::Replicate, 0};
inline constexpr PerAxisType I{TypeKind::Invariant, 0};
inline constexpr PerAxisType V{TypeKind::Varying, 0};
inline constexpr PerAxisType P{TypeKind::Partial, 0};
/// S(dim): varying, sharded on tensor dimension `dim` (negative allowed).
constexpr PerAxisType S(int dim) { return PerAxisType{TypeKind::Shard, dim}; }
}  // namespace types

using types::I;
using types::P;
using types::R;
using types::S;
using types::V;

/// One entry `axis = type` of a whole-tensor type, e.g. `dp = R`.
struct AxisType {
  const char* axis;
  PerAxisType type;
};

/// A named mesh axis. Declare with SPMD_AXIS(name). `dp = R` is a constant
/// expression of type AxisType, usable inside `[[spmd::type(dp = R)]]` and in
/// `spmd::assert_type(x, {dp = R, tp = P})`.
struct Axis {
  const char* name;

  // A const assignment operator on purpose: it builds an AxisType and never
  // modifies the axis, so `dp = R` works on a constexpr Axis constant. The
  // type is taken by reference: binding `R` to it costs Clang no copy
  // constructor call, and every `[[spmd::type(dp = R)]]` argument is parsed
  // as this call (docs/plugin.md, Performance).
  constexpr AxisType operator=(const PerAxisType& type) const {
    return {name, type};
  }
};

/// A tensor's rank (number of dims), as an entry of `[[spmd::type(...)]]`:
/// `SPMD_TYPE(tp = S(-1), spmd::rank(3))`. Global mode needs it to tell
/// S(-1) from S(2) where the code does not show the rank (docs/plugin.md).
struct Rank {
  int ndim;
};
/// `spmd::rank(n)`: the annotated tensor has n dims.
constexpr Rank rank(int ndim) { return Rank{ndim}; }

/// `spmd::Infer`: the argument of `[[spmd::local(spmd::Infer)]]`
/// (SPMD_LOCAL_INFER), spec §12.3's `local_map(in_types=Infer)`: the local
/// region's input types are inferred from the arguments at its calls.
struct InferType {};
inline constexpr InferType Infer{};

/// `spmd::None`: the PartitionSpec entry of a dim that no axis shards.
struct NoneType {};
inline constexpr NoneType None{};

/// One entry of a PartitionSpec (spec §12.1): none, one axis, or an ordered
/// tuple of axes `{dp, tp}` (outer to inner). An empty tuple `{}` does not
/// compile (spec §12.1: InvalidArgument).
struct SpecDim {
  const char* axes[3] = {nullptr, nullptr, nullptr};
  int count = -1;  ///< number of axes; 0 for None; -1 for "no such dim"

  SpecDim() = delete;
  constexpr SpecDim(NoneType) : count(0) {}
  constexpr SpecDim(Axis a) : axes{a.name, nullptr, nullptr}, count(1) {}
  constexpr SpecDim(Axis a, Axis b) : axes{a.name, b.name, nullptr}, count(2) {}
  constexpr SpecDim(Axis a, Axis b, Axis c)
      : axes{a.name, b.name, c.name}, count(3) {}
  /// The filler of unused trailing parameters of spmd::spec.
  static constexpr SpecDim absent() { return SpecDim(0); }

 private:
  constexpr explicit SpecDim(int) : count(-1) {}
};

/// A tensor's PartitionSpec: one entry per tensor dim (spec §12.1).
struct SpecAnnotation {
  SpecDim dims[8];
};

/// `spmd::spec(tp, None, {dp, ep})`: a PartitionSpec as an entry of
/// `[[spmd::type(...)]]`. Dim i listing axis a means `a = S(i)`; the number
/// of entries is the tensor's rank. Up to 8 dims.
constexpr SpecAnnotation spec(
    SpecDim d0 = SpecDim::absent(), SpecDim d1 = SpecDim::absent(),
    SpecDim d2 = SpecDim::absent(), SpecDim d3 = SpecDim::absent(),
    SpecDim d4 = SpecDim::absent(), SpecDim d5 = SpecDim::absent(),
    SpecDim d6 = SpecDim::absent(), SpecDim d7 = SpecDim::absent()) {
  return SpecAnnotation{{d0, d1, d2, d3, d4, d5, d6, d7}};
}

}  // namespace spmd

/// Declares a mesh axis constant: `SPMD_AXIS(dp);` gives
/// `inline constexpr spmd::Axis dp{"dp"};`.
#define SPMD_AXIS(name) \
  inline constexpr ::spmd::Axis name { #name }

// The attribute macros expand only when the spmd-check plugin registered the
// attributes; otherwise compilers would warn about an unknown attribute.
#if defined(__has_cpp_attribute)
#if __has_cpp_attribute(spmd::type)
#define SPMD_CHECK_PLUGIN_LOADED 1
#endif
#endif

#if defined(SPMD_CHECK_PLUGIN_LOADED)
/// `SPMD_TYPE(dp = R, tp = P)`: the SPMD type of a variable, parameter,
/// field or function result. The plugin receives the entries as text
/// (`[[spmd::type("dp = R, tp = P")]]`) and reads them with the grammar of
/// `[[spmd::type(dp = R, tp = P)]]`, looking the names up where they are
/// written: Clang then parses one string instead of one overloaded,
/// constant-evaluated `axis = type` call per entry (docs/plugin.md). Macros
/// in the entries are expanded first.
#define SPMD_TYPE(...) [[spmd::type(SPMD_TEXT_(__VA_ARGS__))]]
#define SPMD_TEXT_(...) #__VA_ARGS__
/// `SPMD_MESH(dp, tp)`: the mesh axes in scope for a function body.
#define SPMD_MESH(...) [[spmd::mesh(__VA_ARGS__)]]
/// `SPMD_OP(linear)`: the propagation class of an opaque function.
#define SPMD_OP(...) [[spmd::op(__VA_ARGS__)]]
/// `SPMD_UNCHECKED`: skip the body of this function.
#define SPMD_UNCHECKED [[spmd::unchecked]]
/// `SPMD_LOCAL`: in global mode, a local region (spec §12.3's local_map):
/// the body is checked with local semantics; the function's [[spmd::type]]
/// annotations (S(i) allowed) are checked at calls and stamp its result.
#define SPMD_LOCAL [[spmd::local]]
/// `SPMD_LOCAL_INFER`: a local region whose input types are inferred from
/// the arguments at its calls (local_map's `in_types = Infer`) instead of
/// declared on its parameters; the result annotation still stamps the result.
#define SPMD_LOCAL_INFER [[spmd::local(::spmd::Infer)]]
/// `SPMD_WHEN(flag, tp = I)`: on a method or its parameter, the types of an
/// instance whose bool data member `flag` is true (a layout flag such as
/// `gather_output_`), replacing the SPMD_TYPE entries of the axes listed.
#define SPMD_WHEN(...) [[spmd::when(__VA_ARGS__)]]
/// `SPMD_UNLESS(flag, tp = P)`: the same for an instance whose flag is false.
#define SPMD_UNLESS(...) [[spmd::unless(__VA_ARGS__)]]
/// `SPMD_AXIS_SIZE(tp)`: the function returns (on a variable, parameter or
/// data member of integer type: it holds) the number of ranks of axis `tp`
/// (size-1 bypass guards such as `if (tp_size() == 1) return x;`).
#define SPMD_AXIS_SIZE(axis) [[spmd::axis_size(axis)]]
/// `SPMD_AXIS_RANK(tp)`: the function returns (the variable, parameter or
/// data member holds) this rank's index along axis `tp` (`tp_rank()`); a
/// branch on it differs across the ranks of `tp`, so a collective over `tp`
/// under it is a divergent collective.
#define SPMD_AXIS_RANK(axis) [[spmd::axis_rank(axis)]]
/// `SPMD_AXIS_GROUP(tp)`: on a variable, parameter or data member of any
/// type (a `c10d::ProcessGroup*`, an engine's own group class): the object
/// is the process group of axis `tp`. Its size and rank queries
/// (`getSize()`, `size()`, `world_size()`, `getRank()`, `rank()`) are then
/// `tp`'s wherever the object appears.
#define SPMD_AXIS_GROUP(axis) [[spmd::axis_group(axis)]]
#else
#define SPMD_WHEN(...)
#define SPMD_UNLESS(...)
#define SPMD_AXIS_SIZE(axis)
#define SPMD_AXIS_RANK(axis)
#define SPMD_AXIS_GROUP(axis)
#define SPMD_TYPE(...)
#define SPMD_MESH(...)
#define SPMD_OP(...)
#define SPMD_UNCHECKED
#define SPMD_LOCAL
#define SPMD_LOCAL_INFER
#endif

#endif  // SPMD_ANNOTATIONS_H

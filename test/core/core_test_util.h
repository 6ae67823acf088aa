// core_test_util.h - shared helpers for the core type-system tests.
//
// The expectations in these tests come from the spec
// (docs/type-system.md) and the cases file, not from the core's
// implementation. Helpers only shorten the tables.
#ifndef SPMD_TEST_CORE_TEST_UTIL_H
#define SPMD_TEST_CORE_TEST_UTIL_H

#include <gtest/gtest.h>
#include <spmd/core/core.h>

#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spmd::core::testing {

using spmd::types::I;
using spmd::types::P;
using spmd::types::R;
using spmd::types::S;
using spmd::types::V;

/// "R", "S(-1)", ... via the core printer's spec spelling, computed here so a
/// broken printer does not also break every test name.
inline std::string TypeText(PerAxisType t) {
  switch (t.kind) {
    case TypeKind::Replicate:
      return "R";
    case TypeKind::Invariant:
      return "I";
    case TypeKind::Varying:
      return "V";
    case TypeKind::Partial:
      return "P";
    case TypeKind::Shard:
      return "S(" + std::to_string(t.dim) + ")";
  }
  return "?";
}

/// A gtest-safe identifier: "S(-1)" -> "S_m1_", "P->R" -> "P_to_R".
inline std::string Ident(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '-' && i + 1 < text.size() && text[i + 1] == '>') {
      out += "_to_";
      ++i;
    } else if (c == '-') {
      out += "m";
    } else if (std::isalnum(static_cast<unsigned char>(c))) {
      out += c;
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? std::string("empty") : out;
}

/// Parses a type map that the test itself writes; a parse failure is a test
/// failure (and yields {}).
inline TensorType TT(std::string_view text) {
  Result<TensorType> r = TensorType::parse(text);
  EXPECT_TRUE(r.ok()) << "test fixture type did not parse: " << text << ": "
                      << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : TensorType{};
}

/// Substring assertion (gmock is not linked into the core tests).
inline ::testing::AssertionResult Contains(std::string_view haystack,
                                           std::string_view needle) {
  if (haystack.find(needle) != std::string_view::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected to find \"" << needle << "\" in:\n"
         << haystack;
}

/// The whole printable text of an error (message, fix and notes).
inline std::string AllText(const TypeError& e) { return e.full_message(); }

/// Checks that `r` failed with `kind` and that every phrase occurs in the
/// message (or fix). Returns true when it failed as expected.
template <typename T>
::testing::AssertionResult FailsWith(const Result<T>& r, ErrorKind kind,
                                     std::vector<std::string> phrases = {}) {
  if (r.ok()) return ::testing::AssertionFailure() << "expected an error";
  const TypeError& e = r.error();
  if (e.kind != kind)
    return ::testing::AssertionFailure()
           << "expected kind " << to_string(kind) << ", got "
           << to_string(e.kind) << ": " << e.message;
  std::string text = AllText(e);
  for (const std::string& p : phrases)
    if (text.find(p) == std::string::npos)
      return ::testing::AssertionFailure()
             << "expected phrase \"" << p << "\" in:\n"
             << text;
  return ::testing::AssertionSuccess();
}

/// Checks that `r` succeeded.
template <typename T>
::testing::AssertionResult Succeeds(const Result<T>& r) {
  if (r.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "unexpected " << to_string(r.error().kind) << ": "
         << r.error().full_message();
}

/// Checks that `r` succeeded with the type map written as `expected`.
inline ::testing::AssertionResult Gives(const Result<TensorType>& r,
                                        std::string_view expected) {
  if (!r.ok())
    return ::testing::AssertionFailure()
           << "expected " << expected << ", got " << to_string(r.error().kind)
           << ": " << r.error().full_message();
  TensorType want = TT(expected);
  if (r.value() == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "expected " << want.to_string()
                                       << ", got " << r.value().to_string();
}

/// Operand shorthands for infer().
inline Operand Ten(std::string_view type, int pos = -1) {
  return Operand::tensor(TT(type), pos);
}
inline Operand Untyped(int pos = -1) {
  return Operand::tensor(std::nullopt, pos);
}
inline Operand Num(int pos = -1) { return Operand::weak_scalar(pos); }
inline Operand Sc(std::string_view type, int pos = -1) {
  return Operand::typed_scalar(TT(type), pos);
}

inline InferenceContext Mesh(std::vector<std::string> axes,
                             bool strict = true) {
  InferenceContext ctx;
  ctx.strict = strict;
  ctx.mesh_axes = std::move(axes);
  return ctx;
}
inline InferenceContext Permissive() {
  InferenceContext ctx;
  ctx.strict = false;
  return ctx;
}

/// A collective call with src/dst (and optional expert mode).
inline CollectiveCall Call(Collective op, PerAxisType src, PerAxisType dst,
                           bool expert = false) {
  CollectiveCall c;
  c.op = op;
  c.src = src;
  c.dst = dst;
  c.expert_mode = expert;
  return c;
}

inline const char* OpName(Collective c) {
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

/// "convert(R,V)" for messages and test names.
inline std::string CallText(const CollectiveCall& c) {
  std::string s = std::string(OpName(c.op)) + "(" + TypeText(c.src) + "," +
                  TypeText(c.dst) + ")";
  if (c.expert_mode) s += "[expert]";
  return s;
}

}  // namespace spmd::core::testing

#endif  // SPMD_TEST_CORE_TEST_UTIL_H

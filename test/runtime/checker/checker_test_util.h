// checker_test_util.h - helpers for the runtime checker's tests: typed tensor
// construction, type expectations and error expectations.
#ifndef SPMD_TEST_RUNTIME_CHECKER_TEST_UTIL_H
#define SPMD_TEST_RUNTIME_CHECKER_TEST_UTIL_H

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <spmd/checker.h>
#include <spmd/errors.h>

#include <initializer_list>
#include <string>

#include "../runtime_test_util.h"

namespace spmd::testing {

SPMD_AXIS(tp);
SPMD_AXIS(dp);
SPMD_AXIS(one);
SPMD_AXIS(real);

/// An untyped f32 tensor of `shape` (made with checking paused).
inline at::Tensor untyped(at::IntArrayRef shape = {2, 3}) {
  checker::NoTypecheckGuard paused;
  return at::randn(shape);
}

/// A tensor of `shape` annotated with `type` (needs a guard alive).
inline at::Tensor typed(std::initializer_list<AxisType> type,
                        at::IntArrayRef shape = {2, 3}) {
  at::Tensor t = untyped(shape);
  assert_type(t, type);
  return t;
}

/// The printed type map, or "untyped".
inline std::string type_str(const at::Tensor& t) {
  return has_type(t) ? get_type(t).to_string() : "untyped";
}

/// The message of the spmd::SpmdError subclass E thrown by `f` ("" and a
/// test failure when it throws nothing or something else); error_of with
/// the checker's usual exception as the default.
template <typename E = SpmdTypeError, typename F>
std::string spmd_error(F&& f) {
  return error_of<E>(std::forward<F>(f));
}

}  // namespace spmd::testing

/// Expects `stmt` to throw spmd::SpmdTypeError whose message contains `text`.
#define EXPECT_TYPE_ERROR(stmt, text)                                          \
  do {                                                                         \
    std::string _msg = ::spmd::testing::spmd_error([&] { (void)(stmt); });     \
    EXPECT_NE(_msg.find(text), std::string::npos) << "message was:\n" << _msg; \
  } while (0)

#endif  // SPMD_TEST_RUNTIME_CHECKER_TEST_UTIL_H

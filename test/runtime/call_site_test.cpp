// call_site_test.cpp - the user's call site in the runtime's errors and trace
// lines (spmd/source_location.h): every error of a public collective or
// annotation call ends with "Called from <this file>:<line> (spmd::<name>)",
// a checker error on an ATen op names the last spmd call of the thread, and
// the defaulted SourceLocation parameter leaves the calls' spelling alone.
#include <ATen/ATen.h>
#include <spmd/boundaries.h>
#include <spmd/checker.h>
#include <spmd/collectives.h>
#include <spmd/decomposition.h>
#include <spmd/errors.h>
#include <spmd/source_location.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <type_traits>

#include "runtime_test_util.h"

namespace spmd {
namespace {

using namespace spmd::types;
using at::Tensor;
using testing::error_of;
using testing::run_mesh;

SPMD_AXIS(tp);

// "call_site_test.cpp:<line> (spmd::<name>)": the end of every message.
std::string site(int line, const char* name) {
  return "call_site_test.cpp:" + std::to_string(line) + " (spmd::" + name + ")";
}

::testing::AssertionResult EndsWith(const std::string& msg,
                                    const std::string& tail) {
  if (msg.size() >= tail.size() &&
      msg.compare(msg.size() - tail.size(), tail.size(), tail) == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "message does not end with\n  " << tail << "\nmessage:\n"
         << msg;
}

::testing::AssertionResult Contains(const std::string& msg,
                                    const std::string& part) {
  if (msg.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "message does not contain\n  " << part << "\nmessage:\n"
         << msg;
}

Tensor untyped(at::IntArrayRef shape = {2, 3}) {
  checker::NoTypecheckGuard paused;
  return at::ones(shape);
}

checker::TypecheckOptions tp_mesh() {
  checker::TypecheckOptions o;
  o.mesh = std::vector<checker::MeshAxisInfo>{{"tp", 2}};
  return o;
}

int line_of(SourceLocation loc = SourceLocation::current()) {
  return loc.line();
}
const char* file_of(SourceLocation loc = SourceLocation::current()) {
  return loc.file_name();
}

TEST(CallSite, CurrentInADefaultArgumentIsTheCaller) {
  EXPECT_EQ(line_of(), __LINE__);
  EXPECT_NE(std::string(file_of()).find("call_site_test.cpp"),
            std::string::npos);
  constexpr SourceLocation here = SourceLocation::current();
  EXPECT_EQ(here.line(), __LINE__ - 1);
}

TEST(CallSite, CollectiveArgumentErrorWithoutChecker) {
  Tensor x = untyped();
  const int line = __LINE__ + 1;
  std::string msg = error_of<InvalidArgument>([&] { all_reduce(x, tp, R, R); });
  EXPECT_TRUE(EndsWith(msg, site(line, "all_reduce")));
  EXPECT_TRUE(Contains(msg, "\nCalled from "));
}

TEST(CallSite, CollectiveTypeErrorAndTheOpAfterIt) {
  run_mesh({{tp, 2}}, [](const DeviceMesh&) {
    Tensor x = untyped();
    Tensor p = untyped();
    checker::TypecheckGuard typecheck;
    assert_type(x, {tp = R});
    assert_type(p, {tp = P});
    // The collective's own type error: its input is R, not P.
    int line = 0;
    std::string msg = error_of<SpmdTypeError>([&] {
      line = __LINE__ + 1;
      all_reduce(x, tp, P, R);
    });
    EXPECT_TRUE(EndsWith(msg, site(line, "all_reduce")));
    EXPECT_TRUE(Contains(msg, "In all_reduce"));
    // An op after a collective names it.
    const int reduce_line = __LINE__ + 1;
    Tensor r = all_reduce(p, tp, P, R);
    Tensor q = p * 1;  // {tp: P}
    std::string after = error_of<SpmdTypeError>([&] { (void)(r + q); });
    if (std::getenv("SPMD_TEST_SHOW") != nullptr)
      std::cerr << msg << "\n---\n" << after << "\n";
    EXPECT_TRUE(Contains(after, "aten::add"));
    EXPECT_TRUE(EndsWith(after, "After spmd::all_reduce at " +
                                    std::string(__FILE__) + ":" +
                                    std::to_string(reduce_line) +
                                    " (the last spmd call on this thread)"));
  });
}

TEST(CallSite, AnnotationErrorsNameTheirLine) {
  checker::TypecheckGuard typecheck(tp_mesh());
  Tensor x = untyped();
  Tensor y = untyped();
  assert_type(x, {tp = R});
  assert_type(y, {tp = V});
  int line = __LINE__ + 1;
  std::string msg = error_of<SpmdTypeError>([&] { assert_type(x, {tp = V}); });
  EXPECT_TRUE(EndsWith(msg, site(line, "assert_type")));

  line = __LINE__ + 1;
  msg = error_of<SpmdTypeError>([&] { assert_type(x, V); });
  EXPECT_TRUE(EndsWith(msg, site(line, "assert_type")));

  line = __LINE__ + 1;
  msg = error_of<SpmdTypeError>([&] { checker::assert_type_like(x, y); });
  EXPECT_TRUE(EndsWith(msg, site(line, "assert_type_like")));

  line = __LINE__ + 1;
  msg = error_of<SpmdTypeError>([&] { mutate_type(x, tp, P, R); });
  EXPECT_TRUE(EndsWith(msg, site(line, "mutate_type")));

  line = __LINE__ + 1;
  msg = error_of<SpmdTypeError>([&] { mutate_type(x, {tp = P}, R); });
  EXPECT_TRUE(EndsWith(msg, site(line, "mutate_type")));

  line = __LINE__ + 1;
  msg = error_of<SpmdTypeError>([&] { checker::check_loss(x); });
  EXPECT_TRUE(EndsWith(msg, site(line, "check_loss")));
}

TEST(CallSite, OpErrorNamesTheLastAnnotation) {
  checker::TypecheckGuard typecheck(tp_mesh());
  Tensor x = untyped();
  Tensor p = untyped();
  assert_type(x, {tp = R});
  const int line = __LINE__ + 1;
  assert_type(p, {tp = P});
  std::string msg = error_of<SpmdTypeError>([&] { (void)(x + p); });
  EXPECT_TRUE(Contains(msg, "aten::add"));
  EXPECT_TRUE(Contains(msg, "\nAfter spmd::assert_type at "));
  EXPECT_TRUE(EndsWith(msg, "call_site_test.cpp:" + std::to_string(line) +
                                " (the last spmd call on this thread)"));
  EXPECT_FALSE(Contains(msg, "Called from"));
}

TEST(CallSite, NoAfterLineForCallsOfAnEarlierSession) {
  Tensor x = untyped();
  Tensor p = untyped();
  {
    checker::TypecheckGuard first(tp_mesh());
    assert_type(x, {tp = R});
    assert_type(p, {tp = P});  // types outlive the session
  }
  checker::TypecheckGuard second(tp_mesh());
  std::string msg = error_of<SpmdTypeError>([&] { (void)(x + p); });
  EXPECT_TRUE(Contains(msg, "aten::add"));
  EXPECT_FALSE(Contains(msg, "After spmd::")) << msg;
}

TEST(CallSite, TraceLinesNameTheLastCall) {
  checker::TypecheckOptions o = tp_mesh();
  o.trace = true;
  checker::TypecheckGuard typecheck(o);
  Tensor x = untyped();
  const int line = __LINE__ + 1;
  assert_type(x, {tp = R});
  ::testing::internal::CaptureStderr();
  (void)(x * 2);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(Contains(err, "spmd-check trace: aten::mul"));
  EXPECT_TRUE(Contains(err, "[after spmd::assert_type at " +
                                std::string(__FILE__) + ":" +
                                std::to_string(line) + "]"));
}

TEST(CallSite, BacktraceWithSpmdCheckerTrace) {
  checker::TypecheckGuard typecheck(tp_mesh());
  Tensor x = untyped();
  assert_type(x, {tp = R});
  ::setenv("SPMD_CHECKER_TRACE", "1", 1);
  std::string msg = error_of<SpmdTypeError>([&] { assert_type(x, {tp = V}); });
  ::unsetenv("SPMD_CHECKER_TRACE");
  EXPECT_TRUE(Contains(msg, "(spmd::assert_type)\nBacktrace:\n"));
  std::string plain =
      error_of<SpmdTypeError>([&] { assert_type(x, {tp = V}); });
  EXPECT_FALSE(Contains(plain, "Backtrace:"));
}

TEST(CallSite, NestedCallsListEachSiteInnermostFirst) {
  static const bool registered = [] {
    register_decomposition("call_site.asserting", [](const Tensor& t) {
      assert_type(t, {tp = V});  // the reference's own (wrong) claim
      return t * 2;
    });
    return true;
  }();
  ASSERT_TRUE(registered);
  checker::TypecheckGuard typecheck(tp_mesh());
  Tensor x = untyped();
  assert_type(x, {tp = R});
  auto kernel = [](const Tensor& t) { return t * 2; };
  int line = 0;
  std::string msg = error_of<SpmdTypeError>([&] {
    line = __LINE__ + 1;
    call_decomposed("call_site.asserting", kernel, x);
  });
  EXPECT_TRUE(Contains(msg, "(spmd::assert_type)"));
  EXPECT_TRUE(EndsWith(msg, site(line, "call_decomposed")));
}

TEST(CallSite, FunctionsKeepTheirCallFormsAndAddresses) {
  using AllReduce =
      Tensor (*)(const Tensor&, const Axis&, PerAxisType, PerAxisType,
                 const CollectiveOptions&, SourceLocation);
  AllReduce f = &all_reduce;  // the address has the full signature
  Tensor x = untyped();
  int line = 0;
  std::string msg = error_of<InvalidArgument>([&] {
    line = __LINE__ + 1;
    f(x, tp, R, R, {}, SourceLocation::current());
  });
  EXPECT_TRUE(EndsWith(msg, site(line, "all_reduce")));
  // A generic wrapper forwards its own caller's line.
  auto wrapped = [](const Tensor& t,
                    SourceLocation loc = SourceLocation::current()) {
    return all_reduce(t, tp, R, R, {}, loc);
  };
  const int wline = __LINE__ + 1;
  msg = error_of<InvalidArgument>([&] { wrapped(x); });
  EXPECT_TRUE(EndsWith(msg, site(wline, "all_reduce")));
}

}  // namespace
}  // namespace spmd

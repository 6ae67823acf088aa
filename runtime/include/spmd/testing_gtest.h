// spmd/testing_gtest.h - GoogleTest helpers for <spmd/testing.h>.
//
//   EXPECT_SPMD_EQUIVALENT(parallel, single, options);
//   ASSERT_SPMD_EQUIVALENT(parallel, single, options);
//
// pass when expect_equivalent finds every quantity equal within tolerance,
// and otherwise fail with the table of differences (or the failing rank's
// error). A separate header so that <spmd/testing.h> does not need gtest.
#ifndef SPMD_TESTING_GTEST_H
#define SPMD_TESTING_GTEST_H

#include <gtest/gtest.h>
#include <spmd/testing.h>

#include <exception>

namespace spmd::testing {

/// expect_equivalent as a GoogleTest assertion: success when every quantity
/// agrees; failure carrying the table, or the error of a failed rank / bad
/// options.
inline ::testing::AssertionResult SpmdEquivalent(
    const RankProgram& parallel, const SingleProgram& single,
    const EquivalenceOptions& options) {
  try {
    EquivalenceReport report = expect_equivalent(parallel, single, options);
    if (report.ok()) return ::testing::AssertionSuccess() << report.table();
    return ::testing::AssertionFailure() << "\n" << report.table();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure()
           << "the programs could not be compared: " << e.what();
  }
}

}  // namespace spmd::testing

/// Non-fatal: the test continues after a mismatch.
#define EXPECT_SPMD_EQUIVALENT(...) \
  EXPECT_TRUE(::spmd::testing::SpmdEquivalent(__VA_ARGS__))
/// Fatal: the test stops at a mismatch.
#define ASSERT_SPMD_EQUIVALENT(...) \
  ASSERT_TRUE(::spmd::testing::SpmdEquivalent(__VA_ARGS__))

#endif  // SPMD_TESTING_GTEST_H

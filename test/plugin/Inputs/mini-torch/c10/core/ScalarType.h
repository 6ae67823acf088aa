// Test stand-in for libtorch's <c10/core/ScalarType.h>: just enough for
// <spmd/spmd.h> and the plugin tests to parse in milliseconds instead of the
// ~10 s the real headers cost. Declarations only; shapes follow libtorch 1.13.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace c10 {

enum class ScalarType : int8_t { Byte, Char, Short, Int, Long, Half, Float,
                                 Double, BFloat16, Bool };
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kLong = ScalarType::Long;
constexpr ScalarType kBool = ScalarType::Bool;

/// A number passed to a tensor op (libtorch: c10::Scalar).
class Scalar {
 public:
  Scalar(double v);
  Scalar(float v);
  Scalar(int v);
  Scalar(int64_t v);
  double toDouble() const;

 private:
  double v_;
};

/// libtorch: c10::ArrayRef (a view of a list).
template <typename T>
class ArrayRef {
 public:
  ArrayRef();
  ArrayRef(const T& one);
  ArrayRef(std::initializer_list<T> list);
  const T* begin() const;
  const T* end() const;
  std::size_t size() const;

 private:
  const T* data_;
  std::size_t size_;
};

using IntArrayRef = ArrayRef<int64_t>;

}  // namespace c10

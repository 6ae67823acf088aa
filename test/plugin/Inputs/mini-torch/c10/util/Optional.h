// Test stand-in for libtorch 1.13's <c10/util/Optional.h> (see
// c10/core/ScalarType.h): c10::optional is its own class there (libtorch 2.x
// makes it an alias of std::optional). Declarations only.
#pragma once

namespace c10 {

struct nullopt_t {
  constexpr explicit nullopt_t(int) {}
};
inline constexpr nullopt_t nullopt{0};

/// libtorch: c10::optional (an optional tensor argument, e.g. a bias).
template <class T>
class optional {
 public:
  optional() noexcept;
  optional(nullopt_t) noexcept;
  optional(const T& v);
  optional(T&& v);
  optional(const optional& other);
  optional(optional&& other) noexcept;
  ~optional();
  optional& operator=(const optional& other);
  optional& operator=(nullopt_t) noexcept;

  bool has_value() const noexcept;
  explicit operator bool() const noexcept;
  T& value() &;
  const T& value() const&;
  T& operator*() &;
  const T& operator*() const&;
  T* operator->();
  const T* operator->() const;
  template <class U>
  T value_or(U&& fallback) const&;
  void reset() noexcept;

 private:
  bool init_;
  union {
    char dummy_;
    T value_;
  };
};

}  // namespace c10

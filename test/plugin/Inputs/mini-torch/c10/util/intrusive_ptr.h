// Declarations-only stand-in for c10::intrusive_ptr.
#pragma once

namespace c10 {
template <typename T> class intrusive_ptr {
public:
  T *operator->() const;
  T &operator*() const;
  T *get() const;
  explicit operator bool() const;
};
} // namespace c10

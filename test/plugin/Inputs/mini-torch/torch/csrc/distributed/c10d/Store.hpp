// Declarations-only stand-in for c10d's Store.
#pragma once

#include <c10/util/intrusive_ptr.h>

namespace c10d {
class Store {};
} // namespace c10d

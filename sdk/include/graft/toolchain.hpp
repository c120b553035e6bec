// What a plugin (or the host) was built with, as text its descriptor records. The standard
// library is part of the plugin ABI (std::string, std::vector, std::function cross it), so the
// host refuses a plugin built with another one. The compiler is recorded for `graft plugins -v`
// only: gcc and clang on Linux share the Itanium C++ ABI and use the same libstdc++, so a plugin
// built by either works with a host built by the other.
#pragma once

#include <version>  // defines the standard library's identification macros

#define GRAFT_STRINGIFY_(x) #x
#define GRAFT_STRINGIFY(x) GRAFT_STRINGIFY_(x)

// "libstdc++ 12 (cxx11 ABI)" or "libc++ 170000": the library and, for libstdc++, which of its two
// std::string/std::list ABIs is in use.
#if defined(_LIBCPP_VERSION)
#define GRAFT_STDLIB_TAG "libc++ " GRAFT_STRINGIFY(_LIBCPP_VERSION)
#elif defined(_GLIBCXX_RELEASE) && _GLIBCXX_USE_CXX11_ABI
#define GRAFT_STDLIB_TAG "libstdc++ " GRAFT_STRINGIFY(_GLIBCXX_RELEASE) " (cxx11 ABI)"
#elif defined(_GLIBCXX_RELEASE)
#define GRAFT_STDLIB_TAG "libstdc++ " GRAFT_STRINGIFY(_GLIBCXX_RELEASE) " (old ABI)"
#else
#define GRAFT_STDLIB_TAG "unknown standard library"
#endif

// "gcc 12.2.0" or "clang 14.0.6" (clang also defines __GNUC__, so it is asked first).
#if defined(__clang__)
#define GRAFT_COMPILER_TAG \
  "clang " GRAFT_STRINGIFY(__clang_major__) "." GRAFT_STRINGIFY(__clang_minor__) "." GRAFT_STRINGIFY(__clang_patchlevel__)
#elif defined(__GNUC__)
#define GRAFT_COMPILER_TAG \
  "gcc " GRAFT_STRINGIFY(__GNUC__) "." GRAFT_STRINGIFY(__GNUC_MINOR__) "." GRAFT_STRINGIFY(__GNUC_PATCHLEVEL__)
#else
#define GRAFT_COMPILER_TAG "unknown compiler"
#endif

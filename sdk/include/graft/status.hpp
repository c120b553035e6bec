// Error reporting across the plugin boundary: no exception may cross it, so every fallible
// call returns Status or Expected<T>.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include "graft/version.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

enum class Errc : std::uint32_t {
  ok = 0,
  invalid_argument,
  not_found,
  not_implemented,
  unsupported,
  out_of_memory,
  out_of_range,
  io_error,
  corrupt,
  abi_mismatch,
  internal,
};

inline const char* errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::ok: return "ok";
    case Errc::invalid_argument: return "invalid argument";
    case Errc::not_found: return "not found";
    case Errc::not_implemented: return "not implemented";
    case Errc::unsupported: return "unsupported";
    case Errc::out_of_memory: return "out of memory";
    case Errc::out_of_range: return "out of range";
    case Errc::io_error: return "I/O error";
    case Errc::corrupt: return "corrupt";
    case Errc::abi_mismatch: return "ABI mismatch";
    case Errc::internal: return "internal error";
  }
  return "unknown error";
}

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Errc code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status success() { return {}; }

  bool ok() const noexcept { return code_ == Errc::ok; }
  explicit operator bool() const noexcept { return ok(); }
  Errc code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

 private:
  Errc code_ = Errc::ok;
  std::string message_;
};

inline Status error(Errc code, std::string message) { return Status(code, std::move(message)); }
inline Status not_implemented(std::string what) {
  return Status(Errc::not_implemented, std::move(what) + ": not implemented");
}

// Minimal std::expected stand-in (C++20 has none).
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  Expected(Status status) : v_(std::in_place_index<1>, std::move(status)) {
    if (std::get<1>(v_).ok()) v_.template emplace<1>(Errc::internal, "Expected built from an ok Status");
  }

  bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Status& status() const& { return std::get<1>(v_); }
  Status&& status() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft

// Propagate a non-ok Status out of the calling function.
#define GRAFT_TRY(expr)                               \
  do {                                                \
    ::graft::Status graft_try_status_ = (expr);       \
    if (!graft_try_status_.ok()) return graft_try_status_; \
  } while (0)

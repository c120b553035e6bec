#include "server/json_bounds.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace graft::server {

namespace {

// A SAX consumer that only counts; returning false stops the parse at once.
class Counter : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit Counter(const JsonBounds& b) : b_(b) {}
  bool over_values() const { return values_ > b_.max_values; }
  bool over_depth() const { return depth_ > b_.max_depth; }
  bool malformed() const { return malformed_; }

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(); }
  bool key(string_t&) override { return value(); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    malformed_ = true;
    return false;
  }

 private:
  bool value() { return ++values_ <= b_.max_values; }
  bool open() { return value() && ++depth_ <= b_.max_depth; }
  bool close() {
    --depth_;
    return true;
  }
  const JsonBounds& b_;
  std::size_t values_ = 0, depth_ = 0;
  bool malformed_ = false;
};

}  // namespace

std::optional<ApiError> check_json_bounds(std::string_view body, const JsonBounds& bounds) {
  Counter counter(bounds);
  if (nlohmann::json::sax_parse(body, &counter) || counter.malformed()) return std::nullopt;
  if (counter.over_depth())
    return ApiError{413, "invalid_request_error",
                    fmt::format("the request body nests objects and arrays deeper than the server's limit of {}",
                                bounds.max_depth),
                    {}};
  return ApiError{413, "invalid_request_error",
                  fmt::format("the request body holds more than the server's limit of {} JSON values", bounds.max_values),
                  {}};
}

}  // namespace graft::server

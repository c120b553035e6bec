#include "common/byte_size.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

namespace graft {

Expected<std::uint64_t> parse_byte_size(std::string_view text) {
  auto bad = [&] {
    return Status(Errc::invalid_argument, "'" + std::string(text) +
                                              "' is not a size: a number with an optional unit, e.g. 16GiB, 512MiB, "
                                              "1.5G (K, M, G, T: powers of 1024)");
  };
  std::string_view t = text;
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value < 0) return bad();
  std::string unit(end, t.data() + t.size());
  std::erase(unit, ' ');
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 1;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tb" || unit == "tib") scale = 1024.0 * 1024 * 1024 * 1024;
  else return bad();
  const double bytes = value * scale;
  if (bytes >= 1.8e19 || bytes < 1) return bad();
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace graft

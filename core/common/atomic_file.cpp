#include "common/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace graft {

Status write_file_atomically(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  // Same directory, so the rename is atomic; a unique name, so two writers never share a temporary.
  std::string tmp = path.string() + ".tmp-XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) return Status(Errc::io_error, path.string() + ": cannot create temporary file: " + std::strerror(errno));
  auto fail = [&](const char* what) {
    Status s(Errc::io_error, path.string() + ": " + what + ": " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  };
  const std::uint8_t* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail("write failed");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0) return fail("chmod failed");
  if (::fsync(fd) != 0) return fail("fsync failed");
  int rc = ::close(fd);
  fd = -1;
  if (rc != 0) return fail("close failed");
  if (::rename(tmp.c_str(), path.c_str()) != 0) return fail("rename failed");
  return {};
}

}  // namespace graft

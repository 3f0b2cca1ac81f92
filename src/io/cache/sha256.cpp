#include "cache/sha256.hpp"

#include <nettle/sha2.h>

#include <cstdint>

namespace arun::io {

struct sha256::state {
  sha256_ctx ctx;
};

sha256::sha256() : state_(std::make_unique<state>()) { sha256_init(&state_->ctx); }

sha256::~sha256() = default;

void sha256::update(std::string_view bytes) noexcept {
  sha256_update(&state_->ctx, bytes.size(), reinterpret_cast<const std::uint8_t*>(bytes.data()));
}

std::string sha256::hex_digest() {
  std::uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(&state_->ctx, sizeof digest, digest);  // nettle re-initialises the context
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(2 * sizeof digest, '0');
  for (std::size_t i = 0; i < sizeof digest; ++i) {
    out[2 * i] = hex[digest[i] >> 4];
    out[2 * i + 1] = hex[digest[i] & 0xF];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  sha256 h;
  h.update(bytes);
  return h.hex_digest();
}

}  // namespace arun::io

#pragma once
// What a step's `cache.files` adds to its key: the files its globs match and a hash of each
// one's bytes, so editing an input changes the key and touching an unrelated file does not.
// (result_store::digest_files is this; kept apart so the walk can be read on its own.)

#include <string>
#include <vector>

namespace arun::io {

/// See result_store::digest_files for the format and the glob rules.
std::string digest_files(const std::vector<std::string>& globs, const std::string& dir,
                         std::vector<std::string>& warnings, std::string& error);

/// The lowercase hex SHA-256 of the file at `path`, read in blocks; "" with `error` set
/// ("cannot read PATH: why") when it cannot be read or is not a regular file.
std::string file_sha256(const std::string& path, std::string& error);

}  // namespace arun::io

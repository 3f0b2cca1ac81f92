#pragma once
// A YAML document as a compact tree, built from yaml-cpp's parser events. yaml-cpp's own
// YAML::Node tree costs about 40 bytes of memory per byte of YAML (five shared objects per
// node), so a 20,000-step recipe took 47 MiB to load, more than the whole run of it; this tree
// keeps every node in one array (about 60 bytes a node) and is built and freed much faster.
//
// `node` mirrors the part of YAML::Node's interface the recipe reader uses (IsMap, Scalar,
// Tag, Mark, iteration with kv.first / kv.second), so the reader reads as it would with
// yaml-cpp. Tags, marks, styles, duplicate keys and aliases are exactly what yaml-cpp's parser
// reports: aliases share the anchored node, as YAML::Load's tree does.

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace arun::io::yaml {

class document;

/// One node of a document, or an undefined node (an absent key). A small handle: copy it
/// freely while its document lives.
class node {
public:
  node() = default;
  node(const document* doc, std::uint32_t index) : doc_(doc), index_(index) {}

  bool IsDefined() const noexcept { return doc_ != nullptr; }
  explicit operator bool() const noexcept { return IsDefined(); }
  YAML::NodeType::value Type() const noexcept;
  bool IsNull() const noexcept { return Type() == YAML::NodeType::Null; }
  bool IsScalar() const noexcept { return Type() == YAML::NodeType::Scalar; }
  bool IsSequence() const noexcept { return Type() == YAML::NodeType::Sequence; }
  bool IsMap() const noexcept { return Type() == YAML::NodeType::Map; }

  /// The text of a scalar; empty for anything else.
  const std::string& Scalar() const noexcept;
  /// "!" for a quoted scalar, "?" for a plain node, an explicit tag as written, "" for null.
  const std::string& Tag() const noexcept;
  /// Where the node starts; null_mark() for an undefined node.
  YAML::Mark Mark() const noexcept;
  YAML::EmitterStyle::value Style() const noexcept;
  /// Entries of a map, items of a sequence, else 0.
  std::size_t size() const noexcept;
  /// Item `i` of a sequence; undefined when out of range or not a sequence.
  node operator[](std::size_t i) const noexcept;

  /// What iteration yields: for a sequence the item itself; for a map `first` (the key) and
  /// `second` (the value), the entry itself being undefined, as with yaml-cpp.
  struct entry;
  class iterator;
  iterator begin() const noexcept;
  iterator end() const noexcept;

private:
  const document* doc_ = nullptr;
  std::uint32_t index_ = 0;
};

struct node::entry : node {
  node first, second;
};

class node::iterator {
public:
  iterator(const document* doc, const std::uint32_t* at, bool map) : doc_(doc), at_(at), map_(map) {}
  entry operator*() const noexcept;
  iterator& operator++() noexcept {
    at_ += map_ ? 2 : 1;
    return *this;
  }
  bool operator==(const iterator& other) const noexcept { return at_ == other.at_; }

private:
  const document* doc_;
  const std::uint32_t* at_;  // into the document's child list
  bool map_;
};

/// A parsed document; its nodes live as long as it does.
class document {
public:
  /// Parses the first document of `text` (an empty text is a null root). Throws
  /// YAML::ParserException as YAML::Load does.
  static std::shared_ptr<const document> parse(std::string_view text);

  node root() const noexcept { return node(this, root_); }

private:
  friend class node;
  friend class tree_builder;

  struct node_data {
    YAML::NodeType::value type = YAML::NodeType::Null;
    YAML::EmitterStyle::value style = YAML::EmitterStyle::Default;
    std::uint32_t tag = 0;          // into tags_
    std::uint32_t first_child = 0;  // into children_: a map's keys and values alternate
    std::uint32_t children = 0;     // items, or entries of a map
    YAML::Mark mark;
    std::string scalar;
  };

  std::vector<node_data> nodes_;
  std::vector<std::uint32_t> children_;
  std::vector<std::string> tags_;  // few distinct tags: "", "?", "!", explicit ones
  std::uint32_t root_ = 0;
};

/// The root of `text`'s first document, kept alive with the handle's document; see
/// document::parse.
struct parsed {
  std::shared_ptr<const document> doc;
  node root;
};
parsed parse(std::string_view text);

}  // namespace arun::io::yaml

#include "recipe/yaml_tree.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <sstream>
#include <unordered_map>

namespace arun::io::yaml {
namespace {

const std::string& empty_text() {
  static const std::string empty;
  return empty;
}

}  // namespace

// Builds a document from parser events, as yaml-cpp's NodeBuilder builds its tree: a node's
// children are collected on a stack while it is open and stored together when it closes.
class tree_builder final : public YAML::EventHandler {
public:
  explicit tree_builder(document& doc) : doc_(doc) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    add_child(make(YAML::NodeType::Null, mark, {}, anchor, YAML::EmitterStyle::Default));
  }
  void OnAlias(const YAML::Mark&, YAML::anchor_t anchor) override { add_child(anchors_.at(anchor)); }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    const auto index = make(YAML::NodeType::Scalar, mark, tag, anchor, YAML::EmitterStyle::Default);
    doc_.nodes_[index].scalar = value;
    add_child(index);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value style) override {
    open(make(YAML::NodeType::Sequence, mark, tag, anchor, style));
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value style) override {
    open(make(YAML::NodeType::Map, mark, tag, anchor, style));
  }
  void OnMapEnd() override { close(); }

  bool empty() const noexcept { return !has_root_; }

private:
  std::uint32_t make(YAML::NodeType::value type, const YAML::Mark& mark, const std::string& tag,
                     YAML::anchor_t anchor, YAML::EmitterStyle::value style) {
    const auto index = static_cast<std::uint32_t>(doc_.nodes_.size());
    auto& n = doc_.nodes_.emplace_back();
    n.type = type;
    n.style = style;
    n.mark = mark;
    n.tag = intern(tag);
    if (anchor != YAML::NullAnchor) anchors_[anchor] = index;
    return index;
  }

  std::uint32_t intern(const std::string& tag) {
    if (tag.empty()) return 0;
    const auto [it, added] = tag_index_.try_emplace(tag, static_cast<std::uint32_t>(doc_.tags_.size()));
    if (added) doc_.tags_.push_back(tag);
    return it->second;
  }

  void add_child(std::uint32_t index) {
    if (open_.empty()) {
      doc_.root_ = index;
      has_root_ = true;
      return;
    }
    pending_.push_back(index);
  }

  void open(std::uint32_t index) {
    open_.push_back({index, pending_.size()});
  }

  // The open node takes the children collected since it opened, then becomes a child itself.
  void close() {
    const auto [index, first] = open_.back();
    open_.pop_back();
    auto& n = doc_.nodes_[index];
    n.first_child = static_cast<std::uint32_t>(doc_.children_.size());
    const auto count = pending_.size() - first;
    doc_.children_.insert(doc_.children_.end(), pending_.begin() + static_cast<std::ptrdiff_t>(first), pending_.end());
    pending_.resize(first);
    // A map whose last key has no value cannot come from the parser; count whole entries.
    n.children = static_cast<std::uint32_t>(n.type == YAML::NodeType::Map ? count / 2 : count);
    add_child(index);
  }

  document& doc_;
  std::vector<std::pair<std::uint32_t, std::size_t>> open_;  // open collections, where their children start
  std::vector<std::uint32_t> pending_;                       // children of the open collections
  std::unordered_map<YAML::anchor_t, std::uint32_t> anchors_;
  std::unordered_map<std::string, std::uint32_t> tag_index_;  // a hostile file may hold 100,000 tags
  bool has_root_ = false;
};

YAML::NodeType::value node::Type() const noexcept {
  return doc_ ? doc_->nodes_[index_].type : YAML::NodeType::Undefined;
}

const std::string& node::Scalar() const noexcept {
  return IsScalar() ? doc_->nodes_[index_].scalar : empty_text();
}

const std::string& node::Tag() const noexcept { return doc_ ? doc_->tags_[doc_->nodes_[index_].tag] : empty_text(); }

YAML::Mark node::Mark() const noexcept { return doc_ ? doc_->nodes_[index_].mark : YAML::Mark::null_mark(); }

YAML::EmitterStyle::value node::Style() const noexcept {
  return doc_ ? doc_->nodes_[index_].style : YAML::EmitterStyle::Default;
}

std::size_t node::size() const noexcept { return doc_ ? doc_->nodes_[index_].children : 0; }

node node::operator[](std::size_t i) const noexcept {
  if (!IsSequence() || i >= size()) return {};
  return node(doc_, doc_->children_[doc_->nodes_[index_].first_child + i]);
}

node::iterator node::begin() const noexcept {
  if (!IsMap() && !IsSequence()) return iterator(nullptr, nullptr, false);
  return iterator(doc_, doc_->children_.data() + doc_->nodes_[index_].first_child, IsMap());
}

node::iterator node::end() const noexcept {
  if (!IsMap() && !IsSequence()) return iterator(nullptr, nullptr, false);
  const auto& n = doc_->nodes_[index_];
  return iterator(doc_, doc_->children_.data() + n.first_child + n.children * (IsMap() ? 2 : 1), IsMap());
}

node::entry node::iterator::operator*() const noexcept {
  entry e;
  if (map_) {
    e.first = node(doc_, at_[0]);
    e.second = node(doc_, at_[1]);
  } else {
    static_cast<node&>(e) = node(doc_, at_[0]);
  }
  return e;
}

std::shared_ptr<const document> document::parse(std::string_view text) {
  auto doc = std::make_shared<document>();
  doc->tags_.emplace_back();  // index 0: no tag
  // A node takes at least a few bytes of YAML: reserving for one per 8 bytes avoids regrowth
  // (which would hold the array twice), and pages never written cost no memory.
  doc->nodes_.reserve(text.size() / 8 + 1);
  std::istringstream in{std::string(text)};
  YAML::Parser parser(in);
  tree_builder builder(*doc);
  parser.HandleNextDocument(builder);
  if (builder.empty()) {  // no document at all: a null root without a place, as YAML::Load gives
    doc->nodes_.emplace_back().mark = YAML::Mark::null_mark();
    doc->root_ = static_cast<std::uint32_t>(doc->nodes_.size() - 1);
  }
  return doc;
}

parsed parse(std::string_view text) {
  auto doc = document::parse(text);
  const auto root = doc->root();
  return {std::move(doc), root};
}

}  // namespace arun::io::yaml

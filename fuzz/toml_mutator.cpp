// SPDX-License-Identifier: Apache-2.0
// Structure-aware mutation for the TOML harnesses (model files, scenarios, catalogs). As with JSON, byte
// edits mostly break the syntax; this mutator parses the input with toml++ and edits the tree: a value set to
// an edge number (TOML has inf and nan), a string swapped for another from the file, a value's type changed,
// keys and elements dropped or copied, a subtree grafted elsewhere. A quarter of the time, and whenever the
// input is not TOML, it leaves the bytes to libFuzzer.
#include <toml++/toml.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/toml_depth.hpp"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

using Rng = std::mt19937_64;

int below(Rng& r, std::size_t n) { return n == 0 ? 0 : static_cast<int>(std::uniform_int_distribution<std::size_t>(0, n - 1)(r)); }

// Where a node sits, so it can be replaced: a key of a table or an index of an array.
struct Slot {
  toml::node* node;
  toml::table* table;
  std::string key;
  toml::array* array;
  std::size_t index;
};

constexpr int kMaxDepth = 32;

void collect(toml::node& n, int depth, std::vector<Slot>& out, std::vector<toml::table*>& tables, std::vector<std::string>& strings) {
  if (depth > kMaxDepth) return;
  if (auto* t = n.as_table()) {
    tables.push_back(t);
    for (auto&& [k, v] : *t) {
      strings.emplace_back(k.str());
      out.push_back({&v, t, std::string(k.str()), nullptr, 0});
      collect(v, depth + 1, out, tables, strings);
    }
  } else if (auto* a = n.as_array()) {
    for (std::size_t i = 0; i < a->size(); ++i) {
      out.push_back({a->get(i), nullptr, {}, a, i});
      collect(*a->get(i), depth + 1, out, tables, strings);
    }
  } else if (auto* s = n.as_string()) {
    strings.push_back(s->get());
  }
}

template <typename T>
void assign(const Slot& s, T&& v) {
  if (s.table) s.table->insert_or_assign(s.key, std::forward<T>(v));
  else s.array->replace(s.array->cbegin() + static_cast<std::ptrdiff_t>(s.index), std::forward<T>(v));
}

// A copy of any node, handed to `f` as its concrete type.
template <typename F>
void with_copy(const toml::node& n, F&& f) {
  n.visit([&](const auto& x) { f(std::remove_cvref_t<decltype(x)>(x)); });
}

std::int64_t edge_int(Rng& r) {
  static constexpr std::array<std::int64_t, 12> k = {0, 1, -1, 2, 3, 8, 1000, 65536, std::int64_t{1} << 31, std::int64_t{1} << 53,
                                                     std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()};
  return k[static_cast<std::size_t>(below(r, k.size()))];
}

double edge_float(Rng& r) {
  static constexpr std::array<double, 8> k = {0.0, -1.0, 0.5, 1e-300, 1e308, -1e308, std::numeric_limits<double>::infinity(),
                                              std::numeric_limits<double>::quiet_NaN()};
  return k[static_cast<std::size_t>(below(r, k.size()))];
}

void mutate_once(Rng& r, toml::table& root) {
  std::vector<Slot> slots;
  std::vector<toml::table*> tables;
  std::vector<std::string> strings;
  collect(root, 0, slots, tables, strings);
  if (slots.empty()) {
    root.insert_or_assign("x", edge_int(r));
    return;
  }
  const Slot& s = slots[static_cast<std::size_t>(below(r, slots.size()))];
  const Slot& other = slots[static_cast<std::size_t>(below(r, slots.size()))];
  switch (below(r, 9)) {
    case 0: assign(s, edge_int(r)); return;
    case 1: assign(s, edge_float(r)); return;
    case 2: {  // another string from the file (a key or a value), or one grown from it
      std::string v = strings.empty() ? std::string() : strings[static_cast<std::size_t>(below(r, strings.size()))];
      if (below(r, 4) == 0) v += below(r, 2) ? "\n" : "-x";
      assign(s, std::move(v));
      return;
    }
    case 3: assign(s, below(r, 2) == 0); return;
    case 4: {  // another type
      const int t = below(r, 3);
      if (t == 0) assign(s, toml::array{});
      else if (t == 1) assign(s, toml::table{});
      else assign(s, toml::array{1, 2});
      return;
    }
    case 5:  // a key or an element dropped
      if (s.table) s.table->erase(s.key);
      else s.array->erase(s.array->cbegin() + static_cast<std::ptrdiff_t>(s.index));
      return;
    case 6:  // a subtree grafted in place of another (copied before the assignment, as it may lie inside)
      with_copy(*other.node, [&](auto&& copy) { assign(s, std::move(copy)); });
      return;
    case 7: {  // a key the file uses, in another table, holding some value from the file
      toml::table* t = tables[static_cast<std::size_t>(below(r, tables.size()))];
      const std::string key = strings.empty() ? std::string("x") : strings[static_cast<std::size_t>(below(r, strings.size()))];
      with_copy(*other.node, [&](auto&& copy) { t->insert_or_assign(key, std::move(copy)); });
      return;
    }
    default:  // an array grows by a copy of its own element
      if (s.array) with_copy(*s.node, [&](auto&& copy) { s.array->push_back(std::move(copy)); });
      else assign(s, edge_int(r));
      return;
  }
}

}  // namespace

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned int seed) {
  Rng r(seed);
  if (below(r, 4) == 0) return LLVMFuzzerMutate(data, size, max_size);
  toml::table root;
  try {
    // The readers' own nesting check first: toml++ frees a tree of 50,000 dotted parts recursively, which
    // overflows the stack here as it did in the readers (issue 31's seeds hold such keys).
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    gpuvs::check_toml_depth(text, "input");
    root = toml::parse(text);
  } catch (const toml::parse_error&) {
    return LLVMFuzzerMutate(data, size, max_size);
  } catch (const gpuvs::InputError&) {
    return LLVMFuzzerMutate(data, size, max_size);
  }
  for (int k = 1 + below(r, 3); k > 0; --k) mutate_once(r, root);
  std::ostringstream out;
  out << root;
  const std::string text = out.str();
  if (text.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

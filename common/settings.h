// A program's settings, each declared once: its name (the long command-line flag and the TOML
// key), what it means, its range, and where it lives in the program's options struct. From that
// one declaration the table registers the flag (CLI11), reads the key from a TOML file
// (range-checked, errors naming file and key), and writes the commented configuration file
// (config/*.toml are that output, checked by tests/config_test.cpp), so defaults, flags, keys,
// ranges and documentation cannot drift apart.
//
//   settings::Table<RouterOptions> t;
//   t.Int("liveness", "heartbeats a worker may miss", [](auto& o) -> auto& { return o.liveness; },
//         1, 100);  // the accessor is generic: it serves const and mutable Options alike
//   t.Read(toml_table, &options, path);      // the file
//   auto given = t.AddFlags(app, &options);  // then the flags, which win
//   std::cout << t.Render(options);          // the commented file
#ifndef EMBER_COMMON_SETTINGS_H_
#define EMBER_COMMON_SETTINGS_H_

#include <toml++/toml.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config_file.h"

namespace ember::settings {

// TOML literals for the rendered file.
std::string Quote(std::string_view text);  // "text", escaped
std::string RealLiteral(double value);     // always with a '.' or an exponent
// `text` as TOML comment lines ("# ..."), one per line of text; empty lines stay "#".
std::string Comment(std::string_view text);

template <class Options>
class Table {
 public:
  // Which flags a command line gave, to apply them to other Options too (per-model copies).
  class Given {
   public:
    void ApplyTo(const Options& from, Options& to) const {
      for (const auto& [option, copy] : copies_) {
        if (option->count() > 0) copy(from, to);
      }
    }
    bool Any() const {
      for (const auto& [option, copy] : copies_) {
        if (option->count() > 0) return true;
      }
      return false;
    }

   private:
    friend class Table;
    std::vector<std::pair<CLI::Option*, std::function<void(const Options&, Options&)>>> copies_;
  };

  // An integer field (any integral type) in [lo, hi].
  template <class Get>
  Table& Int(std::string key, std::string help, Get get, std::int64_t lo, std::int64_t hi) {
    using T = std::remove_reference_t<decltype(get(std::declval<Options&>()))>;
    return AddInt(
        std::move(key), std::move(help), get, [](std::int64_t v) { return static_cast<T>(v); },
        [](const T& v) { return std::to_string(v); }, lo, hi);
  }

  // A std::chrono::duration field, given as a count of its unit (the key says which: -ms, -us,
  // -s) in [lo, hi].
  template <class Get>
  Table& Duration(std::string key, std::string help, Get get, std::int64_t lo, std::int64_t hi) {
    using D = std::remove_reference_t<decltype(get(std::declval<Options&>()))>;
    return AddInt(
        std::move(key), std::move(help), get,
        [](std::int64_t v) { return D(static_cast<typename D::rep>(v)); },
        [](const D& v) { return std::to_string(v.count()); }, lo, hi);
  }

  // A double field in [lo, hi].
  template <class Get>
  Table& Real(std::string key, std::string help, Get get, double lo, double hi) {
    return Add<double>(
        std::move(key), std::move(help), get, [](double v) { return v; },
        [](double v) { return RealLiteral(v); },
        [lo, hi](const toml::node& n) -> std::optional<double> {
          const auto v = n.value<double>();
          if (!v || *v < lo || *v > hi) return std::nullopt;
          return v;
        },
        "a number in [" + RealLiteral(lo) + ", " + RealLiteral(hi) + "]",
        [lo, hi](CLI::Option* o) { o->check(CLI::Range(lo, hi)); });
  }

  // A string field; `valid` (optional) returns "" or why a value is refused.
  template <class Get>
  Table& Text(std::string key, std::string help, Get get,
              std::function<std::string(const std::string&)> valid = {}) {
    return Add<std::string>(
        std::move(key), std::move(help), get, [](std::string v) { return v; },
        [](const std::string& v) { return Quote(v); },
        [valid](const toml::node& n) -> std::optional<std::string> {
          const auto v = n.value<std::string>();
          if (!v || (valid && !valid(*v).empty())) return std::nullopt;
          return v;
        },
        "a string",
        [valid](CLI::Option* o) {
          if (valid) o->check(valid);
        });
  }

  // A field of any type E shown as one of `names` (parse: name to E, nullopt if unknown).
  template <class Get, class Parse, class Name>
  Table& Choice(std::string key, std::string help, Get get, Parse parse, Name name,
                std::vector<std::string> names) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    const auto valid = [parse, list](const std::string& v) -> std::string {
      return parse(v) ? "" : "'" + v + "' is not one of " + list;
    };
    return Add<std::string>(
        std::move(key), std::move(help), get, [parse](const std::string& v) { return *parse(v); },
        [name](const auto& v) { return Quote(std::string(name(v))); },
        [valid](const toml::node& n) -> std::optional<std::string> {
          const auto v = n.value<std::string>();
          if (!v || !valid(*v).empty()) return std::nullopt;
          return v;
        },
        "one of " + list, [valid](CLI::Option* o) { o->check(valid); });
  }

  // A bool field.
  template <class Get>
  Table& Flag(std::string key, std::string help, Get get) {
    return Add<bool>(
        std::move(key), std::move(help), get, [](bool v) { return v; },
        [](bool v) { return std::string(v ? "true" : "false"); },
        [](const toml::node& n) { return n.value<bool>(); }, "true or false", [](CLI::Option*) {});
  }

  // A std::vector of integers in [lo, hi] (flag: comma-separated or repeated).
  template <class Get>
  Table& IntList(std::string key, std::string help, Get get, std::int64_t lo, std::int64_t hi) {
    using V = std::remove_reference_t<decltype(get(std::declval<Options&>()))>;
    using T = typename V::value_type;
    return Add<std::vector<std::int64_t>>(
        std::move(key), std::move(help), get,
        [](const std::vector<std::int64_t>& v) {
          V out;
          for (auto x : v) out.push_back(static_cast<T>(x));
          return out;
        },
        [](const V& v) {
          std::string s = "[";
          for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
          return s + "]";
        },
        [lo, hi](const toml::node& n) -> std::optional<std::vector<std::int64_t>> {
          const toml::array* a = n.as_array();
          if (a == nullptr) return std::nullopt;
          std::vector<std::int64_t> out;
          for (const auto& e : *a) {
            const auto v = e.value<std::int64_t>();
            if (!v || *v < lo || *v > hi) return std::nullopt;
            out.push_back(*v);
          }
          return out;
        },
        "an array of integers in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]",
        [lo, hi](CLI::Option* o) {
          o->check(CLI::Range(lo, hi))
              ->delimiter(',')
              ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
        });
  }

  // A std::vector<std::string> (flag: repeated).
  template <class Get>
  Table& TextList(std::string key, std::string help, Get get) {
    return Add<std::vector<std::string>>(
        std::move(key), std::move(help), get, [](const std::vector<std::string>& v) { return v; },
        [](const std::vector<std::string>& v) {
          std::string s = "[";
          for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + Quote(v[i]);
          return s + "]";
        },
        [](const toml::node& n) -> std::optional<std::vector<std::string>> {
          // One string is a list of one, so a setting that became a list reads older files.
          if (const auto one = n.value<std::string>(); one && n.is_string()) {
            return std::vector<std::string>{*one};
          }
          const toml::array* a = n.as_array();
          if (a == nullptr) return std::nullopt;
          std::vector<std::string> out;
          for (const auto& e : *a) {
            const auto v = e.value<std::string>();
            if (!v) return std::nullopt;
            out.push_back(*v);
          }
          return out;
        },
        "a string or an array of strings",
        [](CLI::Option* o) { o->multi_option_policy(CLI::MultiOptionPolicy::TakeAll); });
  }

  // Decorations of the setting added last, for the rendered file: a comment longer than the
  // flag's help, shown instead of it; the line commented out (an example, not a setting); a
  // paragraph before it that opens a group of settings.
  Table& Doc(std::string comment) {
    entries_.back().doc = std::move(comment);
    return *this;
  }
  Table& Commented() {
    entries_.back().commented = true;
    return *this;
  }
  // A commented-out line shows `toml_literal` rather than the (often empty) default.
  Table& Example(std::string toml_literal) {
    entries_.back().commented = true;
    entries_.back().example = std::move(toml_literal);
    return *this;
  }
  Table& Section(std::string comment) {
    entries_.back().section = std::move(comment);
    return *this;
  }
  // Not a flag (a setting of files only, e.g. per-model tables reuse another table's keys).
  Table& FileOnly() {
    entries_.back().file_only = true;
    return *this;
  }

  // Registers --KEY for every setting, writing into *options (which must outlive parsing);
  // the current values of *options are the defaults --help shows. A flag given twice takes
  // its last value (lists take all), so wrappers can append overrides.
  Given AddFlags(CLI::App& app, Options* options) const {
    Given given;
    for (const auto& e : entries_) {
      if (e.file_only) continue;
      CLI::Option* o = e.add_flag(app, options);
      o->default_str(e.render(*options));
      given.copies_.emplace_back(o, e.copy);
    }
    return given;
  }

  // Reads every setting present in `t` into *options; `prefix` names the table in errors
  // ("models.minilm."). Keys that are not settings are the caller's to check (Keys()).
  void Read(const toml::table& t, Options* options, const std::filesystem::path& path,
            std::string_view prefix = "") const {
    for (const auto& e : entries_) {
      if (const toml::node* n = t.get(e.key))
        e.read(*n, options, path, std::string(prefix) + e.key);
    }
  }

  std::vector<std::string> Keys() const {
    std::vector<std::string> keys;
    for (const auto& e : entries_) keys.push_back(e.key);
    return keys;
  }

  // The settings as a commented TOML file, with the values of `options`.
  // Each setting is a paragraph: its comment, then `key = value` (commented out for examples);
  // a section's comment opens a paragraph of its own.
  std::string Render(const Options& options) const {
    std::string out;
    for (const auto& e : entries_) {
      if (!e.section.empty()) out += "\n" + Comment(e.section);
      out += "\n" + Comment(e.doc.empty() ? e.help : e.doc);
      const std::string value = e.example.empty() ? e.render(options) : e.example;
      out += (e.commented ? "# " : "") + e.key + " = " + value + "\n";
    }
    return out;
  }

 private:
  struct Entry {
    std::string key, help, doc, section, example;
    bool commented = false, file_only = false;
    std::function<CLI::Option*(CLI::App&, Options*)> add_flag;
    std::function<void(const toml::node&, Options*, const std::filesystem::path&,
                       const std::string&)>
        read;
    std::function<std::string(const Options&)> render;
    std::function<void(const Options&, Options&)> copy;
  };

  // A setting carried as an integer in [lo, hi], whatever the field's type.
  template <class Get, class Convert, class Show>
  Table& AddInt(std::string key, std::string help, Get get, Convert convert, Show show,
                std::int64_t lo, std::int64_t hi) {
    return Add<std::int64_t>(
        std::move(key), std::move(help), get, convert, show,
        [lo, hi](const toml::node& n) -> std::optional<std::int64_t> {
          const auto v = n.value<std::int64_t>();
          if (!v || *v < lo || *v > hi) return std::nullopt;
          return v;
        },
        "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]",
        [lo, hi](CLI::Option* o) { o->check(CLI::Range(lo, hi)); });
  }

  // Wire (what the flag and the file carry), to field via `convert`, field to TOML via `show`.
  template <class Wire, class Get, class Convert, class Show, class Parse, class Check>
  Table& Add(std::string key, std::string help, Get get, Convert convert, Show show, Parse parse,
             std::string expected, Check check) {
    Entry e;
    e.key = key;
    e.help = help;
    e.add_flag = [=](CLI::App& app, Options* options) {
      CLI::Option* o = app.add_option_function<Wire>(
          "--" + key, [=](const Wire& v) { get(*options) = convert(v); }, help);
      o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
      check(o);
      return o;
    };
    e.read = [=](const toml::node& n, Options* options, const std::filesystem::path& path,
                 const std::string& full_key) {
      const std::optional<Wire> v = parse(n);
      if (!v) config::Bad(path, full_key, "expected " + expected);
      get(*options) = convert(*v);
    };
    e.render = [=](const Options& o) { return show(get(o)); };
    e.copy = [=](const Options& from, Options& to) { get(to) = get(from); };
    entries_.push_back(std::move(e));
    return *this;
  }

  std::vector<Entry> entries_;
};

}  // namespace ember::settings

#endif  // EMBER_COMMON_SETTINGS_H_

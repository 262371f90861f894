// SPDX-License-Identifier: Apache-2.0
// A person's standing assumptions, so that a buyer who always pays 0.21 USD/kWh or gets H100s at a negotiated price
// stops passing --assume every time: a TOML file with an [assume] table (the keys a scenario's [assume] takes), read
// by every command that prices costs (advise, compare, evaluate; the Python module's too) over the built-in defaults,
// under a scenario file and under the flags. Where it is: the file GPUVS_CONFIG names ("none": no file), else
// $XDG_CONFIG_HOME/gpuvs/config.toml, else ~/.config/gpuvs/config.toml; none there is the usual case, not an error.
// A [serving] table's `engine` is the serving engine every command prices with when none is named (predict, compare,
// advise, evaluate; never validate, whose rows are what their sources ran).
#pragma once
#include <string>
#include <vector>

#include "advise/assumptions.hpp"
#include "catalog/catalog.hpp"

namespace gpuvs::advise {

/// The config file this run reads, or "" for none. InputError when GPUVS_CONFIG names a file that is not there
/// (the user named it).
std::string user_config_path();

/// The serving engine the config prefers (its [serving] table's `engine`), or "" when it names none; `path` gets
/// the file. InputError "PATH:LINE: ..." for an engine gpuvs does not know.
std::string preferred_engine(std::string* path = nullptr);

/// The built-in defaults with the config file's [assume] applied; `said` gets "key=value" for each it set and
/// `path` the file ("" when none). InputError "PATH:LINE: ..." for unknown keys and impossible values.
Assumptions standing_assumptions(const catalog::Catalog& cat, std::string* path = nullptr, std::vector<std::string>* said = nullptr);

}  // namespace gpuvs::advise

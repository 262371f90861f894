// SPDX-License-Identifier: Apache-2.0
// The compiled half of `import gpuvs` (_gpuvs): runs a gpuvs command in the Python process through the same
// library the command line is built from (cli/app.hpp's run_json) and hands back its JSON document as Python
// objects. The Python half (gpuvs/__init__.py) turns keyword arguments into the command's flags.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"

namespace py = pybind11;

namespace {

py::object to_python(const nlohmann::json& j) {
  using T = nlohmann::json::value_t;
  switch (j.type()) {
    case T::null: return py::none();
    case T::boolean: return py::bool_(j.get<bool>());
    case T::number_integer: return py::int_(j.get<std::int64_t>());
    case T::number_unsigned: return py::int_(j.get<std::uint64_t>());
    case T::number_float: return py::float_(j.get<double>());
    case T::string: return py::str(j.get_ref<const std::string&>());
    case T::array: {
      py::list out;
      for (const auto& e : j) out.append(to_python(e));
      return out;
    }
    case T::object: {
      py::dict out;
      for (const auto& [k, v] : j.items()) out[py::str(k)] = to_python(v);
      return out;
    }
    case T::binary:
    case T::discarded: break;
  }
  throw gpuvs::RuntimeFailure("a JSON value of a kind Python has no counterpart for");
}

}  // namespace

PYBIND11_MODULE(_gpuvs, m) {
  m.doc() = "gpuvs run in this process: see the gpuvs package";
  m.attr("__version__") = GPUVS_VERSION;
  // Error: anything gpuvs reports (exit 1 on the command line); InputError: what it exits 2 on, a ValueError too.
  static py::exception<gpuvs::RuntimeFailure> error(m, "Error", PyExc_RuntimeError);
  static py::object input_error = py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
      "gpuvs.InputError", "Bad input: the one-line message `gpuvs` prints before exiting 2.",
      py::make_tuple(error, py::handle(PyExc_ValueError)).ptr(), nullptr));
  if (!input_error) throw py::error_already_set();
  m.attr("InputError") = input_error;
  // Local: a global translator would turn other pybind11 modules' exceptions (torch's) into gpuvs errors.
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const gpuvs::InputError& e) {
      PyErr_SetString(input_error.ptr(), e.what());
    } catch (const py::error_already_set&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw;  // pybind11's own translation: MemoryError
    } catch (const std::exception& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
  m.def(
      "run_json",
      [](const std::vector<std::string>& args, const std::map<std::string, py::bytes>& held) {
        std::map<std::string, std::string> models;
        for (const auto& [name, bytes] : held) models.emplace(name, std::string(bytes));
        return to_python(gpuvs::cli::run_json(args, models));
      },
      py::arg("args"), py::arg("held") = std::map<std::string, py::bytes>{},
      "Runs `gpuvs ARGS... --json` in this process and returns its JSON document as dicts and lists; `held` maps names to "
      "models held in memory for the run (ONNX bytes, model JSON or TOML text), which the arguments name like files.");
  m.def(
      "records",
      [](const std::string& doc_json, const std::vector<std::string>& row_lists) {
        const auto r = gpuvs::cli::records_of(nlohmann::json::parse(doc_json), row_lists);
        py::list rows;
        for (const auto& row : r.rows) {
          py::list cells;
          for (const auto& c : row) cells.append(to_python(c));
          rows.append(cells);
        }
        return py::make_tuple(r.columns, rows);
      },
      py::arg("doc_json"), py::arg("row_lists"),
      "(columns, rows) of a document as `-o csv` prints it (cli/output.hpp's records_of).");
}

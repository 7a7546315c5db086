# LibTorch for ember-worker and the engine, and the Python that generates models and
# references. Included by the top-level CMakeLists.txt.
#
# EMBER_PYTHON is the interpreter of the project's Python environment: .venv/bin/python3 (made
# by scripts/setup.sh) when it exists, else python3 on PATH (the GPU machine's torch venv). Its
# torch wheel is where CMake finds LibTorch (torch.utils.cmake_prefix_path), so the C++ library
# and the Python that made the test models are always the same torch. A LibTorch named by
# Torch_DIR or CMAKE_PREFIX_PATH wins, as find_package has it.
#
# PyPI's Linux torch is built for CUDA, and TorchConfig.cmake then requires the CUDA toolkit
# (nvcc, cudart, cuDNN): the worker is built with its CUDA paths on every build. With no GPU
# to detect, the CUDA architectures are named here: sm_90 (H100/H200) by default.

if(EXISTS "${PROJECT_SOURCE_DIR}/.venv/bin/python3")
  set(_ember_python_default "${PROJECT_SOURCE_DIR}/.venv/bin/python3")
else()
  find_program(_ember_python_default NAMES python3 REQUIRED)
endif()
set(EMBER_PYTHON "${_ember_python_default}" CACHE FILEPATH
    "Python with torch (scripts/setup.sh makes .venv): model generators, references, LibTorch")

if(NOT EMBER_BUILD_WORKER)
  return()
endif()

execute_process(
  COMMAND "${EMBER_PYTHON}" -c "import torch, sys; sys.stdout.write(torch.utils.cmake_prefix_path)"
  RESULT_VARIABLE _ember_torch_result
  OUTPUT_VARIABLE _ember_torch_prefix
  ERROR_VARIABLE _ember_torch_error)
if(_ember_torch_result EQUAL 0)
  list(APPEND CMAKE_PREFIX_PATH "${_ember_torch_prefix}")
  # TorchConfig finds these with find_library(... PATHS <wheel>/lib), which searches the
  # system's folders first: a Debian libtorch-dev there would be linked beside the wheel.
  get_filename_component(_ember_torch_lib "${_ember_torch_prefix}/../../lib" ABSOLUTE)
  find_library(TORCH_LIBRARY torch PATHS "${_ember_torch_lib}" NO_DEFAULT_PATH)
  find_library(c10_LIBRARY c10 PATHS "${_ember_torch_lib}" NO_DEFAULT_PATH)
  find_library(C10_CUDA_LIBRARY c10_cuda PATHS "${_ember_torch_lib}" NO_DEFAULT_PATH)
elseif(NOT Torch_DIR)
  message(FATAL_ERROR "ember: ${EMBER_PYTHON} has no torch (${_ember_torch_error}). "
                      "Run scripts/setup.sh, or pass -DEMBER_PYTHON=/path/to/python3 or "
                      "-DTorch_DIR=/path/to/share/cmake/Torch.")
endif()

set(EMBER_CUDA_ARCHITECTURES "90" CACHE STRING
    "CUDA architectures of the worker's CUDA code (90: H100/H200)")
# A CUDA wheel without NVIDIA's toolkit would stop in TorchConfig with "Your installed Caffe2
# version uses CUDA but I cannot find the CUDA libraries"; say what is missing instead.
execute_process(
  COMMAND "${EMBER_PYTHON}" -c "import torch, sys; sys.stdout.write(torch.version.cuda or '')"
  OUTPUT_VARIABLE _ember_torch_cuda ERROR_QUIET)
if(_ember_torch_cuda)
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR
      "ember: the torch of ${EMBER_PYTHON} is built for CUDA ${_ember_torch_cuda}, and building "
      "against it needs NVIDIA's CUDA toolkit ${_ember_torch_cuda} (nvcc, cudart headers): none "
      "found (looked on PATH and in /usr/local/cuda). Install it, or put its bin/ on PATH, "
      "or set CUDACXX=/path/to/nvcc.")
  endif()
endif()
if(NOT DEFINED Python_EXECUTABLE)
  set(Python_EXECUTABLE "${EMBER_PYTHON}")  # TorchConfig's CUDA part looks for a Python too
endif()
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  # TorchConfig would otherwise run a program to ask the GPU, and without one guess a list.
  string(REGEX REPLACE "([0-9])([0-9])" "\\1.\\2" _ember_torch_arch "${EMBER_CUDA_ARCHITECTURES}")
  set(ENV{TORCH_CUDA_ARCH_LIST} "${_ember_torch_arch}")
endif()
find_package(Torch REQUIRED)
# TorchConfig enables the CUDA language and turns CMAKE_CUDA_ARCHITECTURES off (it passes its
# own -gencode flags); ember's .cu sources build for EMBER_CUDA_ARCHITECTURES.
set(CMAKE_CUDA_ARCHITECTURES "${EMBER_CUDA_ARCHITECTURES}")
# TorchConfig also sets CMAKE_CUDA_STANDARD to CMAKE_CXX_STANDARD (20), required. CMake before
# 3.26 (Debian 12 has 3.25) knows no C++20 flag for nvcc, which has taken -std=c++20 since 12.0.
if(CMAKE_CUDA_COMPILER AND NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()
message(STATUS "ember: LibTorch ${Torch_VERSION} from ${TORCH_INSTALL_PREFIX}"
               " (CUDA: ${CAFFE2_USE_CUDA})")

# The wheel's libraries are built on an older system with a newer GCC, which links the parts of
# libstdc++ the old system lacks into them and exports them (std::filesystem, std::chrono's
# time zones, stream members): libtorch.so defines std::filesystem::remove_all, unversioned. A
# binary that lists libtorch before libstdc++.so.6 has its own std:: calls bound to those copies
# (measured: remove_all jumped to address 0). Naming libstdc++ first, before every other
# library, makes the system's libstdc++ the one every std:: symbol resolves to; the wheel's
# copies serve only what it alone has.
add_link_options("LINKER:--push-state,--no-as-needed" "-lstdc++" "LINKER:--pop-state")

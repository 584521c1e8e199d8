# The field's own libraries, from the distribution's packages. Nothing is downloaded.
find_package(Threads REQUIRED)
find_package(PkgConfig QUIET)
find_package(ZLIB REQUIRED)
find_package(nlohmann_json 3.9 REQUIRED)

# libzstd and liblz4 ship pkg-config files on Debian/Ubuntu; fall back to a plain search
# where pkg-config is missing (e.g. headers carried to a machine without a registry).
function(cs_find_c_library target header lib pcname)
  if(PkgConfig_FOUND)
    pkg_check_modules(${target}_PC QUIET IMPORTED_TARGET ${pcname})
  endif()
  if(${target}_PC_FOUND)
    add_library(cs::${target} ALIAS PkgConfig::${target}_PC)
  else()
    find_path(${target}_INCLUDE_DIR ${header} REQUIRED)
    find_library(${target}_LIBRARY ${lib} REQUIRED)
    add_library(cs::${target} UNKNOWN IMPORTED GLOBAL)
    set_target_properties(cs::${target} PROPERTIES IMPORTED_LOCATION ${${target}_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${${target}_INCLUDE_DIR})
  endif()
endfunction()
cs_find_c_library(zstd zstd.h zstd libzstd)
cs_find_c_library(lz4 lz4.h lz4 liblz4)

# Object stores (src/store/http, src/store/s3): libcurl moves the bytes, OpenSSL's libcrypto
# computes SHA-256 and HMAC-SHA256 for AWS Signature Version 4. Both are required: Debian
# (libcurl4-openssl-dev, libssl-dev; scripts/setup.sh) and the GPU machine have them.
find_package(CURL REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)

# libnetcdf reads netCDF-4/HDF5 (and netCDF-3) files for `cubestream convert`; only the
# command links it. Without it (Debian: libnetcdf-dev) convert explains what is missing.
set(CUBESTREAM_HAVE_NETCDF OFF)
if(PkgConfig_FOUND)
  pkg_check_modules(netcdf_PC QUIET IMPORTED_TARGET netcdf)
  if(netcdf_PC_FOUND)
    set(CUBESTREAM_HAVE_NETCDF ON)
    add_library(cs::netcdf ALIAS PkgConfig::netcdf_PC)
  endif()
endif()
if(NOT CUBESTREAM_HAVE_NETCDF)
  message(STATUS "libnetcdf not found: `cubestream convert` is built without netCDF support")
endif()

# libblosc is a test oracle only: the library decodes blosc itself.
find_path(BLOSC_INCLUDE_DIR blosc.h)
find_library(BLOSC_LIBRARY blosc)
if(BLOSC_INCLUDE_DIR AND BLOSC_LIBRARY)
  set(CUBESTREAM_HAVE_BLOSC ON)
  add_library(cs::blosc UNKNOWN IMPORTED GLOBAL)
  set_target_properties(cs::blosc PROPERTIES IMPORTED_LOCATION ${BLOSC_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${BLOSC_INCLUDE_DIR})
else()
  set(CUBESTREAM_HAVE_BLOSC OFF)
  message(STATUS "libblosc not found: blosc oracle tests are skipped")
endif()

set(CUBESTREAM_HAVE_PYBIND11 OFF)
if(CUBESTREAM_BUILD_PYTHON)
  find_package(Python3 COMPONENTS Interpreter Development.Module)
  if(Python3_FOUND)
    set(PYBIND11_FINDPYTHON ON)
    find_package(pybind11 CONFIG QUIET)
    if(NOT pybind11_FOUND)
      # pybind11 installed with pip keeps its CMake files inside the Python package.
      execute_process(COMMAND ${Python3_EXECUTABLE} -m pybind11 --cmakedir
        OUTPUT_VARIABLE cs_pybind11_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE cs_rc)
      if(cs_rc EQUAL 0 AND cs_pybind11_dir)
        find_package(pybind11 CONFIG QUIET PATHS ${cs_pybind11_dir} NO_DEFAULT_PATH)
      endif()
    endif()
    if(pybind11_FOUND)
      set(CUBESTREAM_HAVE_PYBIND11 ON)
    else()
      message(STATUS "pybind11 not found: the Python module is not built")
    endif()
  endif()
endif()

# io_uring for the local read engine (src/store/file/uring_engine.cpp) is optional at build
# time: without liburing the engine uses its pread thread pool, and with it the choice is
# still made at run time (io_uring_setup may be refused inside containers). Searched on the
# CMake prefix path, then where pkg-config says (the GPU machine carries Debian's liburing-dev
# in .devdeps: pass -DCMAKE_PREFIX_PATH=<.devdeps>/usr; the static archive is preferred so the
# binary does not need liburing.so there). CUBESTREAM_LIBURING=OFF builds without it.
set(CUBESTREAM_LIBURING "AUTO" CACHE STRING "Use liburing for the io_uring read engine: AUTO or OFF")
set(CUBESTREAM_HAVE_LIBURING OFF)
if(NOT CUBESTREAM_LIBURING STREQUAL "OFF")
  # pkg-config only as a hint: FindPkgConfig also searches CMAKE_PREFIX_PATH, where a carried
  # liburing.pc still names /usr (its original prefix), so its paths are not trusted as they are.
  if(PkgConfig_FOUND)
    pkg_check_modules(URING_PC QUIET liburing)
  endif()
  find_path(URING_INCLUDE_DIR liburing.h HINTS ${URING_PC_INCLUDE_DIRS})
  find_library(URING_LIBRARY NAMES liburing.a uring HINTS ${URING_PC_LIBRARY_DIRS})
  if(URING_INCLUDE_DIR AND URING_LIBRARY)
    add_library(cs::uring UNKNOWN IMPORTED GLOBAL)
    set_target_properties(cs::uring PROPERTIES IMPORTED_LOCATION ${URING_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${URING_INCLUDE_DIR})
    set(CUBESTREAM_HAVE_LIBURING ON)
  endif()
endif()
if(CUBESTREAM_HAVE_LIBURING)
  message(STATUS "cubestream: io_uring read engine on (${URING_LIBRARY}, ${URING_INCLUDE_DIR})")
else()
  message(STATUS "cubestream: liburing not found: the local read engine uses its pread pool only")
endif()

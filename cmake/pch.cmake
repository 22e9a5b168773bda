# Precompiled headers, to keep the build (and so CI) short on two cores. nlohmann/json and
# GoogleTest are parsed by more than a hundred translation units each, about 2 s of g++ time
# every time; a precompiled header is parsed once per group of targets built with the same flags
# (REUSE_FROM). If g++ finds a precompiled header unusable it reads the headers as text, so this
# only ever changes the speed. Off: -DGPUPOOL_PCH=OFF.
option(GPUPOOL_PCH "Precompile the heavy common headers (nlohmann/json, GoogleTest)" ON)

set(_gpupool_pch_std <string> <vector> <map> <set> <memory> <optional> <functional> <algorithm>)
if(GPUPOOL_PCH)
  # Libraries that speak JSON.
  add_library(gpupool_pch_json OBJECT ${CMAKE_SOURCE_DIR}/cmake/pch_anchor.cc)
  target_link_libraries(gpupool_pch_json PRIVATE nlohmann_json::nlohmann_json)
  target_precompile_headers(gpupool_pch_json PRIVATE <nlohmann/json.hpp> ${_gpupool_pch_std})
  # Test programs (gpupool_test): GoogleTest and JSON.
  add_library(gpupool_pch_test OBJECT ${CMAKE_SOURCE_DIR}/cmake/pch_anchor.cc)
  target_link_libraries(gpupool_pch_test PRIVATE GTest::gtest nlohmann_json::nlohmann_json)
  target_precompile_headers(gpupool_pch_test PRIVATE <gtest/gtest.h> <nlohmann/json.hpp> ${_gpupool_pch_std})
endif()

# gpupool_pch(TARGET json|test): TARGET's sources start from that precompiled header.
function(gpupool_pch target kind)
  if(GPUPOOL_PCH)
    target_precompile_headers(${target} REUSE_FROM gpupool_pch_${kind})
  endif()
endfunction()

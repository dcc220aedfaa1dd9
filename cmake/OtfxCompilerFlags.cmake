# Warnings and sanitizers for the C code. The viewer (C++) gets warnings but never sanitizers:
# the sanitizer build exists to check our C libraries and programs.
set(OTFX_C_WARNINGS -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2)
set(OTFX_CXX_WARNINGS -Wall -Wextra)
if(OTFX_WERROR)
  list(APPEND OTFX_C_WARNINGS -Werror)
  list(APPEND OTFX_CXX_WARNINGS -Werror)
endif()
add_compile_options("$<$<COMPILE_LANGUAGE:C>:${OTFX_C_WARNINGS}>"
                    "$<$<COMPILE_LANGUAGE:CXX>:${OTFX_CXX_WARNINGS}>")

set(OTFX_FUZZ_ENGINE replay)
if(OTFX_SANITIZE)
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")
    # libFuzzer is part of clang's runtime; instrument everything so fuzz targets get coverage.
    set(OTFX_FUZZ_ENGINE libfuzzer)
    set(_otfx_sanitize -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
                       -fsanitize=fuzzer-no-link)
  else()
    set(_otfx_sanitize -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C>:${_otfx_sanitize}>")
  add_link_options(-fsanitize=address,undefined)
endif()
message(STATUS "otfx: C warnings ${OTFX_C_WARNINGS}; sanitizers ${OTFX_SANITIZE}; fuzz engine ${OTFX_FUZZ_ENGINE}")

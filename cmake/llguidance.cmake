# llguidance (crates.io, Rust), the constrained-decoding library behind structured
# output (src/genai/constraint.h), built with cargo into one static library.
#
# - The toolchain is Debian's cargo-web / rustc-web (1.96, bookworm-security;
#   scripts/setup.sh installs them): /usr/bin/cargo and /usr/bin/rustc, found
#   there first so a rustup toolchain earlier on PATH does not build what CI
#   would not. EMBER_CARGO overrides it.
# - The crates (rust/llguidance/Cargo.lock pins them) are fetched from crates.io
#   at configure time into third_party/cargo (CARGO_HOME), and built into
#   third_party/llguidance, shared by every build folder of this checkout (the
#   Python package's included), so a second build folder links the first one's
#   library instead of compiling it again. Both are ignored by git.
find_program(EMBER_CARGO cargo PATHS /usr/bin NO_DEFAULT_PATH)
find_program(EMBER_CARGO cargo)
if(NOT EMBER_CARGO)
  message(FATAL_ERROR "cargo not found: structured output builds llguidance with Rust >= 1.87 "
                      "(Debian 12: apt-get install cargo-web rustc-web, as scripts/setup.sh does)")
endif()
get_filename_component(_ember_cargo_dir ${EMBER_CARGO} DIRECTORY)
find_program(EMBER_RUSTC rustc PATHS ${_ember_cargo_dir} NO_DEFAULT_PATH)
if(NOT EMBER_RUSTC)
  message(FATAL_ERROR "rustc not found next to ${EMBER_CARGO}")
endif()

set(EMBER_LLG_CRATE ${CMAKE_SOURCE_DIR}/rust/llguidance)
set(EMBER_CARGO_HOME ${CMAKE_SOURCE_DIR}/third_party/cargo)
set(EMBER_LLG_TARGET_DIR ${CMAKE_SOURCE_DIR}/third_party/llguidance)
set(EMBER_LLG_LIBRARY ${EMBER_LLG_TARGET_DIR}/release/libember_llguidance.a)
set(_ember_cargo_env ${CMAKE_COMMAND} -E env CARGO_HOME=${EMBER_CARGO_HOME} RUSTC=${EMBER_RUSTC}
    RUSTDOC=${_ember_cargo_dir}/rustdoc --unset=RUSTUP_TOOLCHAIN --unset=CARGO_TARGET_DIR --unset=RUSTFLAGS)

execute_process(COMMAND ${_ember_cargo_env} ${EMBER_CARGO} fetch --locked --manifest-path ${EMBER_LLG_CRATE}/Cargo.toml
                RESULT_VARIABLE _ember_fetch ERROR_VARIABLE _ember_fetch_err)
if(NOT _ember_fetch EQUAL 0)
  message(FATAL_ERROR "cargo fetch of llguidance (rust/llguidance/Cargo.lock) failed; crates.io must be "
                      "reachable once:\n${_ember_fetch_err}")
endif()
file(GLOB _ember_llg_header ${EMBER_CARGO_HOME}/registry/src/*/llguidance-1.9.1/llguidance.h)
if(NOT _ember_llg_header)
  message(FATAL_ERROR "llguidance.h not found under ${EMBER_CARGO_HOME}/registry/src after cargo fetch")
endif()
list(GET _ember_llg_header 0 _ember_llg_header)
get_filename_component(EMBER_LLG_INCLUDE ${_ember_llg_header} DIRECTORY)

# --offline: the configure step fetched every crate the lock file names.
add_custom_command(
  OUTPUT ${EMBER_LLG_LIBRARY}
  COMMAND ${_ember_cargo_env} ${EMBER_CARGO} build --release --locked --offline --quiet
          --manifest-path ${EMBER_LLG_CRATE}/Cargo.toml --target-dir ${EMBER_LLG_TARGET_DIR}
  DEPENDS ${EMBER_LLG_CRATE}/Cargo.toml ${EMBER_LLG_CRATE}/Cargo.lock ${EMBER_LLG_CRATE}/src/lib.rs
  COMMENT "Building llguidance (Rust, cargo --release)"
  USES_TERMINAL VERBATIM)
add_custom_target(ember_llguidance_build DEPENDS ${EMBER_LLG_LIBRARY})
add_library(ember_llguidance STATIC IMPORTED GLOBAL)
set_target_properties(ember_llguidance PROPERTIES IMPORTED_LOCATION ${EMBER_LLG_LIBRARY}
                      INTERFACE_INCLUDE_DIRECTORIES ${EMBER_LLG_INCLUDE}
                      INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS};m")
add_dependencies(ember_llguidance ember_llguidance_build)

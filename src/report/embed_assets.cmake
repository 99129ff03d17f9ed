# Writes OUT, a header with the files CSS and JS as raw string literals (cmake -P).
file(READ ${CSS} _css)
file(READ ${JS} _js)
foreach(_text _css _js)
  string(FIND "${${_text}}" ")teller_asset\"" _at)
  if(NOT _at EQUAL -1)
    message(FATAL_ERROR "an asset holds the raw-string delimiter )teller_asset\"")
  endif()
endforeach()
file(WRITE ${OUT}.tmp
  "// Generated from src/report/assets by embed_assets.cmake; do not edit.\n"
  "#pragma once\n"
  "inline constexpr char kReportCss[] = R\"teller_asset(${_css})teller_asset\";\n"
  "inline constexpr char kReportJs[] = R\"teller_asset(${_js})teller_asset\";\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)

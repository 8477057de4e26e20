/* The dashboard's pages (src/cli/dashboard_assets/), included as bytes so that tfjob serves them
   with no file, CDN or build step at run time (cli/dashboard_server.cc; docs/dashboard.md). */
  .section .rodata
  .balign 16
#define TFJOB_ASSET(name, file) \
  .global name##_start; .global name##_end; name##_start: .incbin file; name##_end: .byte 0
TFJOB_ASSET(tfjob_dash_index, TFJOB_DASH_INDEX)
TFJOB_ASSET(tfjob_dash_js, TFJOB_DASH_JS)
TFJOB_ASSET(tfjob_dash_css, TFJOB_DASH_CSS)
TFJOB_ASSET(tfjob_dash_icon, TFJOB_DASH_ICON)
  .section .note.GNU-stack,"",%progbits

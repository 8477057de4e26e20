/* The pod zygote's executable (local/pod_zygote.h), built static by CMake and included as bytes. */
  .section .rodata
  .balign 16
  .global tfjob_pod_zygote_start
  .global tfjob_pod_zygote_end
tfjob_pod_zygote_start:
  .incbin TFJOB_POD_ZYGOTE_FILE
tfjob_pod_zygote_end:
  .section .note.GNU-stack,"",%progbits

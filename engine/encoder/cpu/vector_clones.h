// EMBER_VECTOR_CLONES: one clone of a function per x86-64 ISA level (v4: AVX-512, v3: AVX2 +
// FMA, baseline), chosen by an ifunc resolver when the library loads.
//
// Not under a sanitizer: the resolver runs while the dynamic loader relocates the program,
// before the sanitizer's runtime is up, and instrumented it crashes there (ember-worker
// built with -DEMBER_SANITIZE=thread died with SIGSEGV in AddLayerNorm's resolver before
// main). Sanitizer builds get the baseline code only.
#ifndef EMBER_ENGINE_ENCODER_CPU_VECTOR_CLONES_H_
#define EMBER_ENGINE_ENCODER_CPU_VECTOR_CLONES_H_

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_THREAD__) && \
    !defined(__SANITIZE_ADDRESS__)
#define EMBER_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define EMBER_VECTOR_CLONES
#endif

#endif  // EMBER_ENGINE_ENCODER_CPU_VECTOR_CLONES_H_

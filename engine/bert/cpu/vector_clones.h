// EMBER_VECTOR_CLONES: one clone of a function per x86-64 ISA level (v4: AVX-512, v3: AVX2 +
// FMA, baseline), chosen by an ifunc resolver when the library loads.
#ifndef EMBER_ENGINE_BERT_CPU_VECTOR_CLONES_H_
#define EMBER_ENGINE_BERT_CPU_VECTOR_CLONES_H_

#if defined(__x86_64__) && defined(__GNUC__)
#define EMBER_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define EMBER_VECTOR_CLONES
#endif

#endif  // EMBER_ENGINE_BERT_CPU_VECTOR_CLONES_H_

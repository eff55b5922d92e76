#pragma once
// A structure-aware libFuzzer mutator for checkpoints (safetensors files), shared by the
// checkpoint fuzzers. Byte mutations alone almost never get past the checksums that
// cover the data and the metadata, so the loader's validation of the metadata values
// (`weft.step`, `weft.format_version`, `weft.structural_hash`, a subgraph's hash) and of
// the key set (a missing, renamed or extra tensor) would go unexercised. Three times in four this
// mutator parses the input, changes what it holds, and writes it back with valid
// checksums (serialize_safetensors):
//
//   metadata   a value replaced (negative, huge, empty, hex, spaced, a byte-mutated
//              copy), a key dropped, a key added
//   tensors    one dropped, renamed (to a sibling's name, with a suffix, as an
//              optimizer slot), duplicated under a new name, converted to another dtype,
//              reshaped (flattened, a leading 1, one element short), or one element set
//              to NaN, an infinity, a huge value or -0
//
// and the fourth time (or when the input does not parse) it mutates bytes
// (LLVMFuzzerMutate), so damaged files are still covered. Every target using it defines
//
//   extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
//                                             unsigned int seed) {
//     return weft::fuzz::mutate_checkpoint(data, size, max_size, seed);
//   }

#include <cstddef>
#include <cstdint>

namespace weft::fuzz {

/// Mutates the checkpoint in data[0, size) in place (at most `max_size` bytes) and
/// returns its new size. Its own choices follow `seed`; LLVMFuzzerMutate's follow
/// libFuzzer's random state (which -seed fixes).
size_t mutate_checkpoint(uint8_t* data, size_t size, size_t max_size, unsigned int seed);

}  // namespace weft::fuzz

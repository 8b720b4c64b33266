/* CRC-32 (IEEE 802.3, reflected, the checksum of parrnn's .prnrnn files),
 * for tests that write or fix up model files by hand. */
#ifndef PRN_CRC32_H
#define PRN_CRC32_H
#include <stddef.h>
#include <stdint.h>
static uint32_t crc32_of(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    int k;
    for (i = 0; i < n; ++i) {
        c ^= p[i];
        for (k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}
#endif

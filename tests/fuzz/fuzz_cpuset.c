/* SPDX-License-Identifier: MIT */
/* libFuzzer harness: coro_cpuset_parse on raw bytes.  Oracle: a list that
 * parses formats back (coro_cpuset_format) to a list that parses to the
 * same set; a list that fails leaves the set empty; nothing crashes. */
#include <corokit.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *list = malloc(size + 1);
    coro_cpuset_t a, b;
    char text[8192];

    if (!list)
        return 0;
    memcpy(list, data, size);
    list[size] = 0;
    int rc = coro_cpuset_parse(&a, list);
    if (rc < 0) {
        if (rc != -EINVAL || coro_cpuset_count(&a) != 0)
            abort();        /* on error: -EINVAL and an empty set */
    } else {
        int n = coro_cpuset_format(&a, text, sizeof text);
        if (n < 0 || n >= (int)sizeof text)
            abort();
        if (coro_cpuset_parse(&b, text) != 0 || memcmp(&a, &b, sizeof a) != 0)
            abort();        /* format . parse is the identity on sets */
        if (coro_cpuset_count(&a) < 1)
            abort();        /* an empty list is an error */
    }
    free(list);
    return 0;
}
